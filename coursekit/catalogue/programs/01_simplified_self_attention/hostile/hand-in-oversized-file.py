# description: a 150 MB file handed in beside the notebook (sparse: it costs the machine nothing until
#   read): over the 100 MB a file may hold (nbgrader's own max_file_size), so intake leaves it out and
#   says so, where nbgrader alone would copy it into every kernel's folder
# source: issue 18 (oversized files are reported the same way), as the catalogue can hand in files
# hands_in: big.bin bytes 150000000
# flagged: true
# flag: over the 100 MB a file may hold
