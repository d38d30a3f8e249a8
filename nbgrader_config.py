"""nbgrader configuration of the self-attention course (nbgrader 0.9.6)."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))  # the course's own packages, for nbgrader run from this folder

from autograder.limits import CELL_TIMEOUT, MAX_SUBMITTED_FILE_BYTES  # noqa: E402 - after the path is set

c = get_config()  # noqa: F821 - provided by nbgrader

# What nbgrader logs of a submission (an unknown grade_id, a changed attribute's value) is the
# student's text: shown with its escape sequences escaped, never obeyed by the instructor's terminal.
from coursekit import terminal_text  # noqa: E402

terminal_text.install()

c.CourseDirectory.course_id = "self-attention"
c.CourseDirectory.root = str(_HERE)
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.db_url = f"sqlite:///{_HERE / 'gradebook.db'}"

# The judge replaces nbgrader's Execute: the student's kernel runs in a sandbox (bubblewrap),
# and every graded cell's verdict and points are computed outside it (autograder/judge.py).
c.Autograde.autograde_preprocessors = [
    "autograder.judge.JudgedExecute",
    "autograder.sealed_outputs.SealOutputs",  # no output that may carry a hidden input is kept
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    # nothing the formgrader or the feedback shows can run; after the gradebook's stages, so that
    # `coursekit autograde` runs it where the course (the release it compares with) is
    "coursekit.inert_content.InertContent",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.InertContent.course_root = str(_HERE)  # Markdown cells as released are rendered; others shown as text

# A notebook is checked against nbformat's schema once, after the last preprocessor of each
# pipeline, not after every one: each check took about 9 ms, fourteen of them per submission
# between sanitize and autograde (benchmarks/results.md, "thirteenth session"). An invalid notebook
# still fails; the error then names the last preprocessor rather than the first that broke it.
c.Exporter.optimistic_validation = True

# Each cell gets this long; the judge bounds each graded step below it (autograder/limits.py).
# Once a cell has timed out, each later ordinary cell gets ENDLESS_CELL_RETRY instead
# (c.JudgedExecute.endless_cell_timeout; 0 turns that off).
c.Execute.timeout = CELL_TIMEOUT
c.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:"]

# Feedback shows which cases failed and why, never the hidden test source, tracebacks from
# hidden code, or expected values (nbgrader's default shows hidden tests: its issue 917).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "coursekit.nbgrader_plugins.SanitizeGradeCells",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]

# --- The exchange (issue 11; README "Running the course") ---------------------------------------
# Where release_assignment, fetch, submit and collect meet. On one machine it is this folder
# beside the course (nbgrader creates it, writable by everyone, on the first release); set
# COURSEKIT_EXCHANGE to put it elsewhere, e.g. a directory every account can write on a shared
# machine or a JupyterHub (/srv/nbgrader/exchange).
import os  # noqa: E402

c.Exchange.root = os.environ.get("COURSEKIT_EXCHANGE") or str(_HERE / "exchange")
# --- end of the exchange ------------------------------------------------------------------------

# --- Files handed in are data (coursekit/intake.py) ----------------------------------------------
# Links, devices, FIFOs and sockets in a submission are never followed or read, and a file over
# MAX_SUBMITTED_FILE_BYTES is left out: collect and zip_collect copy without following anything,
# and autograde (nbgrader's and coursekit's) first moves such entries out of submitted/ into
# .coursekit/intake/<assignment>/<student>/, with a report the flags and the feedback show.
c.ExchangeFactory.collect = "coursekit.nbgrader_plugins.SafeCollect"
c.ZipCollectApp.extractor_plugin = "coursekit.nbgrader_plugins.SafeZipExtractor"
# whose a file is and when, from the platform's names only, never a name inside a student's upload
c.ZipCollectApp.collector_plugin = "coursekit.nbgrader_plugins.SafeFileNameCollector"
c.Autograde.pre_convert_hook = "coursekit.intake.autograde_hook"
c.CourseDirectory.max_file_size = MAX_SUBMITTED_FILE_BYTES // 1000  # nbgrader counts kilobytes
# The feedback starts with what was left out, and why (after GetGrades).
c.GenerateFeedback.preprocessors.insert(1, "coursekit.nbgrader_plugins.IntakeNote")
c.IntakeNote.course_root = str(_HERE)

# grades.csv (`nbgrader export`): every cell safe in a spreadsheet (no formulas), and no score for a
# submission that could not be graded, with the reason in a last column (coursekit/nbgrader_plugins.py).
c.ExportApp.plugin_class = "coursekit.nbgrader_plugins.GradesCsv"

# A graded cell the student deleted is put back from the gradebook and graded (nbgrader #1682;
# coursekit/nbgrader_plugins.py RestoreCells: nbgrader's OverwriteCells with add_missing_cells).
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "coursekit.known_cells.RestoreKnownCells",  # and a cell naming no graded cell is an ordinary one
    "nbgrader.preprocessors.CheckCellMetadata",
]
