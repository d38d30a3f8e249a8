"""Feedback sanitising: what a student may see of a graded test cell."""

from nbconvert.preprocessors import Preprocessor
from nbgrader import utils


class SanitizeGradeCells(Preprocessor):
    """In graded test cells, keep the grader's report but cut tracebacks to their last line.

    A traceback from a hidden cell would quote hidden test code and the grader's paths; the
    exception's name and message are enough to act on. Runs after ClearHiddenTests.
    """

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources
