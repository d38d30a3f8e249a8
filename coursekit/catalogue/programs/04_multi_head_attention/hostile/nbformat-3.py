# description: a notebook whose nbformat says 3
# source: written for this catalogue
# flagged: true
# flag: autograde failed
# graded: false
# transform: nbformat 3
