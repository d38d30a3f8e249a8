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

MEMORY_LIMIT = 6 * 1024**3  # address space of any one process of the submission (bytes): a
# single huge allocation fails at once with MemoryError, before the envelope's budget is reached
MAX_PROCESSES = 128  # processes and threads the sandbox may hold at once
CPU_SECONDS = 600  # CPU time of the kernel, all cells together
MAX_OPEN_FILES = 256  # descriptors one process of the submission may hold (a graded kernel holds about 60).
# A pipe keeps room a later write takes without a page more charged (`procfs.PIPE_ROOM`): the judge counts
# the pipes its processes hold open, but not those sent over a socket and held only in its queue, which
# Linux bounds by the sender's limit of open files, for all of its user's sockets together (3 MiB here; the
# 20,000 this machine allows held a whole score matrix, red-team round r54)
MAX_REPLY_BYTES = 64 * 1024**2  # the largest answer the judge reads from a kernel
MAX_NOTEBOOK_OUTPUT_BYTES = 16 * 1024**2  # what the notebook's cells print and display, together:
# more is dropped (it would sit in the grading process's memory, the autograded notebook and the feedback)
MAX_MESSAGE = 400  # characters of one case's message in the report, for each cause it names: a tie (one output
# that several known mistakes give, toolkit.checks.one_or_all) names up to 3 in full; at 400 in all most ties lost
# their second cause. SEVERAL_FIT opens a tie, and "; or " parts its causes
SEVERAL_FIT = "the output fits more than one known mistake: "

# --- the envelope of one submission -----------------------------------------------------------
# Everything a submission runs (its kernel, the kernel's children and threads) and everything it
# stores is counted together, by the kernel's own accounting: a memory, pids and cpu control group
# per kernel (`autograder/kernel/envelope.py`), and sized tmpfs mounts for every folder it may
# write (`autograder/kernel/zygote.py`). Files in RAM count against the memory budget too.
SUBMISSION_MEMORY = 4 * 1024**3  # resident memory and tmpfs files of all its processes (bytes)
SUBMISSION_CPUS = 1  # cores its processes may use together, at most
# A lending kernel (`autograder/kernel/lending.py`) runs the submission's cells a second time, in
# the same envelope: it is started only while the submission holds less than this, and kept only
# while it holds less than twice this, so it never pushes a submission over its budget (beyond,
# a lending step is judged in the notebook's own kernel, which is then replaced).
LENDING_ROOM = SUBMISSION_MEMORY // 4
TMP_BYTES = 512 * 1024**2  # its private /tmp
SHM_BYTES = 256 * 1024**2  # its private /dev/shm
SCRATCH_BYTES = 512 * 1024**2  # what it changes of the submission folder (`zygote._working_copy`'s upper layer)
OUTBOX_BYTES = 16 * 1024**2  # the folder of its ZeroMQ sockets and its own log
TMPFS_INODES = 20_000  # files and folders in each of those mounts
# Entries of a submission folder copied into its sandbox: files, folders and links, each a file of its
# kernel's working tmpfs, which holds TMPFS_INODES (r50: 21,000 empty folders, not counted, failed the
# kernel's own copy, and the notebook was not graded)
MAX_COPIED_ENTRIES = 2000
MAX_COPIED_BYTES = 200 * 1024**2  # bytes of those files, together
JOBS_BYTES = 3 * MAX_COPIED_BYTES + 16 * 1024**2  # a warm parent's job folders: two kernels' and one going
assert TMP_BYTES + SHM_BYTES + SCRATCH_BYTES + OUTBOX_BYTES < SUBMISSION_MEMORY
assert MAX_COPIED_ENTRIES < TMPFS_INODES

# --- what the judge reads from a kernel -------------------------------------------------------
# A reply is hostile input: its size, its nesting and the time to read it are all bounded, and
# the case's deadline holds while it is read (`autograder/kernel/channel.py`).
MAX_KERNEL_MESSAGE_BYTES = 64 * 1024**2  # one ZeroMQ message from a kernel (an output, a reply)
# Whole messages of one of a kernel's ZeroMQ sockets that the judge's ZeroMQ reads ahead of the judge (RCVHWM; 1,000
# by default): r66's kernel sent 40 of 50 MiB while the judge waited on a step and took it to 1.9 GB, and 1,000 of
# 64 MiB would have taken the machine. Past it ZeroMQ reads no more, the relay stops, and what waits is the kernel's.
# 4 lost an honest cell's output after a kernel restart (r66); 16 is more than any honest burst.
KERNEL_MESSAGES_QUEUED = 16
MAX_REPLY_CONTAINERS = 20_000  # JSON lists and objects in one reply (each costs the judge memory)
MAX_REPLY_DEPTH = 64  # how deeply they may nest
WARM_PARENT_START = 120  # seconds for a warm parent to import numpy, torch and ipykernel
SANDBOX_CHECK = 20  # seconds for bubblewrap to show, once per process, that it can sandbox here

# What a submission may hand in (coursekit/intake.py): a larger file is left out and reported.
MAX_SUBMITTED_FILE_BYTES = 100 * 1000**2  # nbgrader's own default (CourseDirectory.max_file_size)
MAX_SUBMITTED_DEPTH = 32  # folders nested in a submission folder; a deeper one is left out whole
MAX_SUBMITTED_PATH_BYTES = 1024  # a folder's path inside the submission folder, likewise
# Files and folders a submission folder may hold; those past them are left out. nbgrader reads a folder in
# time that grows with the square of its entries (`nbgrader.utils.find_all_files` lists an entry's whole
# folder again for each entry, to match its ignore patterns): 1,000 take 3 s, 21,000 empty files held
# `nbgrader autograde`, and `coursekit autograde`'s driver with the whole class, more than 10 minutes (r50)
MAX_SUBMITTED_ENTRIES = 1000
# Bytes of a submission folder's files together, the assignment's notebooks aside; those past them, in the order
# they are walked, are left out. Each file may hold MAX_SUBMITTED_FILE_BYTES and a folder MAX_SUBMITTED_ENTRIES of
# them: 100 GB that collect, and autograde again, would copy onto the course's disk. The release's own files,
# and an honest student's plots and notes, take a few MB.
MAX_SUBMITTED_BYTES = 300 * 1000**2
# Cells of a notebook handed in that are graded; those past them are left out. nbgrader's preprocessors and
# nbformat's validation cost the driver about 0.8 ms a cell: 300,000 empty Markdown cells (28 MB) held
# `coursekit autograde`'s driver, and the whole class with it, 4 minutes (r50). The release holds 52
MAX_NOTEBOOK_CELLS = 1000
# Outputs a notebook handed in may hold before intake clears them (nbgrader clears them all anyway, but
# validates each first, about 0.1 ms: 300,000 held the class's driver 29 s, r50)
MAX_HANDED_IN_OUTPUTS = 10_000
MAX_SHIPPED_SUBMISSION_BYTES = 512 * 1024**2  # a submission folder sent as bytes to a remote Dask worker
# What one archive handed to `nbgrader zip_collect` may unpack to, the archives inside it included
# (coursekit/archives.py): a larger one is left out whole, before anything is written.
MAX_UNPACKED_BYTES = 512 * 1024**2
MAX_UNPACKED_MEMBERS = 10_000
MAX_EXTENDED_HEADERS = 8  # a tar's long-name and pax headers before one member (4 say all there is)
