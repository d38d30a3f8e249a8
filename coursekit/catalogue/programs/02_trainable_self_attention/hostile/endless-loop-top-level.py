# description: a cell that never finishes (interrupted at the cell timeout)
# source: written for this catalogue
# extra_cell: true

import time
while True:
    time.sleep(0.05)
