"""Every time and memory budget of grading, in one place.

The time ladder nests: a case runs inside its step, a step inside its graded cell, a cell inside
the whole submission. Each rung is shorter than the one above it, so the inner bound always
fires first and the outer one reports a clean failure instead of killing a run midway.
`nbgrader_config.py` reads these too.
"""

CASE_TIMEOUT = 10.0  # one case, unless its suite asks for another
ENDLESS_RETRY = 2.0  # each remaining case of a step, once one case of it timed out
STEP_BUDGET = 24.0  # all cases of one step together
CELL_TIMEOUT = 30  # any one cell of the notebook (nbgrader's Execute.timeout)
ENDLESS_CELL_RETRY = 10.0  # each later ordinary cell, once one cell of the notebook timed out
INTERRUPT_GRACE = 3.0  # how long an interrupted kernel gets to answer before it is restarted
SUBMISSION_TIMEOUT = 300  # one notebook, start to end

assert CASE_TIMEOUT < STEP_BUDGET < CELL_TIMEOUT < SUBMISSION_TIMEOUT
assert ENDLESS_CELL_RETRY < CELL_TIMEOUT

MEMORY_LIMIT = 6 * 1024**3  # address space of the student's kernel (bytes)
MAX_PROCESSES = 128  # processes and threads the sandbox may hold at once
CPU_SECONDS = 600  # CPU time of the kernel, all cells together
MAX_REPLY_BYTES = 64 * 1024**2  # the largest answer the judge reads from a kernel

# What a submission may hand in (coursekit/intake.py): a larger file is left out and reported.
MAX_SUBMITTED_FILE_BYTES = 100 * 1000**2  # nbgrader's own default (CourseDirectory.max_file_size)
MAX_SHIPPED_SUBMISSION_BYTES = 512 * 1024**2  # a submission folder sent as bytes to a remote Dask worker
