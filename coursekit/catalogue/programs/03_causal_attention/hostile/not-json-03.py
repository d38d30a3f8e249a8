# description: a file that is not valid JSON, the one submission of 03 autograde cannot grade (the
#   class report's not-graded row is tested on this run)
# source: written for this catalogue
# flagged: true
# flag: autograde failed
# graded: false
# transform: not_json
