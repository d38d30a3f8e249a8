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

import asyncio

import nbformat
from jupyter_core.utils import ensure_event_loop, run_sync
from nbclient.exceptions import DeadKernelError

from autograder.errors import KernelStuck

ENDED = ("this cell ended the kernel ({why}); a fresh kernel ran the cells before it, and grading went on "
         "without what this cell defined")
WHY = {"gone": "its process exited or crashed",
       "memory": "the submission went over its memory budget, all its processes and files in RAM together",
       "unreadable": "it sent messages not signed with the session's key"}
REPLAY_ENDED = ("[when the grader ran this cell again in a fresh kernel (after a kernel was replaced), that "
                "kernel ended or stopped answering; the grader's later replays leave this cell out]")


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
    _stop_pollers()
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


def _stop_pollers():
    """Cancel what nbclient left polling for the cell whose kernel ended or cannot be read: it cancels
    its poller of the kernel's life only when a reply or a timeout comes. Left, the poller woke on a
    later cell's loop, failed its assertion that the client it polls still exists, and its error was
    logged whenever the task was collected ('Task exception was never retrieved', on the grader's
    stderr; inside a parse on 3.11, the notebook was not graded: `parse_guard.py`)."""
    loop = ensure_event_loop()
    pollers = [task for task in asyncio.all_tasks(loop)
               if task.get_coro().__qualname__.startswith("NotebookClient._async_poll")]
    for task in pollers:
        task.cancel()
    if pollers:
        loop.run_until_complete(asyncio.gather(*pollers, return_exceptions=True))


def restart_and_replay(judge, upto):
    """Replace the judge's kernel with a fresh one that has run the notebook's ordinary cells
    before `upto`, silently, each with the limit the notebook's own run gave it (a cell that hung
    there costs the shorter limit once one cell has timed out), leaving out those that ended a kernel.

    A cell can end only its replays, or leave them a kernel that never answers again (a session
    key of its own, an interrupt shrugged off): the student can tell a replay (a silent request)
    from the notebook's run. The judge then waited that cell's whole time for a kernel already
    gone, and nbclient's next client found no kernel that answered: the notebook was not graded,
    on both paths (red-team round r33). Now a death is seen within a second, the cell the replay
    lost its kernel in is left out of every replay from then on, and the replay starts again in a
    fresh kernel: each round leaves out one more cell, so this ends. Once the notebook's time is
    spent nothing is replayed (nothing runs in the kernel any more): the kernel is fresh and answers."""
    while True:
        judge._close_channel()
        try:
            run_sync(judge.km.restart_kernel)(now=True)
        except RuntimeError:  # the warm parent could not fork it
            if _free_envelope(judge):
                continue
            raise
        judge._inputs_sent = False
        judge._channel = channel = judge._new_channel()
        alive = run_sync(judge.km.is_alive)
        lost_in = None
        try:
            try:
                channel.wait_until_ready(judge.startup_timeout, alive=alive)
            except RuntimeError:
                if not alive() and _free_envelope(judge):
                    continue  # it could not start its own processes
                raise
            for index, source in judge._ordinary_cells(0, upto if judge._left() > 0 else 0):
                lost_in = index
                if not channel.wait(channel.send(source), judge._replay_timeout(index), alive=alive):
                    judge._cell_timed_out = True
            lost_in = None
        except (KernelStuck, RuntimeError):
            pass  # stuck or gone in the replay of cell `lost_in`, or (None) before it answered at all
        if lost_in is None:
            return
        judge.ended_cells.add(lost_in)
        judge.nb.cells[lost_in].outputs.append(nbformat.v4.new_output("stream", name="stdout", text=REPLAY_ENDED + "\n"))


def _free_envelope(judge):
    """Discard the lending kernel, if there is one, and wait until its processes are gone: True if
    there was one. It shares the envelope's process budget with the notebook's kernel, and the
    warm parent's user's (RLIMIT_NPROC) with the warm parent itself: one that holds every process
    left kept the notebook's kernel from being forked again (red-team round r33). Lending goes on
    the older way, or with a lending kernel started afresh."""
    lending = judge._lending
    if lending is None or lending.kernel is None:
        return False
    lending.discard()
    return True
