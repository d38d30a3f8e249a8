# description: a symbolic link to a file only root may read (/etc/shadow) handed in beside the notebook,
#   and a cell that prints it: copied as root by a grader that follows links, its text would reach the
#   autograded notebook and the student's feedback; intake leaves the link out and says so
# source: issue 18 (files handed in are followed), as the catalogue can hand in files
# hands_in: notes.txt link /etc/shadow
# extra_cell: true
# flagged: true
# flag: notes.txt (a symbolic link, not followed)

try:
    print(open("notes.txt").read())
except OSError as error:
    print("no notes:", type(error).__name__)
