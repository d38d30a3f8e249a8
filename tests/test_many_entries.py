"""A submission that hands in more entries than grading can take in: every path grades it, in time.

Red-team round r50, with empty files and folders handed in beside the notebook:
- 21,000 empty folders. The judge's copy for the kernel counted only files (at most
  MAX_COPIED_ENTRIES of them), so it kept every folder, and a warm kernel's monitor copies that copy
  again into its working tmpfs, which holds TMPFS_INODES files and folders: the copy failed, the
  kernel died before it answered, and the notebook was not graded ('Kernel died before replying to
  kernel_info'): a student could choose that. Every entry counts now, folders and links as files do.
- 21,000 empty files (or folders). nbgrader matches its ignore patterns by listing an entry's whole
  folder again for each entry (`nbgrader.utils.find_all_files`, `is_ignored`), in time that grows with
  the square of their number: `coursekit autograde`'s driver spent more than 10 minutes in it before
  it handed any classmate's submission to a worker (1,000 entries take 3 s, 4,000 take 43), and
  collect did the same for every file. Intake takes in MAX_SUBMITTED_ENTRIES now (never leaving out
  the assignment's notebook), and collect matches the patterns against each name alone.
- a notebook of 300,000 empty Markdown cells (28 MB): nbgrader's preprocessors and nbformat's
  validation cost the driver about 0.8 ms a cell, and it held the whole class 4 minutes (100 MB would
  hold it a quarter of an hour). Intake leaves the cells past MAX_NOTEBOOK_CELLS out.
- a notebook of 300,000 outputs handed in: nbgrader clears them, but nbformat validates each first,
  and the driver spent 29 s on them. Intake clears them past MAX_HANDED_IN_OUTPUTS."""

import json
import os
import time

from nbgrader.utils import is_ignored
from test_judge import notebook, points

from autograder.judge import judge_notebook
from autograder.kernel.manager import copy_submission
from autograder.limits import (
    MAX_COPIED_ENTRIES,
    MAX_HANDED_IN_OUTPUTS,
    MAX_NOTEBOOK_CELLS,
    MAX_SUBMITTED_BYTES,
    MAX_SUBMITTED_ENTRIES,
    MAX_SUBMITTED_FILE_BYTES,
    TMPFS_INODES,
)
from autograder.reference import reference_source
from autograder.steps import STEPS
from coursekit import intake, submission_budget
from coursekit.course_dir import CourseDir
from coursekit.nbgrader_plugins import ignored

A = "01_simplified_self_attention"


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


def handed_in_beside(folder, count):
    """The assignment's notebook, after `count` empty files and a folder of files in name order."""
    folder.mkdir(parents=True)
    for index in range(count):
        (folder / f"0-{index:05d}").touch()
    (folder / "0-folder").mkdir()
    (folder / "0-folder" / "data.csv").touch()
    (folder / f"{A}.ipynb").write_text("{}")


def test_intake_takes_in_no_more_entries_than_it_may_and_never_leaves_the_notebook_out(tmp_path):
    root = tmp_path / "course"
    (root / "release" / A).mkdir(parents=True)
    (root / "release" / A / f"{A}.ipynb").write_text("{}")
    folder = root / "submitted" / "mallory" / A
    handed_in_beside(folder, MAX_SUBMITTED_ENTRIES + 500)
    started = time.monotonic()
    dropped = intake.quarantine(root, A, "mallory", folder)
    assert time.monotonic() - started < 20
    assert (folder / f"{A}.ipynb").exists()
    assert len(list(folder.rglob("*"))) == MAX_SUBMITTED_ENTRIES + 1
    assert not (folder / "0-folder").exists()  # left out whole, and moved away
    assert (CourseDir(root).intake(A, "mallory") / intake.QUARANTINE / "0-folder" / "data.csv").exists()
    # one line for the instructor and the student, not 501
    assert [d.reason for d in dropped] == [f"{intake.TOO_MANY}, nor the 500 after it"]
    assert intake.recorded(root, A, "mallory") == dropped


def test_collect_copies_no_more_entries_than_it_may_and_asks_the_patterns_of_those_only(tmp_path):
    handed_in_beside(tmp_path / "inbound", MAX_SUBMITTED_ENTRIES + 500)
    asked = []

    def keep(relative):
        asked.append(relative)
        return True

    dropped = intake.safe_copy(tmp_path / "inbound", tmp_path / "copy", keep=keep, notebooks={f"{A}.ipynb"})
    assert (tmp_path / "copy" / f"{A}.ipynb").exists()
    assert len(list((tmp_path / "copy").rglob("*"))) == MAX_SUBMITTED_ENTRIES + 1
    assert len(asked) <= MAX_SUBMITTED_ENTRIES + 1
    assert [d.reason for d in dropped] == [f"{intake.TOO_MANY}, nor the 500 after it"]


def test_collect_ignores_what_nbgrader_ignores_without_listing_the_folder(tmp_path):
    patterns = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]
    names = ["a.pyc", ".a.pyc", "__pycache__", "feedback", "feedback.txt", ".ipynb_checkpoints", f"{A}.ipynb", "b.py"]
    for name in names:
        (tmp_path / name).touch()
    assert {n for n in names if ignored(n, patterns)} == {n for n in names if is_ignored(str(tmp_path / n), patterns)}


def test_intake_leaves_out_the_cells_past_those_a_notebook_may_hold_and_keeps_the_notebook_as_handed_in(tmp_path):
    root = tmp_path / "course"
    folder = root / "submitted" / "mallory" / A
    folder.mkdir(parents=True)
    cells = [{"cell_type": "markdown", "id": f"c{index}", "metadata": {}, "source": ""}
             for index in range(MAX_NOTEBOOK_CELLS + 500)]
    handed = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / f"{A}.ipynb").write_text(json.dumps(handed))
    intake.take_in(root, A, "mallory", folder)
    assert json.loads((folder / f"{A}.ipynb").read_text())["cells"] == cells[:MAX_NOTEBOOK_CELLS]
    kept = CourseDir(root).intake(A, "mallory") / intake.QUARANTINE / f"{A}.ipynb"
    assert json.loads(kept.read_text()) == handed
    assert intake.flags(root, A, "mallory") == [
        f"{A}.ipynb replaced: its 500 cells after the first {MAX_NOTEBOOK_CELLS} were left out, not run "
        "(a graded one among them was put back as released)"]
    intake.take_in(root, A, "mallory", folder)  # a second autograde: nothing more to leave out
    assert json.loads(kept.read_text()) == handed


def test_intake_clears_the_outputs_of_a_notebook_that_holds_more_than_it_may(tmp_path):
    root = tmp_path / "course"
    folder = root / "submitted" / "mallory" / A
    folder.mkdir(parents=True)
    output = {"output_type": "stream", "name": "stdout", "text": "a"}
    cell = {"cell_type": "code", "id": "c", "metadata": {}, "source": "x = 1", "execution_count": 1,
            "outputs": [output] * (MAX_HANDED_IN_OUTPUTS + 1)}
    handed = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / f"{A}.ipynb").write_text(json.dumps(handed))
    intake.take_in(root, A, "mallory", folder)
    assert json.loads((folder / f"{A}.ipynb").read_text())["cells"] == [dict(cell, outputs=[])]
    assert intake.flags(root, A, "mallory") == [
        f"{A}.ipynb replaced: its {MAX_HANDED_IN_OUTPUTS + 1} outputs were cleared before nbgrader read them "
        "(autograde clears every output)"]


def sparse_files(folder, sizes):
    """Files of these sizes in name order, holding no disk (sparse), and the assignment's notebook."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, size in enumerate(sizes):
        with open(folder / f"data-{index}.bin", "wb") as handle:
            handle.truncate(size)
    (folder / f"{A}.ipynb").write_text("{}")


def test_intake_takes_in_no_more_bytes_than_a_submission_may_hold_and_never_leaves_the_notebook_out(tmp_path):
    """Each file may hold 100 MB and a folder 1000 of them: collect, and autograde again, would have copied 100 GB
    of one student's onto the course's disk. The files past MAX_SUBMITTED_BYTES together, in the order they are
    walked, are left out (said once), the assignment's notebook never."""
    root = tmp_path / "course"
    (root / "release" / A).mkdir(parents=True)
    (root / "release" / A / f"{A}.ipynb").write_text("{}")
    folder = root / "submitted" / "mallory" / A
    each = MAX_SUBMITTED_FILE_BYTES - 1
    sparse_files(folder, [each] * (MAX_SUBMITTED_BYTES // each + 2))
    dropped = intake.quarantine(root, A, "mallory", folder)
    kept = [p for p in folder.iterdir() if p.suffix == ".bin"]
    assert len(kept) == MAX_SUBMITTED_BYTES // each and (folder / f"{A}.ipynb").exists()
    assert sum(p.stat().st_size for p in kept) <= MAX_SUBMITTED_BYTES
    assert [d.reason for d in dropped] == [f"{intake.TOO_MUCH}, nor the 1 after it"]


def test_collect_copies_no_more_bytes_than_a_submission_may_hold_even_of_a_file_that_grows(tmp_path, monkeypatch):
    """Weighed as opened, and again as copied: a file that grows past what is left while it is copied is left out
    too (the student's folder is theirs to change meanwhile)."""
    monkeypatch.setattr(submission_budget, "MAX_SUBMITTED_BYTES", 3000)
    sparse_files(tmp_path / "inbound", [1000, 1000, 500, 400])
    grows = tmp_path / "inbound" / "data-2.bin"

    class Growing(submission_budget.Count):
        def weigh(self, relative, size):
            reason = super().weigh(relative, size)
            if relative.name == grows.name and size == 500:  # just opened: it grows before it is read
                with open(grows, "ab") as handle:
                    handle.write(b"x" * 1500)
            return reason

    monkeypatch.setattr(intake, "Count", Growing)
    dropped = intake.safe_copy(tmp_path / "inbound", tmp_path / "copy", notebooks={f"{A}.ipynb"})
    copied = sorted(p.name for p in (tmp_path / "copy").iterdir())
    assert copied == sorted(["data-0.bin", "data-1.bin", "data-3.bin", f"{A}.ipynb"]), copied
    assert [(d.path, d.reason) for d in dropped] == [("data-2.bin", f"grew while copied: {intake.TOO_MUCH}")]


def test_intake_shows_a_notebooks_lone_surrogates_as_their_escapes_and_keeps_its_pairs(tmp_path):
    """r63: JSON may spell half of a UTF-16 pair alone ("\\ud800"), which no UTF-8 file holds: a notebook handed
    in with one in a Markdown cell, or in a string of its code, read as valid and failed the write of the
    autograded notebook, and was not graded. A pair spelled so (an emoji, as `ensure_ascii` writes it) is kept."""
    root = tmp_path / "course"
    folder = root / "submitted" / "mallory" / A
    folder.mkdir(parents=True)
    cells = [{"cell_type": "markdown", "id": "m", "metadata": {}, "source": "half \ud800 a pair, a pair \U0001f600"},
             {"cell_type": "code", "id": "c", "metadata": {"\udfff": 1}, "source": "x = '\udc80'", "execution_count": 1,
              "outputs": []}]
    handed = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / f"{A}.ipynb").write_text(json.dumps(handed))  # ensure_ascii: the surrogates spelled as escapes
    intake.take_in(root, A, "mallory", folder)
    taken = (folder / f"{A}.ipynb").read_text(encoding="utf-8")
    taken.encode("utf-8")
    assert [cell["source"] for cell in json.loads(taken)["cells"]] == ["half \\ud800 a pair, a pair \U0001f600",
                                                                       "x = '\\udc80'"]
    assert list(json.loads(taken)["cells"][1]["metadata"]) == ["\\udfff"]
    assert intake.flags(root, A, "mallory") == [
        f"{A}.ipynb replaced: its lone surrogates (half of a UTF-16 pair, which no notebook file can hold) are shown "
        "as their escapes, \\ud800"]
