# description: four sparse files of 99 MB each handed in beside the notebook, each under the 100 MB a file
#   may hold: a thousand such files were 100 GB that collect, and autograde again, copied onto the course's
#   disk; intake takes in the files of a submission up to 300 MB together and leaves out the rest, saying so
# source: issue 18 (oversized files are reported the same way), a session's own finding
# hands_in: part-1.bin bytes 99000000; part-2.bin bytes 99000000; part-3.bin bytes 99000000; part-4.bin bytes 99000000
# flagged: true
# flag: a submission's files may hold together
