# Looks for what an earlier kernel left (leave_traces.py): every file named "trace", anywhere
# (not /proc).
import json
import os

found = []
for folder, dirs, files in os.walk("/"):
    if folder == "/proc":
        dirs[:] = []
    elif "trace" in files:
        found.append(os.path.join(folder, "trace"))
print("FOUND", json.dumps(sorted(found)))
