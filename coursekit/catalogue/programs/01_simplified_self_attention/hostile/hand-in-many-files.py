# description: a folder of 1,500 empty files handed in beside the notebook: each costs the class's driver
#   a copy and a check, and a million of them held every classmate; intake reads the first 1,000 entries
#   of a submission and leaves out the rest, saying so once
# source: red-team round r50, as the catalogue can hand in files
# hands_in: junk files 1500
# flagged: true
# flag: files and folders a submission may hold, not read
