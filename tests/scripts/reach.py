"""Run as one account: what it can reach of each target given, as one JSON object on stdout.

A target is a path (a folder is listed, a file read) or `import:NAME` (a module imported).
Each answer is "read", or "denied: " and why (the OS's words, or the import error's name).
"""

import importlib
import json
import os
import sys


def reach(target):
    if target.startswith("import:"):
        try:
            importlib.import_module(target.removeprefix("import:"))
        except ImportError as error:
            return f"denied: {type(error).__name__}"
        return "read"
    try:
        if os.path.isdir(target):
            os.listdir(target)
        else:
            with open(target, "rb") as handle:
                handle.read(1)
    except OSError as error:
        return f"denied: {error.strerror}"
    return "read"


print(json.dumps({target: reach(target) for target in sys.argv[1:]}))
