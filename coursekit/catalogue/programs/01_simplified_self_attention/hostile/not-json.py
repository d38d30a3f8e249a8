# description: a file that is not valid JSON
# source: written for this catalogue
# flagged: true
# flag: autograde failed
# graded: false
# transform: not_json
