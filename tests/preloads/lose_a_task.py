"""A `dask worker --preload` for tests/test_class_grading.py: this worker's first grading task
writes which submission it holds (and its process) to $LOSE_A_TASK_HOLDING, then waits, as a task
does whose notebook runs long, until the test kills the worker.

The task function travels by reference (module and name), so the worker unpickles the wrapper
installed here in its place.
"""

import json
import os
import threading

from distributed import get_worker

from coursekit import grading_task

HOLDING = os.environ["LOSE_A_TASK_HOLDING"]


def judge_submission(payload):
    with open(HOLDING + ".tmp", "w") as handle:
        json.dump({"student": payload["student"], "pid": os.getpid(), "worker": get_worker().address}, handle)
    os.replace(HOLDING + ".tmp", HOLDING)
    threading.Event().wait(600)  # killed long before
    return grading_task.judge_before_the_test(payload)


if not hasattr(grading_task, "judge_before_the_test"):  # Dask may run a preload file twice
    grading_task.judge_before_the_test = grading_task.judge_submission
    grading_task.judge_submission = judge_submission
