"""05's memory cases count what a call writes, memory held before it included (issue 18, item 4).

The memory cases read the envelope's peak during the call, above what the submission held just
before it. A full-matrix online_softmax_attention that wrote its (n, n) scores into a buffer made
and touched by an earlier cell raised that peak by nothing, and passed both memory cases: it kept
4.076 of 5 points, where the same computation into fresh arrays keeps 0.692. Such a call now runs
in a process of its own, forked from a fork of the kernel (`agent.apart`,
`seam.measure_peak`), whose every write to a page it shares is a copy of its own, counted in the
envelope. Its window opens once it is forked, and its inputs are written into it from outside
after that: nothing is left out as what forking costs (r46 padded a fork measured doing nothing,
and r54 passed a whole float16 score matrix that way), and no code has the inputs before the
window. What the call's process alone maps as its window opens, and the files in RAM and shared
mappings of the submission, count whole, and on cgroup v1 the peak is read in a group that holds
the processes for the call only, so memory given back as the call begins makes no room (red-team
round r46). Memory earlier cells freed, which glibc keeps resident for the next allocations, hid a
matrix built of small rows the same way (checked in the seventeenth session: measured in the
kernel, one of the two memory cases passed). Where the peak is per process (a grader that is not
root, without control groups), calls are measured in the kernel, and this still gets through.
Red-team round r48 computed the matrix outside the call's process, in a helper process or a thread
of the kernel, on memory touched before the call: the call now runs alone (`KernelChannel.apart`).
It also kept the matrix in a buffer of the stopped kernel the call does not map (MADV_DONTFORK),
written in place with process_vm_writev or through /proc/<pid>/mem, which charges no page: both are
now refused in a kernel (`zygote.py`), and what a call writes into memory a held process alone maps
still counts, page by page (`procfs.own_pages`). A matrix kept in a file handed in beside the
notebook is the hostile catalogue's `online-handed-in-buffer` (`zygote._working_copy`).
"""

import errno
from pathlib import Path

import pytest
from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, printed, program

from autograder.judge import judge_notebook
from coursekit.catalogue import PROGRAMS, load_program


def catalogued(kind, entry):
    """The online_softmax_attention cell of 05's catalogue entry (kind: hostile or mistake), the very cell real
    nbgrader and the class command grade too, so these tests and the grading matrix cannot drift apart."""
    return load_program(PROGRAMS / "05_efficient_attention" / kind / f"{entry}.py")[1].replace["online_softmax_attention"]


POOLED = catalogued("hostile", "online-pooled-full-matrix")
HELPER = catalogued("hostile", "online-helper-process")
IN_A_STOPPED_KERNEL = catalogued("hostile", "online-stopped-kernel-buffer")

REFERENCE = Path(__file__).parent.parent / "solutions" / "efficient_attention.py"


def memory_cases(judged):
    """online_softmax_attention's memory cases as {name: passed}, and whether every other case of it passed."""
    results = judged.steps["online_softmax_attention"].results
    return ({r.case.name: r.passed for r in results if "memory" in r.case.name},
            all(r.passed for r in results if "memory" not in r.case.name))

# Each: cells after the catalogue entry's (POOLED), to make room for its whole score matrix.
ROOM_MADE = {
    "a buffer held before": [],
    # red-team round r46: each kept 0.815 of 1, both memory cases passed, as the same code without the
    # cell after it keeps 0.138
    "a shared buffer held before": ["shared_pool"],
    "a fork measured padded": ["padded_fork"],  # (a fork is no longer measured alone: this shows it stays so)
    # (one memory case passed: the file is given back once)
    "a file given back": ["file_given_back"],
    "memory freed at the fork": ["freed_at_fork"],  # (one passed, before the call group of Envelope.reset_peak)
    # red-team round r48: the kernel unmapped its copy of the buffer as it forked the call's child
    "a buffer given up to the call's child": ["pool_given_to_child"],
}


@needs_sandbox
@needs_groups
@pytest.mark.parametrize("room", list(ROOM_MADE.values()), ids=list(ROOM_MADE))
def test_a_score_matrix_written_into_room_made_before_the_call_still_counts(tmp_path, room):
    """Both memory cases fail, as they do for the same matrix in fresh arrays."""
    cells = ["import numpy as np", POOLED, *(program(name) for name in room),
             ("grade", "online_softmax_attention")]
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", cells))
    memory, _ = memory_cases(judged)
    assert len(memory) == 2 and not any(memory.values()), memory


@needs_sandbox
@needs_groups
def test_a_score_matrix_written_into_memory_earlier_cells_freed_still_counts(tmp_path):
    """Memory freed on the heap stays resident (glibc keeps it for the next allocations), so rows of
    the matrix written there did not raise the kernel's peak: measured in the kernel, the second memory
    case, reusing the first call's freed rows, passed. In a forked child each reused page is a copy."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("full_matrix_on_freed_heap"),
                                                             ("grade", "online_softmax_attention")]))
    memory, _ = memory_cases(judged)
    assert len(memory) == 2 and not any(memory.values()), memory


@needs_sandbox
@needs_groups
def test_files_handed_in_beside_the_notebook_are_not_the_calls(tmp_path):
    """What was handed in is read where the judge put it, below the kernel's overlay (`zygote._working_copy`):
    when a kernel's copy of the submission folder was in RAM (a tmpfs) before any cell ran, counted as memory a
    call may write into, a 54 MB file handed in beside the notebook failed both memory cases with the
    reference's code (red-team round r46, as its fix first stood)."""
    (tmp_path / "data.bin").write_bytes(bytes(54 * 1024**2))
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [REFERENCE.read_text(), ("grade", "online_softmax_attention")]))
    memory, _ = memory_cases(judged)
    assert len(memory) == 2 and all(memory.values()), memory



HANDED_IN_BUFFER = catalogued("hostile", "online-handed-in-buffer")


@needs_sandbox
@needs_groups
def test_a_score_matrix_written_into_a_file_handed_in_and_put_back_still_counts(tmp_path):
    """The catalogue's online-handed-in-buffer, with its file copied by the kernel before any case and put back as
    it was handed in before each call ends: when the pages of the kernels' copies that still held what was handed in
    were left out of what a call holds (and compared with the originals after it), this passed both memory cases.
    A file the kernel changes is its own now, in RAM, and counts whole."""
    with open(tmp_path / "scores.bin", "wb") as handle:
        handle.truncate(3072 * 3072 * 4)  # as the catalogue entry's `hands_in` makes it: zeros, sparse
    cells = [HANDED_IN_BUFFER,
             program("handed_in_put_back"), ("grade", "online_softmax_attention")]
    memory, others_passed = memory_cases(judge_notebook(notebook(tmp_path / "nb.ipynb", cells)))
    assert len(memory) == 2 and not any(memory.values()), memory
    assert others_passed

# Red-team round r48: the call's forked child hands its inputs to code that runs outside it, on memory held
# before the call, which writing charges nothing more.
OUTSIDE_THE_CALL = {"a helper process": HELPER,
                    "a thread of the kernel": program("scores_in_place") + program("helper_thread_pool")}


@needs_sandbox
@needs_groups
@pytest.mark.parametrize("helper", list(OUTSIDE_THE_CALL.values()), ids=list(OUTSIDE_THE_CALL))
def test_a_score_matrix_computed_outside_the_calls_child_still_counts(tmp_path, helper):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", ["import numpy as np", helper,
                                                             ("grade", "online_softmax_attention")]))
    memory, _ = memory_cases(judged)
    assert len(memory) == 2 and not any(memory.values()), memory


@needs_sandbox
@needs_groups
@pytest.mark.parametrize("way", ["process_vm", "proc_mem"])
def test_a_score_matrix_kept_in_a_stopped_process_still_counts(tmp_path, way):
    """Red-team round r48 (tests/open_remote_memory.py until now): both memory cases passed."""
    cell = IN_A_STOPPED_KERNEL
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [f"REMOTE_WAY = {way!r}", cell,
                                                             ("grade", "online_softmax_attention")]))
    memory, others_passed = memory_cases(judged)
    assert len(memory) == 2 and not any(memory.values()), memory
    assert others_passed  # its values are right: only memory fails


@needs_sandbox
@needs_groups
@pytest.mark.parametrize("hidden_in", ["io_uring", "memfd_secret"])
def test_a_score_matrix_kept_in_memory_the_kernel_maps_for_itself_still_counts(tmp_path, hidden_in):
    """Red-team round r51: a whole matrix of float16 scores, 8 MiB of it in memory an earlier cell made that
    is neither a file in RAM nor a process's own (io_uring's rings, a secret memory file), passed both memory
    cases (1.0 of 1; 0.323 with every row in fresh memory). No kernel may make such memory
    (`zygote.DENIED_CALLS`)."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [f"HIDDEN_IN = {hidden_in!r}", program("rows_in_kernel_memory"),
                                                             ("grade", "online_softmax_attention")]))
    memory, others_passed = memory_cases(judged)
    assert len(memory) == 2 and not any(memory.values()), memory
    assert others_passed  # its values are right: only memory fails
    assert "HIDDEN 0" in printed(judged, 1), printed(judged, 1)


# Red-team round r54: who holds the pipes (HOLDERS): the kernel, or forked processes, a share each.
PIPE_HOLDERS = {"the kernel": (0, ""), "forked holders": (20, "process"),
                "threads with descriptors of their own": (20, "thread")}


@needs_sandbox
@needs_groups
@pytest.mark.parametrize(("holders", "holder"), list(PIPE_HOLDERS.values()), ids=list(PIPE_HOLDERS))
def test_a_score_matrix_kept_in_pipes_written_through_before_still_counts(tmp_path, holders, holder):
    """A pipe keeps the pages its last emptying freed for its next write: a whole float16 score matrix, a row
    in each of 3,200 pipes an earlier cell wrote through, passed both memory cases (1.0 of 1). The pipes the
    submission holds count as room a call may write (`procfs.PIPE_ROOM`), and a process may hold no more than
    `limits.MAX_OPEN_FILES` descriptors (which also bounds the pipes held only in a socket's queue). Every
    thread's descriptors are read: one started without CLONE_FILES holds a table /proc/PID/fd does not show."""
    cells = [f"PIPES = 3200\nHOLDERS = {holders}\nHOLDER = {holder!r}", program("rows_in_pipes"), ("grade", "online_softmax_attention")]
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", cells))
    memory, others_passed = memory_cases(judged)
    assert len(memory) == 2 and not any(memory.values()), memory
    if holders:  # every pipe made
        assert "PIPED 26214400" in printed(judged, 1), printed(judged, 1)
    else:  # the kernel alone is refused the descriptors: its scores are in fresh memory
        assert "PIPES REFUSED" in printed(judged, 1), printed(judged, 1)
    assert others_passed


# Red-team round r58: honest torch styles in float64 that failed a memory case, and why
HONEST_FLOAT64 = {
    # the judge wrote the call's float32 inputs into its process inside its window, 1.2 MiB charged to the call: 18.5
    # MiB. They are written just before it opens now, and left out (`KernelChannel._open_window`)
    "the running maximum": "online_torch_float64",
    # glibc kept its freed blocks of scores on the heap for the next ones (`sandbox.MMAP_THRESHOLD`): 19.5 MiB
    "the log-sum-exp": "online_torch_float64_lse",
}


@needs_sandbox
@needs_groups
@pytest.mark.parametrize("style", list(HONEST_FLOAT64.values()), ids=list(HONEST_FLOAT64))
def test_an_honest_float64_torch_style_passes_the_memory_cases(tmp_path, style):
    cells = ["import torch", program(style), ("grade", "online_softmax_attention")]
    results = judge_notebook(notebook(tmp_path / "nb.ipynb", cells)).steps["online_softmax_attention"].results
    assert all(r.passed for r in results), [(r.case.name, r.message) for r in results if not r.passed]


@needs_sandbox
@needs_groups
def test_a_score_matrix_kept_beside_the_inputs_on_huge_pages_still_counts(tmp_path):
    """The inputs' pages are left out; the kernel's child made their arrays across the border of two huge pages it
    asked for and never touched, and the judge's first write faulted both in whole (4 MiB an input, charged before the
    window): 60% of a whole float16 score matrix fitted in the rest, and it passed both memory cases at 11.2 MiB.
    What writing the inputs adds beyond their own pages counts (22.0 MiB). (Nothing to show where THP is "never".)"""
    cells = [program("inputs_on_huge_pages"), ("grade", "online_softmax_attention")]
    memory, others_passed = memory_cases(judge_notebook(notebook(tmp_path / "nb.ipynb", cells)))
    assert len(memory) == 2 and not any(memory.values()), memory
    assert others_passed  # its values are right: only memory fails


@needs_sandbox
@needs_groups
def test_a_score_matrix_queued_on_netlink_sockets_still_counts(tmp_path):
    """Red-team round r58 (the catalogue's online-netlink-queued-matrix): a socket's queue is kernel memory that no v1 memory group is charged for but a Unix
    socket's. The call queued its whole float32 score matrix (36 MiB, twice the limit), a row a message, on netlink
    sockets of its own, read the rows back one at a time, and passed both memory cases (5 of 5). A kernel may make
    no socket but a Unix one, or one of the network's, which has no route (`zygote.ALLOWED_ARGUMENTS`)."""
    cells = [catalogued("hostile", "online-netlink-queued-matrix"), ("grade", "online_softmax_attention")]
    memory, others_passed = memory_cases(judge_notebook(notebook(tmp_path / "nb.ipynb", cells)))
    assert len(memory) == 2 and not any(memory.values()), memory
    assert others_passed  # its values are right: only memory fails


# Red-team round r54 (left by r51): calls that make memory no v1 memory group counts (huge pages asked for by
# name), share pages between kernels (KSM), or that no kernel needs (userfaultfd, bpf). Refused by the filter;
# this host has no huge pages and KSM off, so the attacks themselves cannot be shown here.
REFUSED = ("mmap_hugetlb", "memfd_hugetlb", "shmget_hugetlb", "madvise_mergeable", "prctl_memory_merge", "userfaultfd",
           "bpf")
ALLOWED = ("mmap", "memfd", "shmget", "madvise", "prctl")  # the same calls, asking for ordinary memory
# Red-team round r58: sockets whose queues no v1 memory group counts (refused with EINVAL, as a family the machine
# lacks, which ZeroMQ survives), a Unix one's (counted), and the network's, which reach nothing to queue for
SOCKETS = {"socket_netlink": errno.EINVAL, "socket_unix": 0, "socketpair_unix": 0,
           "udp_loopback": errno.ENETUNREACH, "tcp_loopback": errno.ENETUNREACH}


@needs_sandbox
def test_calls_that_make_memory_no_group_counts_are_refused_in_a_kernel(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("memory_nobody_counts")]))
    answers = dict(line.split() for line in printed(judged, 0).splitlines())
    assert {what: int(answers[what]) for what in REFUSED} == dict.fromkeys(REFUSED, errno.EPERM), answers
    assert {what: int(answers[what]) for what in ALLOWED} == dict.fromkeys(ALLOWED, 0), answers
    assert {what: int(answers[what]) for what in SOCKETS} == SOCKETS, answers


@needs_sandbox
def test_no_process_of_a_kernel_writes_another_s_memory(tmp_path):
    """A call's process wrote a score matrix into the own pages of a stopped process (r48), where no page more is
    charged; had it put back what was there before it ended (zeros, say), no comparison of those pages could
    tell. Writing another process's memory is refused in a kernel: process_vm_writev and ptrace by the filter,
    /proc/PID/mem by /proc being read-only (`zygote.py`). Reading stays allowed."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("write_another_process")]))
    answers = {what: int(result) for what, result in (line.split() for line in printed(judged, 0).splitlines())}
    assert answers == {"process_vm_writev": errno.EPERM, "process_vm_readv": 0, "ptrace": errno.EPERM,
                       "proc_mem": errno.EROFS}, answers


@needs_sandbox
@needs_groups
def test_a_whole_float16_score_matrix_fails_the_memory_cases_with_a_padded_fork(tmp_path):
    """Red-team round r54 (until now `tests/float16_matrix_padded_fork.py`, run by hand, failing): 05's limit is half
    the float32 matrix, exactly a whole float16 one, whose values pass every check. What forking cost doing nothing
    was measured in the kernel and left out up to an allowance (12 MiB); with the first fork of each pair padded,
    the whole float16 matrix passed both memory cases (where it failed both alone). Nothing is left out now."""
    cells = [program("full_matrix_float16"), program("padded_fork"), ("grade", "online_softmax_attention")]
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", cells))
    memory, others_passed = memory_cases(judged)
    assert others_passed
    assert len(memory) == 2 and not any(memory.values()), memory
    # Less than a float32 matrix, so the message names what half the bytes an entry is: a narrower type
    messages = [r.message for r in judged.steps["online_softmax_attention"].results if "memory" in r.case.name]
    assert all("narrower type" in m for m in messages), messages


@needs_sandbox
@needs_groups
def test_a_call_answered_before_its_window_opens_is_refused(tmp_path):
    """The call's process stops itself as it is forked, and its window opens only then: a kernel whose child makes the
    call itself, without forking or stopping, answers before any window opened, unmeasured. Such an answer is refused,
    and the case fails, whatever the call held."""
    cells = ["import numpy as np", catalogued("mistake", "online-full-matrix"), program("call_made_unstopped"),
             ("grade", "online_softmax_attention")]
    results = judge_notebook(notebook(tmp_path / "nb.ipynb", cells)).steps["online_softmax_attention"].results
    memory = {r.case.name: r for r in results if "memory" in r.case.name}
    assert len(memory) == 2 and not any(r.passed for r in memory.values()), memory
    assert all("answered before it was let go" in r.message for r in memory.values()), [r.message for r in memory.values()]


@needs_sandbox
@needs_groups
def test_a_memory_case_leaves_the_kernel_no_child(tmp_path):
    """The call's process is ended after its parent, the kernel's child: left to the kernel (PID 1 of its namespace) as
    a zombie, each memory case left one, and the kernel then took 2.5 s to shut down (jupyter_client's SIGTERM after
    half its wait): 05's autograde was 16% slower. The kernel's child reaps it first now (`KernelChannel.apart`)."""
    probe = "import glob\nprint('CHILDREN', sum(len(open(f).read().split()) for f in glob.glob('/proc/self/task/*/children')))"
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", ["import numpy as np", REFERENCE.read_text(),
                                                             ("grade", "online_softmax_attention"), probe]))
    assert all(r.passed for r in judged.steps["online_softmax_attention"].results)
    assert "CHILDREN 0" in printed(judged, 3), printed(judged, 3)


# Red-team round r59: the call's process, alone let go in its window, lets go or ends a process the judge held still.
HELD_STILL = {
    # a helper an earlier cell started, sent SIGCONT, computes the matrix on pages it touched before and puts them
    # back as they were before it answers, which the judge's digests of its pages cannot tell
    "a held helper let go": catalogued("hostile", "online-helper-let-go"),
    # the kernel's child touched a buffer just before it forked the call's process, and the call kills it: the pages
    # the two shared, charged before the window, are the call's alone then, written in place
    "the kernel's child ended": program("scores_in_place") + program("parent_killed"),
}


@needs_sandbox
@needs_groups
@pytest.mark.parametrize("code", list(HELD_STILL.values()), ids=list(HELD_STILL))
def test_a_call_that_lets_go_or_ends_a_held_process_fails_the_memory_cases(tmp_path, code):
    """Both passed both memory cases with a whole float32 score matrix (red-team round r59). A held process that ran
    or ended in the call's window fails the call (`still.disturbed`)."""
    cells = ["import numpy as np", code, ("grade", "online_softmax_attention")]
    results = judge_notebook(notebook(tmp_path / "nb.ipynb", cells)).steps["online_softmax_attention"].results
    memory = {r.case.name: r for r in results if "memory" in r.case.name}
    assert len(memory) == 2 and not any(r.passed for r in memory.values()), memory
    assert all("held still" in r.message for r in memory.values()), [r.message for r in memory.values()]
    assert all(r.passed for r in results if "memory" not in r.case.name)


@needs_sandbox
@needs_groups
def test_a_whole_causal_mask_fails_the_causal_memory_case_beside_a_lean_loop(tmp_path):
    """A whole (n_q, n_k) mask of True/False is 9 MiB at 3072 tokens: beside a lean torch loop it held 14.5 MiB, under
    the limit, and kept full marks. Measured again on half the tokens, the causal call's memory grows as their square
    (`peak_memory.grows_as_the_square`); the plain call, which makes no mask, passes."""
    cells = ["import torch", program("online_whole_causal_mask"), ("grade", "online_softmax_attention")]
    results = judge_notebook(notebook(tmp_path / "nb.ipynb", cells)).steps["online_softmax_attention"].results
    failed = {r.case.name: r.message for r in results if not r.passed}
    assert list(failed) == ["test_causal_memory_far_below_the_score_matrix"], failed
    assert "more than twice the memory for twice the tokens" in failed["test_causal_memory_far_below_the_score_matrix"]
