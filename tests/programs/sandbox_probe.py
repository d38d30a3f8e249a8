# What a kernel can reach from its sandbox: the network, the grader's files, another student's
# work, root's home, system files (read and write), the course's packages; and a daemon that
# would outlive its kernel. The test puts what to try in targets.json beside the notebook.
import importlib
import json
import os
import socket
import time

targets = json.load(open("targets.json"))
found = {}
try:
    socket.create_connection(("127.0.0.1", targets["port"]), timeout=2)
    found["network"] = "connected"
except OSError as error:
    found["network"] = type(error).__name__
for path in targets["read"] + [os.path.expanduser("~root") + "/.bashrc", "/etc/shadow"]:
    try:
        open(path, "rb").read(1)
        found[path] = "read"
    except OSError as error:
        found[path] = type(error).__name__
for path in targets["write"] + ["/usr/planted"]:
    try:
        open(path, "w").write("x")
        found[path] = "written"
    except OSError as error:
        found[path] = type(error).__name__
for name in ["autograder", "solutions", "coursekit"]:
    try:
        importlib.import_module(name)
        found[name] = "imported"
    except ImportError as error:
        found[name] = type(error).__name__
if os.fork() == 0:  # a daemon that would outlive its kernel
    os.setsid()
    time.sleep(300)
    os._exit(0)
found["uid"] = os.getuid()
open("probe.json", "w").write(json.dumps(found))
print("PROBE", json.dumps(found))
