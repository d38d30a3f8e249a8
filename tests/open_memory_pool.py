"""OPEN (issue 18, item 4): memory held before a call hides what the call uses from 05's memory cases.

Not part of CI: `pytest tests/open_memory_pool.py` runs it (the file name keeps pytest from
collecting it otherwise). It asserts what must hold, so it FAILS today (README, "Not guaranteed").

The memory cases read the envelope's peak during the call, above what the submission held just
before it. A full-matrix online_softmax_attention that writes its (n, n) scores into a buffer made
and touched by an earlier cell raises that peak by nothing, and passes both memory cases: it kept
4.076 of 5 points here, where the same computation into fresh arrays keeps 0.692. A measurement in
a forked child of the kernel would count every page the call writes (copy on write), the buffer's
too; it is not built (agent.py's handle, and a channel that says whether its peak counts children
that have exited: the per-process fallback of a grader that is not root does not).
"""

from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, program

from autograder.judge import judge_notebook


@needs_sandbox
@needs_groups
def test_a_score_matrix_written_into_a_buffer_held_before_the_call_still_counts(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("full_matrix_in_pool"),
                                                             ("grade", "online_softmax_attention")]))
    memory = {r.case.name: r.passed for r in judged.steps["online_softmax_attention"].results if "memory" in r.case.name}
    assert len(memory) == 2 and not any(memory.values()), memory
