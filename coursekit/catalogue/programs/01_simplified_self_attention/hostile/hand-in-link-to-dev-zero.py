# description: a symbolic link to /dev/zero handed in beside the notebook: a grader that follows links
#   copies it until the disk is full; intake leaves it out and says so
# source: issue 18 (files handed in are followed), as the catalogue can hand in files
# hands_in: data.bin link /dev/zero
# flagged: true
# flag: data.bin (a symbolic link, not followed)
