# description: a notebook whose metadata holds a list nested 100000 deep: Python's JSON decoder
#   raises RecursionError (no ValueError), which once stopped `coursekit autograde` for the whole
#   class
# source: written for this catalogue
# flagged: true
# flag: autograde failed
# graded: false
# transform: nested_json 100000
