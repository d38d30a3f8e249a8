"""nbgrader configuration of the self-attention course (nbgrader 0.9.6)."""

from pathlib import Path

c = get_config()  # noqa: F821 - provided by nbgrader

c.CourseDirectory.course_id = "self-attention"
c.CourseDirectory.root = str(Path(__file__).resolve().parent)
c.CourseDirectory.release_directory = "assignments"
c.CourseDirectory.db_url = f"sqlite:///{Path(__file__).resolve().parent / 'gradebook.db'}"

# Each cell, the hidden grading cells included, gets this long; an endless loop costs its
# author the cell, and the kernel is interrupted and graded on. The hidden cells bound
# themselves below this (autograder.harness.STEP_BUDGET).
c.Execute.timeout = 30
# Import the grader's snapshot of numpy/torch/builtins before any student cell runs, so a
# submission that rebinds np.allclose or torch.softmax is caught and put right.
c.Execute.extra_arguments = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.exec_lines=import autograder.guard",
]

# Feedback shows which cases failed and why, never the hidden test source, tracebacks from
# hidden code, or expected values (nbgrader's default shows hidden tests: its issue 917).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "coursekit.feedback.SanitizeGradeCells",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
