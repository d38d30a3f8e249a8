# A cell that prints 40 MiB, a megabyte at a time (a flood of output that once went whole into
# the grading process's memory and the autograded notebook), then says it finished.
for _ in range(40):
    print("x" * 2**20)
print("FLOOD DONE")
