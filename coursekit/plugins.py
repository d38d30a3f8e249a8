"""nbgrader's own classes, as this course configures them (nbgrader_config.py installs each):

- `SafeCollect` (`c.ExchangeFactory.collect`) and `SafeZipExtractor`
  (`c.ZipCollectApp.extractor_plugin`): collect and zip_collect, taking files in by
  `coursekit/intake.py`'s policy;
- `RestoreCells` (in `c.Autograde.sanitize_preprocessors`, for nbgrader's OverwriteCells): a
  graded cell the student deleted is put back from the gradebook and graded (nbgrader #1682);
- `GradesCsv` (`c.ExportApp.plugin_class`): `nbgrader export`'s grades.csv, safe in a spreadsheet
  and blank where a submission could not be graded.
"""

import os
from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.plugins.export import CsvExportPlugin
from nbgrader.plugins.zipcollect import ExtractorPlugin
from nbgrader.preprocessors import OverwriteCells
from nbgrader.utils import is_ignored, unzip
from traitlets import Bool

from coursekit import csvsafe, intake, standing


class SafeCollect(ExchangeCollect):
    """nbgrader's collect, copying each submission with `intake.safe_copy`: the inbound folder is
    the student's, so nothing in it is followed. nbgrader's ignore patterns still apply; what is
    dropped is recorded for the student and logged."""

    def do_copy(self, src, dest, log=None):
        student = Path(dest).parent.name
        root, assignment = self.coursedir.root, self.coursedir.assignment_id
        intake.forget(root, assignment, student)

        def keep(relative):
            return not is_ignored(os.path.join(src, relative), self.coursedir.ignore)

        dropped = intake.safe_copy(src, dest, keep=keep)
        intake.record(root, assignment, student, dropped)
        for entry in dropped:
            self.log.warning("%s, %s: dropped %s", student, assignment, entry)


class SafeZipExtractor(ExtractorPlugin):
    """zip_collect's extractor: an archive is unpacked as nbgrader unpacks it, a loose file is
    copied by `intake.safe_copy`'s rules (nbgrader's own `shutil.copy` follows links)."""

    def extract(self, archive_path, extracted_path):
        archives = tuple(self.zip_ext)
        top = Path(archive_path)
        dropped = intake.safe_copy(top, extracted_path, keep=lambda relative: not relative.endswith(archives)
                                   or os.path.isdir(top / relative))
        for entry in dropped:
            self.log.warning("zip_collect: dropped %s", entry)
        for dirpath, _, filenames in os.walk(top, followlinks=False):
            for name in filenames:
                path = Path(dirpath) / name
                if name.endswith(archives) and not intake.refusal(os.lstat(path), os.lstat(top).st_uid):
                    where = Path(extracted_path) / path.parent.relative_to(top)
                    where.mkdir(parents=True, exist_ok=True)
                    self.log.info("Extracting from: %s", path)
                    unzip(str(path), str(where), zip_ext=self.zip_ext, create_own_folder=True, tree=True)


GRADES_COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                  "raw_score", "late_submission_penalty", "score", "max_score", "flags"]


class GradesCsv(CsvExportPlugin):
    """nbgrader's CSV export (`nbgrader export`, installed by nbgrader_config.py), with its columns
    and their values, but quoted as CSV, safe in a spreadsheet, and honest: a submission that
    could not be graded has empty scores and the reason in a last column, `flags`."""

    def export(self, gradebook):
        root = self.parent.coursedir.root
        with open(self.to or "grades.csv", "w", newline="") as handle:
            writer = csvsafe.Writer(handle)
            writer.writerow(GRADES_COLUMNS)
            for assignment in gradebook.assignments:
                if self.assignment and assignment.name not in map(str, self.assignment):
                    continue
                for student in gradebook.students:
                    if self.student and student.id not in map(str, self.student):
                        continue
                    writer.writerow(_grades_row(gradebook, root, assignment, student))


def _grades_row(gradebook, root, assignment, student):
    from nbgrader.api import MissingEntry

    identity = [assignment.name, assignment.duedate or "", None, student.id, student.last_name,
                student.first_name, student.email]
    try:
        submission = gradebook.find_submission(assignment.name, student.id)
    except MissingEntry:  # nothing handed in: nbgrader's 0
        return identity[:2] + [""] + identity[3:] + [0.0, 0.0, 0.0, assignment.max_score, "no submission"]
    penalty = submission.late_submission_penalty or 0.0
    where = standing.standing(root, assignment.name, student.id, penalty)
    scores = ([submission.score, penalty, max(0.0, submission.score - penalty)] if where.graded
              else ["", "", ""])
    return (identity[:2] + [submission.timestamp or ""] + identity[3:] + scores
            + [assignment.max_score, "; ".join(where.flags)])


class RestoreCells(OverwriteCells):
    """nbgrader's OverwriteCells, putting back the graded cells a student deleted
    (`add_missing_cells`), each under its grade id as its cell id: nbformat would give it a
    random one, and the same submission would not give the same autograded notebook twice."""

    add_missing_cells = Bool(True).tag(config=True)

    def missing_cell_transform(self, source_cell, max_score, is_solution=False, is_task=False):
        cell = super().missing_cell_transform(source_cell, max_score, is_solution, is_task)
        cell["id"] = source_cell.name
        return cell
