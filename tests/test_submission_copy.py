"""A kernel's copy of the submission folder (`manager.copy_submission`) fits where the kernel puts it.

Red-team round r50: a submission handed in 21,000 empty folders beside its notebook. The judge's copy
counted only files (at most MAX_COPIED_ENTRIES of them), so it kept every folder, and a warm kernel's
monitor copies that copy again into its working tmpfs, which holds TMPFS_INODES files and folders:
the copy failed, the kernel died before it answered, and the notebook was not graded ('Kernel died
before replying to kernel_info'), on both autograde paths: a student could choose that, to be graded
by hand or hand in again. Every entry counts now, folders and links as files do."""

import os

from test_judge import notebook, points

from autograder.judge import judge_notebook
from autograder.kernel.manager import copy_submission
from autograder.limits import MAX_COPIED_ENTRIES, TMPFS_INODES
from autograder.reference import reference_source
from autograder.steps import STEPS


def folders(where, count):
    for index in range(count):
        (where / f"folder-{index:05d}").mkdir()


def test_the_copy_holds_no_more_entries_than_it_may_folders_and_links_included(tmp_path):
    handed_in = tmp_path / "handed-in"
    handed_in.mkdir()
    folders(handed_in, MAX_COPIED_ENTRIES)
    os.symlink("folder-00000", handed_in / "link")
    (handed_in / "notes.txt").write_text("a file")
    copy_submission(handed_in, tmp_path / "copy")
    copied = list((tmp_path / "copy").rglob("*"))
    assert len(copied) == MAX_COPIED_ENTRIES
    assert MAX_COPIED_ENTRIES < TMPFS_INODES  # so a kernel's working tmpfs always holds the copy


def test_a_submission_of_more_folders_than_a_kernels_tmpfs_holds_is_graded(tmp_path):
    folders(tmp_path, TMPFS_INODES + 1000)
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [reference_source(["softmax"]), ("grade", "softmax")]))
    assert judged.problem == ""
    assert points(judged, "softmax") == STEPS["softmax"].points
