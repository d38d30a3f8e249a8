"""A cell's nbgrader metadata that names no cell of the gradebook is the student's, and dropped.

nbgrader's OverwriteCells deletes an unknown `grade_id` from a cell's metadata but keeps the rest
of it; with `add_missing_cells` (our `RestoreCells`, which puts back a graded cell the student
deleted) it then reads every `grade_id` of a cell with nbgrader metadata, and a KeyError failed
the submission on both grading paths. Any student could choose "not graded" by adding a cell with
`{"nbgrader": {"grade_id": "mine"}}` (or no grade_id at all): red-team round r37. Such a cell is
made an ordinary cell (what its metadata said has no cell of the release to mean), the
submission is graded, and nbgrader's warning names it in the log.
"""

from coursekit.nbgrader_plugins import RestoreCells


class RestoreKnownCells(RestoreCells):
    """`RestoreCells`, with the nbgrader metadata of a cell whose grade_id the gradebook does not
    know (or that has none) dropped."""

    def preprocess_cell(self, cell, resources, cell_index):
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        nbgrader = cell.metadata.get("nbgrader")
        if nbgrader is not None and (not isinstance(nbgrader, dict) or "grade_id" not in nbgrader):
            del cell.metadata["nbgrader"]
        return cell, resources
