"""Red-team round r54, left open (run by hand: `pytest tests/float16_matrix_padded_fork.py`; it fails today).

05's memory limit is half the float32 score matrix at 3072 tokens: 18 MiB, exactly a float16 matrix, whose
values pass every check. What forking the kernel costs doing nothing is measured in the kernel
(`seam.measure_peak`) and left out up to FORK_COST_ALLOWANCE (12 MiB): a kernel that pads the first of each
pair of forks (`tests/programs/padded_fork.py`) has up to 12 MiB left out of the call's peak, and a whole
float16 matrix (`tests/programs/full_matrix_float16.py`) passes both memory cases (22 points of 22), where it
fails both alone. FORK_COST_ALLOWANCE's note ("a whole one never fits") holds for float32 only. Any slack over
what forking really costs lets it through (its working memory is under 1 MiB), so a smaller allowance does
not close it; a limit below one float16 matrix, or a fork cost not measured in the kernel, would.
"""

from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, program

from autograder.judge import judge_notebook


@needs_sandbox
@needs_groups
def test_a_whole_float16_matrix_with_a_padded_fork_fails_the_memory_cases(tmp_path):
    cells = [program("full_matrix_float16"), program("padded_fork"), ("grade", "online_softmax_attention")]
    results = judge_notebook(notebook(tmp_path / "nb.ipynb", cells)).steps["online_softmax_attention"].results
    memory = {r.case.name: r.passed for r in results if "memory" in r.case.name}
    assert all(r.passed for r in results if "memory" not in r.case.name)
    assert len(memory) == 2 and not any(memory.values()), memory
