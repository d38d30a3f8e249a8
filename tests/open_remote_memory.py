"""OPEN (red-team round r48): 05's memory cases miss a score matrix kept in another process's memory.

Not part of CI: `pytest tests/open_remote_memory.py` runs it (the file name keeps pytest from collecting
it otherwise). It asserts what must hold, so it FAILS today (README, "Not guaranteed").

The call runs alone in a forked child of the kernel, every other process of the submission stopped
(`KernelChannel.apart`), so every page it writes is new or a copy of its own, and counted. But a stopped
process's memory is still there, and the child, as the same user, may write it: with process_vm_writev,
or through /proc/<pid>/mem. A page that process alone maps (its kernel's buffer not forked, MADV_DONTFORK,
or any page of a helper it started with a program of its own) takes no copy, and was charged before the
call. tests/programs/remote_pool.py keeps its whole (n, n) score matrix in such a buffer of the kernel,
and passes both memory cases. What would close it: no process of a submission able to write another's
memory (seccomp can deny process_vm_writev and ptrace, but not the opening of /proc/<pid>/mem; a process
made not dumpable is dumpable again after an exec), or the judge counting what stopped processes map alone
as the call's (all the kernel holds, an honest one's 1.5 GB included), or a fresh process for each call
that holds nothing of the submission's but its code.
"""

from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, program

from autograder.judge import judge_notebook


@needs_sandbox
@needs_groups
def test_a_score_matrix_kept_in_a_stopped_process_still_counts(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("remote_pool"), ("grade", "online_softmax_attention")]))
    memory = {r.case.name: r.passed for r in judged.steps["online_softmax_attention"].results if "memory" in r.case.name}
    assert len(memory) == 2 and not any(memory.values()), memory
