"""No output that may carry a hidden input reaches the student.

A step judged in the notebook's own kernel sends that kernel its hidden cases' inputs. The
student's code can keep them (a function that appends what it is given to a list) and print
them in a later cell, whose output the autograded notebook, and so the feedback, would show
(issue "Sealed submissions", item 5). The judge marks every ordinary cell that ran in a kernel
that had been sent inputs (`SEALED_KEY`, in `judge.py`); this stage, next in nbgrader's
autograde pipeline (`nbgrader_config.py`), puts one line saying why in place of what such a cell
printed or displayed, whatever it is: an error's text or a figure can carry numbers as well as
a print. What ran before any inputs were sent, and the judge's report in each graded cell, are
kept. The verdicts do not change: an ordinary cell's output is worth no points.
"""

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_output
from traitlets import Bool

SEALED_KEY = "autograder_sealed"  # an ordinary cell's metadata: it ran after inputs were sent
NOTE = ("[the grader does not keep what this cell showed: it ran after the grader's hidden test "
        "inputs had reached the kernel, and could show them. Run the notebook yourself to see it.]\n")


class SealOutputs(Preprocessor):
    """Replace the outputs of every cell the judge marked; drop the mark."""

    enabled = Bool(True)  # nbconvert runs a preprocessor only if enabled, and its default is not

    def preprocess_cell(self, cell, resources, index):
        if cell.get("metadata", {}).pop(SEALED_KEY, False):
            cell.outputs = [new_output("stream", name="stdout", text=NOTE)]
        return cell, resources
