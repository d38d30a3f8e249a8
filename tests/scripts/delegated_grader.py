"""A grading process started inside the v2 group delegated to it (tests/test_envelope_v2.py).

    python delegated_grader.py UNIFIED CONTROLLER make|reap

`make`: it moves into UNIFIED/delegated, as if started there, makes one kernel's envelope
handing CONTROLLER down, and prints (JSON) what it found, then removes the envelope.
`reap`: it starts in a leaf of its own there, as a process started by a grading process does,
removes what gone processes left, and prints the leaves that remain.
"""

import json
import os
import sys
from pathlib import Path

from autograder.kernel import envelope

envelope.ROOT, envelope.V2_CONTROLLERS = Path(sys.argv[1]), (sys.argv[2],)
delegated = envelope.ROOT / "delegated"


def own_group():
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    return next(line[3:] for line in lines if line.startswith("0::"))


if sys.argv[3] == "make":
    (delegated / "cgroup.procs").write_text(str(os.getpid()))
    box = envelope.Envelope("kernel-v2-test")
    group = box.paths[""]
    print(json.dumps({"version": box.version, "budgets": sorted(box.budgets), "group": str(group),
                      "enabled": (group / "cgroup.controllers").read_text().split(), "own": own_group()}))
    box.remove()
    print(json.dumps({"removed": not group.exists()}))
else:
    leaf = delegated / f"{envelope.LEAF_PREFIX}{os.getpid()}"
    leaf.mkdir()
    (leaf / "cgroup.procs").write_text(str(os.getpid()))
    envelope.remove_abandoned("kernel-v2-test")
    print(json.dumps({"own": own_group(), "leaves": sorted(p.name for p in delegated.glob(f"{envelope.LEAF_PREFIX}*"))}))
