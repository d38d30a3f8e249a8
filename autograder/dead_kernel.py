"""A kernel that ends, or whose messages cannot be read, while an ordinary cell runs costs that cell
(and what later steps needed of it), never the notebook.

nbclient raises DeadKernelError when the kernel's process is gone (`os._exit`, a crash, the
envelope's memory budget), and jupyter_client a ValueError for a message not signed with the
session's key (a kernel that replaced its own). Either escaped `JudgedExecute.preprocess_cell`
for an ordinary cell, and both `nbgrader autograde` and `coursekit autograde` reported the whole
submission as not graded: a student could choose that, to be graded by hand or hand in again
(red-team round r27). Now the cell says what happened, a fresh kernel replays the cells before it,
and the notebook goes on.
"""

import nbformat
from nbclient.exceptions import DeadKernelError

ENDED = ("this cell ended the kernel ({why}); a fresh kernel ran the cells before it, and grading went on "
         "without what this cell defined")
WHY = {"gone": "its process exited or crashed",
       "memory": "the submission went over its memory budget, all its processes and files in RAM together",
       "unreadable": "it sent messages not signed with the session's key"}


def _unreadable(error):
    # jupyter_client's words for a message whose signature does not check (Session.deserialize)
    return isinstance(error, ValueError) and str(error).startswith(("Invalid Signature", "Duplicate Signature"))


def ran(execute, judge, cell, index):
    """`execute()` (the ordinary cell `index` through nbclient), or, if the kernel ended or sent what
    cannot be read while it ran, the cell with a line saying so, after `judge` replaced the kernel."""
    try:
        return execute()
    except Exception as error:  # noqa: BLE001 - only the two below are the kernel's; the rest propagate
        why = "unreadable" if _unreadable(error) else "gone" if isinstance(error, DeadKernelError) else None
        if why is None:
            raise
    envelope = judge._box.envelope
    if why == "gone" and envelope is not None and envelope.overruns().get("memory"):
        why = "memory"
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=ENDED.format(why=WHY[why]) + "\n")]
    judge.ended_cells.add(index)  # no replay runs it again, here or in a lending kernel
    # A fresh kernel, then a fresh client for nbclient: its old one may hold messages the ended
    # kernel sent (signed with a key of its own, they would fail the next cell as this one).
    judge.kc.stop_channels()
    judge._restart_and_replay(index)
    judge.start_new_kernel_client()
    return cell, judge.resources
