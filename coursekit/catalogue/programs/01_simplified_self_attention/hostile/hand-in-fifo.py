# description: a FIFO (named pipe) handed in beside the notebook: a grader that reads it waits for a
#   writer forever; intake leaves it out and says so
# source: issue 18 (files handed in are followed), as the catalogue can hand in files
# hands_in: pipe fifo
# flagged: true
# flag: pipe (a FIFO (named pipe), not read)
