"""The course's classes for nbgrader: its preprocessors and plugins, each installed by name by
nbgrader_config.py (nbgrader imports them from there, in its own processes).

- `SafeCollect` (`c.ExchangeFactory.collect`), `SafeZipExtractor`
  (`c.ZipCollectApp.extractor_plugin`) and `SafeFileNameCollector` (`c.ZipCollectApp.collector_plugin`):
  collect and zip_collect, taking files in by `coursekit/intake.py`'s policy, and for zip_collect
  whose and when from the platform's names only (`coursekit/zip_names.py`);
- `RestoreCells` (in `c.Autograde.sanitize_preprocessors`, for nbgrader's OverwriteCells): a
  graded cell the student deleted is put back from the gradebook and graded (nbgrader #1682);
- `SanitizeGradeCells` and `IntakeNote` (in `c.GenerateFeedback.preprocessors`): what a student
  may see of a graded test cell, and what was left out of their submission;
- `GradesCsv` (`c.ExportApp.plugin_class`): `nbgrader export`'s grades.csv, safe in a spreadsheet
  and blank where a submission could not be graded.
"""
import fnmatch
import glob
import html
import os
import pwd
import re
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell
from nbgrader import utils
from nbgrader.exchange.default.collect import ExchangeCollect, groupby
from nbgrader.plugins.export import CsvExportPlugin
from nbgrader.plugins.zipcollect import ExtractorPlugin, FileNameCollectorPlugin
from nbgrader.preprocessors import OverwriteCells
from traitlets import Bool, Unicode

from coursekit import archives, csvsafe, handed_in, intake, standing, zip_names


def ignored(name, patterns):
    """Whether nbgrader's `is_ignored` ignores a file named `name`: a pattern matches the name
    alone, as glob matches it (a name starting with a dot only where the pattern does). nbgrader's
    lists the file's folder for each pattern, once per file: 21,000 files handed in took collect
    minutes (red-team round r50)."""
    return any(name == pattern if not glob.has_magic(pattern)
               else fnmatch.fnmatchcase(name, pattern) and (pattern.startswith(".") or not name.startswith("."))
               for pattern in patterns)


class SafeCollect(ExchangeCollect):
    """nbgrader's collect, copying each submission with `intake.safe_copy`: the inbound folder is
    the student's, so nothing in it is followed. nbgrader's ignore patterns still apply; what is
    dropped is recorded for the student and logged."""

    def init_src(self):
        """nbgrader's, but each student's submission is chosen by the time it was handed in
        (`_handed_in`), among the folders they own. Every
        student may write the inbound folder, and a folder's name says whose submission it is:
        nbgrader's `check_owner` only warns when someone else owns it, then collects it, so a
        folder in a classmate's name with a later timestamp replaced the classmate's submission
        (red-team round r27). A folder is refused when the student it names has an account of
        their own that does not own it (this course's model: one account per person), and when it names
        no account but is owned by a student who hands in in their own name too: one student's folders
        in a thousand made-up names were a thousand submissions to grade. Without such accounts (one
        account shared by every student) nbgrader's warning is all there is."""
        super().init_src()
        student = self.coursedir.student_id or "*"
        paths = glob.glob(os.path.join(self.inbound_path, f"{student}+{self.coursedir.assignment_id}+*"))
        records = [self._handed_in(r) for r in map(self._path_to_record, paths)]
        named = {r["username"] for r in records}
        owned = [r for r in records if self._one_printable_line(r)
                 and not (self.check_owner and self._in_anothers_name(r, named))]
        self.src_records = [self._chosen(records) for records in groupby(owned, lambda r: r["username"]).values()]

    def _handed_in(self, record):
        """The record with the time the submission is taken as handed in (`coursekit/handed_in.py`):
        the time in the folder's name is the student's, and a name set earlier than the folder's
        files were last changed chose an old submission as the newest, or a late one as on time."""
        changed = handed_in.last_change(os.path.join(self.inbound_path, record["filename"]))
        return dict(record, timestamp=handed_in.trusted(record["timestamp"], changed), changed=changed)

    def _one_printable_line(self, record):
        """Whether the student id the folder's name gives is one line of printable text, as an account's name is: a
        folder in the name of no account is collected (above), and r63's, an escape sequence and a newline, became a
        student whose id cleared the instructor's terminal and wrote a row of its own into the results table."""
        if record["username"].isprintable():
            return True
        self.log.warning("%s: not collected: its student id is not one line of printable text", record["filename"])
        return False

    def _in_anothers_name(self, record, named):
        """Whether the folder is in a name its owner may not hand in under (`init_src`); `named`: every student id
        a folder of the inbound names."""
        path = os.path.join(self.inbound_path, record["filename"])
        owner = os.lstat(path).st_uid
        try:
            if pwd.getpwnam(record["username"]).pw_uid == owner:
                return False
        except KeyError:  # no account of that name: refused only where its owner is a student handing in
            try:
                if pwd.getpwuid(owner).pw_name not in named:
                    return False
            except KeyError:
                return False
        try:
            owner = pwd.getpwuid(owner).pw_name
        except KeyError:
            pass
        self.log.warning("%s: not collected: it is in %s's name but owned by %s", path, record["username"], owner)
        return True

    def _chosen(self, records):
        """nbgrader's choice among one student's submissions: the newest, or with
        `before_duedate` the newest on time (the newest if none is)."""
        records = self._sort_by_timestamp(records)
        if self.duedate is not None and self.before_duedate:
            return next((r for r in records if r["timestamp"] <= self.duedate), records[0])
        return records[0]

    def do_copy(self, src, dest, log=None):
        student = Path(dest).parent.name
        root, assignment = self.coursedir.root, self.coursedir.assignment_id
        intake.forget(root, assignment, student)

        def keep(relative):
            return not ignored(os.path.basename(relative), self.coursedir.ignore)

        dropped = intake.safe_copy(src, dest, keep=keep, notebooks=intake.assignment_notebooks(root, assignment))
        record = next(r for r in self.src_records if r["filename"] == os.path.basename(src))
        # When its files last changed, read again now that they are copied: the time was read for the whole
        # class before the first copy, and a student who changed theirs in between (told by their folder's
        # access time that collect had read it) had the change taken in as handed in on time (r46).
        changed = max(record["changed"], handed_in.last_change(src))
        when = handed_in.trusted(record["timestamp"], changed)
        dropped += self._stamped(Path(dest) / "timestamp.txt", when, changed)
        intake.record(root, assignment, student, dropped)
        for entry in dropped:
            self.log.warning("%s, %s: dropped %s", student, assignment, entry)

    @staticmethod
    def _stamped(path, when, changed):
        """Write `when` into the copy's timestamp.txt, which autograde reads for the gradebook's
        lateness, where the student's said anything else -> [Dropped] saying why (or [])."""
        said, _ = intake.read_time(path)  # None where it is missing, empty or no time
        if said == when:
            return []
        path.write_text(handed_in.stamp(when))
        return [intake.Dropped("timestamp.txt", handed_in.why_replaced(said, when, changed))]


class SafeZipExtractor(ExtractorPlugin):
    """zip_collect's extractor: an archive is unpacked as nbgrader unpacks it, within a budget
    (`coursekit/archives.py`: nbgrader's bounds neither memory nor disk), a loose file is
    copied by `intake.safe_copy`'s rules (nbgrader's own `shutil.copy` follows links)."""

    def extract(self, archive_path, extracted_path):
        self.unpacked = []  # (folder an archive was unpacked into, that archive, whether it was inside another)
        extensions = tuple(self.zip_ext)
        top = Path(archive_path)
        dropped = intake.safe_copy(top, extracted_path, keep=lambda relative: not relative.endswith(extensions)
                                   or os.path.isdir(top / relative))
        for entry in dropped:
            self.log.warning("zip_collect: dropped %s", entry)
        for dirpath, _, filenames in os.walk(top, followlinks=False):
            for name in filenames:
                path = Path(dirpath) / name
                if name.endswith(extensions) and not intake.refusal(os.lstat(path), os.lstat(top).st_uid):
                    where = Path(extracted_path) / path.parent.relative_to(top)
                    where.mkdir(parents=True, exist_ok=True)
                    self.log.info("Extracting from: %s", path)
                    # nbgrader's unzip, within a budget: it bounds neither memory nor disk (archives.py)
                    unpacked = archives.unpack(path, where, self.zip_ext, self.log)
                    self.unpacked += [(folder, source, index > 0) for index, (folder, source) in enumerate(unpacked)]


class SafeFileNameCollector(FileNameCollectorPlugin):
    """zip_collect's collector: nbgrader's, except that no file is taken whose student id or time
    comes from a name inside an archive a student handed in, or whose names would put it outside
    its student's folder (`coursekit/zip_names.py`); the instructor is told of each."""

    def collect(self, submitted_file):
        info = super().collect(submitted_file)
        if not info:
            return info
        unpacked = getattr(getattr(self.parent, "extractor_plugin_inst", None), "unpacked", ())
        uploads = [folder for folder, _, nested in unpacked
                   if zip_names.is_upload(folder, nested, self.named_regexp, os.path.basename(submitted_file))]
        sources = {folder: source for folder, source, _ in unpacked}
        why = zip_names.refusal(submitted_file, info, self.named_regexp, uploads, sources)
        if why:
            self.log.warning("zip_collect: not collected: %s: %s", submitted_file, why)
            return None
        return info


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

    def preprocess(self, nb, resources):
        """The notebook of another assignment is not graded as this one's, with every graded cell put
        back: it fails, as nbgrader's KeyError had it fail until r50 (`standing.diagnose` says why)."""
        other = standing.other_assignment(nb, resources["nbgrader"]["assignment"])
        if other is not None:
            raise ValueError(f"the notebook of another assignment ({other}), whose graded cells are not put back")
        return super().preprocess(nb, resources)

    def add_missing_grade_cells(self, nb, resources):
        """nbgrader's, but each missing graded cell goes after the nearest cell of the release before it
        that the notebook still holds (or first): nbgrader's looks up the one just before it only, and a
        student who deleted a solution cell with its test cell (or handed in a notebook of none of the
        release's cells) had the submission fail with a KeyError, not graded on both paths (r50)."""
        source = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        graded = {cell.name: cell for cell in source.grade_cells}
        solutions = {cell.name for cell in source.solution_cells}
        for position, source_cell in enumerate(source.source_cells):
            held = {cell.metadata["nbgrader"]["grade_id"]: index for index, cell in enumerate(nb.cells)
                    if utils.is_grade(cell) or utils.is_solution(cell)}
            if source_cell.name not in graded or source_cell.name in held:
                continue
            self.log.warning("Missing grade cell %s encountered, adding to notebook", source_cell.name)
            before = [held[cell.name] for cell in source.source_cells[:position] if cell.name in held]
            nb.cells.insert(before[-1] + 1 if before else 0, self.missing_cell_transform(
                source_cell, graded[source_cell.name].max_score, is_solution=source_cell.name in solutions))
        return nb, resources


class SanitizeGradeCells(Preprocessor):
    """In graded test cells, keep the grader's report but cut tracebacks to their last line.

    A traceback from a hidden cell would quote hidden test code and the grader's paths; the
    exception's name and message are enough to act on. Runs after ClearHiddenTests.
    """

    enabled = Bool(True).tag(config=True)  # nbconvert registers a plain Preprocessor disabled: it never ran

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


class IntakeNote(Preprocessor):
    """At the top of the feedback, what was left out of the submission and why (coursekit/intake.py):
    the student sees that a link or an oversized file was not graded, not a silent absence."""

    course_root = Unicode(".", help="the course directory (nbgrader_config.py sets it)").tag(config=True)
    enabled = Bool(True).tag(config=True)  # nbconvert registers a plain Preprocessor disabled

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        recorded = intake.recorded(self.course_root, info.get("assignment", ""), info.get("student", ""))
        replaced = [d for d in recorded if d.replaced]
        dropped = [d for d in recorded if not d.replaced]
        if replaced:
            items = "\n".join(f"- {_markdown_text(f'{d.path} {d.reason}')}" for d in replaced)
            nb.cells.insert(0, new_markdown_cell("**Changed by the grader in your submission:**\n\n" + items))
        if dropped:
            items = "\n".join(f"- {_markdown_text(str(d))}" for d in dropped)
            nb.cells.insert(0, new_markdown_cell(
                "**Left out of your submission** (graded without them; hand in plain files only):\n\n" + items))
        return nb, resources


def _markdown_text(text):
    """`text` shown literally in Markdown (a file name is the student's to choose)."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!<>|~])", r"\\\1", html.escape(text, quote=False))
