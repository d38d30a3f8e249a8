"""Autograde several students of one assignment in one process: nbgrader's start-up (several
seconds) is paid once instead of per student.

    python -m coursekit.autograde_worker COURSE_DIR ASSIGNMENT STUDENT [STUDENT ...]

Prints one JSON line per student as it finishes: {"student", "ok", "seconds", "problem"}.
`grading.autograde` runs these as its fast path and falls back to one isolated process per
student for anyone a worker did not report (a worker killed by its deadline, say).
"""

import json
import logging
import os
import sys
import time


def main(argv=None):
    course_dir, assignment, *students = argv if argv is not None else sys.argv[1:]
    os.chdir(course_dir)
    from nbgrader.apps import NbGraderAPI
    from nbgrader.apps.baseapp import NbGrader

    app = NbGrader()
    app.load_config_file()
    app.log.setLevel(logging.ERROR)
    api = NbGraderAPI(config=app.config)
    api.log.setLevel(logging.ERROR)
    for student in students:
        start = time.perf_counter()
        try:
            result = api.autograde(assignment, student, force=True, create=True)
            ok, problem = bool(result.get("success")), (result.get("error") or result.get("log") or "")
        except Exception as error:  # noqa: BLE001 - one student's failure must not stop the rest
            ok, problem = False, f"{type(error).__name__}: {error}"
        lines = [line for line in str(problem).splitlines() if line.strip()]
        print(json.dumps({"student": student, "ok": ok, "seconds": time.perf_counter() - start,
                          "problem": "" if ok else (lines[-1] if lines else "autograde failed")[:300]}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
