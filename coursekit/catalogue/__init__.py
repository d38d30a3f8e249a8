"""Catalogues of submissions the grading must get right, kept as data.

Each `Variant` is one student's submission to one assignment: the release completed with the
reference, except for `replace` (graded name -> that solution cell's whole source), plus
optional top-level code in a cell of its own (`extra_cell`, after the last solution cell), or a
`transform` of the finished notebook (for broken files), and files handed in beside it (`hands_in`:
links, FIFOs, large or many files, which intake must leave out or keep apart).
`classroom.build_submission` turns a Variant into the notebook; `classroom.grade_class` writes its
files beside it.

- MISTAKES: plausible errors. Every step in `loses` must lose points, with `symptom` (and each
  phrase of `also`) in that step's report; every other step keeps full marks, and the instructor's report flags nothing.
- CORRECT: other correct styles. Full marks everywhere, and nothing flagged.
- HOSTILE: attacks and breakage. No step in `loses` may keep full marks, no other step may
  gain, grading of everyone else goes on, and when `flagged` the instructor's report names it
  (`flag`: a phrase one of its flags must contain). `graded=False` where autograde cannot
  produce a grade at all (the file is no notebook): every step then scores 0. `baseline` names
  the mistake with the same wrong code and no trick: the attack must score no more than it at
  any step. Where an attack would be harmless on correct code, it comes with a wrong
  implementation, so a point it saved would show.

Where the entries live (this package's folder):

- `mistakes.toml`: one `[[mistake]]` table per mistake (`id`, `assignment`, `description`,
  `loses`, `symptom`, optional `also`, `edits`). A mistake is the reference as a student would type it
  (`samples.reference_cell`) with small edits: each `{name, old, new}` replaces the text `old`,
  which must occur exactly once, in the cell of graded name `name` (`apply_edits`). Edits of one name
  apply in order, each to the result of the previous one. A reviewer reads a mistake as its diff.
- `programs/<assignment>/<kind>/<id>.py`, kind `correct`, `hostile` or `mistake` (a mistake that
  is no small edit, such as a chapter's class pasted in verbatim): the text the student's cell
  holds, verbatim, under a header of `# key: value` comment lines that ends at the first blank
  line. A header line starting `#` plus three spaces continues the value above it. Keys:

      description   what the submission does (required)
      source        where the code comes from (required), e.g. "written for this catalogue"
      replaces      the graded names whose solution cells the text fills (each named cell gets
                    the whole text, in place of the reference)
      extra_cell    true: the text is a new cell after the last solution cell
      loses         graded names that must lose points
      symptom       a phrase the losing step's report must contain
      flagged       true: the instructor's report must flag it (with `flag` in some flag)
      flag
      graded        false: autograde cannot grade it at all
      baseline      hostile: the id of the mistake of the same assignment with the same wrong code
      hands_in      files handed in beside the notebook, `;`-separated, each `NAME KIND [ARGUMENT]`
                    (HANDED_IN_KINDS): `link TARGET` (a symbolic link), `fifo`, `bytes COUNT` (a
                    file of COUNT zero bytes, sparse), `files COUNT` (a folder of COUNT empty files)
      transform     a transform of the finished notebook, by name and arguments (TRANSFORMS):
                    `not_json`, `nested_json DEPTH`, `nbformat 3`, `drop_grade_cell STEP`,
                    `edit_grade_cell STEP SOURCE`, `drop_step STEP` (its solution and test cells),
                    `pad_cells COUNT` (empty Markdown cells at the end),
                    `add_markdown PATH` (a Markdown cell at the end, from a file under programs/)

  A program that fills several cells (or a cell and an extra cell) splits its text with
  jupytext-style markers instead of a header `replaces`: each `# %% replaces: NAME...` or
  `# %% extra_cell` line starts a section that is exactly one cell's text. Blank lines around a
  cell's text are not part of it. Every `.py` file under programs/ is an entry (new ones are
  picked up without registering them); entries of one kind and assignment come in id order.
  `programs/ruff.toml` keeps the linter out of them: they are students' code, not the project's.

- `step_mistakes.toml`: mistakes in the same form as `mistakes.toml`, each losing one step,
  graded in process at that step alone (`tests/test_step_mistakes.py`: its symptom, its `also`
  phrases and its size), not through nbgrader and not in the grading matrix. They are how a
  diagnosis that no nbgrader-graded mistake shows is still exercised: a row graded through
  nbgrader is every step of the notebook in a sandboxed kernel plus nbgrader's own work (about
  1.3 s of CPU), a step mistake only its step's cases, in process. A mistake whose grading
  elsewhere in the notebook matters (what later steps are lent, flags) belongs in `mistakes.toml`.

`misconception_sizes.toml` sizes every mistake (conceptual, slip, or partial with a reason): how
much of its step it may keep, which `tests/test_case_weights.py` checks against the grading matrix.

`python -m coursekit.matrix` grades every entry through real nbgrader and writes its row to
docs/grading_matrix.md. In CI, `tests/test_catalogue.py` grades the correct and hostile entries
and a sample of the mistakes (`coursekit.matrix.nbgrader_sample`) through nbgrader and asserts
their rows; `tests/test_step_mistakes.py` grades the other mistakes at their own step, against
the points the matrix records.
"""

import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder.steps import graded_step
from coursekit.paths import ROOT

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
KIND_FOLDERS = ("mistake", "correct", "hostile")


@dataclass(frozen=True)
class Variant:
    id: str
    assignment: str
    description: str
    replace: dict = field(default_factory=dict)
    loses: tuple = ()
    symptom: str = ""  # a phrase the losing step's report must contain
    also: tuple = ()  # more phrases it must contain: messages its other cases give (mistakes.toml)
    extra_cell: str = ""  # top-level code in a cell of its own, after the solution cells
    transform: object = None  # callable(notebook dict) -> notebook dict, or bytes for the file
    flagged: bool = False
    flag: str = ""  # when flagged: a phrase one of the instructor's flags must contain
    graded: bool = True  # False: autograde cannot grade it at all (all steps 0, flagged)
    baseline: str = ""  # hostile: id of the mistake with the same wrong code, no trick
    source: str = ""  # where the code comes from (programs), or "" (mistakes: the reference)
    hands_in: tuple = ()  # (HandedIn): files beside the notebook in its submission folder
    # A mistake that reads the notebook's own state (its globals): only the whole notebook shows what
    # it costs, so CI always grades it through nbgrader (coursekit.matrix.nbgrader_sample).
    reads_notebook: bool = False


# --- mistakes: edits of the reference --------------------------------------------------------

def _replace_once(text, old, new, where):
    count = text.count(old)
    if count != 1:
        raise ValueError(f"{where}: the text to replace occurs {count} times in the source, "
                         f"not exactly once:\n{old}")
    return text.replace(old, new)


def reference(name):
    """The reference solution cell of graded name `name`, exactly as a student would type it."""
    from coursekit.samples import reference_cell

    return reference_cell([name]) + "\n"


def apply_edits(edits, where="edits"):
    """{name: cell source} from [{name, old, new}], edits of one name applied in order."""
    sources = {}
    for number, edit in enumerate(edits, 1):
        name = edit["name"]
        text = sources.get(name) or reference(name)
        sources[name] = _replace_once(text, edit["old"], edit["new"], f"{where}, edit {number} of {name!r}")
    return sources


def load_mistakes(path=HERE / "mistakes.toml"):
    variants = []
    for entry in tomllib.loads(Path(path).read_text()).get("mistake", []):
        unknown = set(entry) - {"id", "assignment", "description", "loses", "symptom", "also", "edits",
                                "reads_notebook"}
        if unknown:
            raise ValueError(f"{path}: mistake {entry.get('id')!r} has unknown keys {sorted(unknown)}")
        variants.append(Variant(
            entry["id"], entry["assignment"], entry["description"],
            apply_edits(entry["edits"], f"{path.name}: mistake {entry['id']!r}"),
            loses=tuple(entry["loses"]), symptom=entry["symptom"], also=tuple(entry.get("also", ())),
            reads_notebook=entry.get("reads_notebook", False)))
    return variants


# --- transforms of the finished notebook (broken files) --------------------------------------

def _not_json():
    return lambda nb: b'{"cells": [{"cell_type": "code", "source": "def softmax(x'


def _nested_json(depth):
    def transform(nb):
        # json.dumps cannot write a list nested past the recursion limit: it is spliced in as text
        nb["metadata"]["nested"] = "NESTED"
        return json.dumps(nb).replace('"NESTED"', "[" * int(depth) + "]" * int(depth)).encode()

    return transform


def _nbformat(version):
    def transform(nb):
        nb["nbformat"] = int(version)
        return nb
    return transform


def _drop_grade_cell(step):
    def transform(nb):
        nb["cells"] = [c for c in nb["cells"] if graded_step(c) != step]
        return nb
    return transform


def _edit_grade_cell(step, source):
    """The hidden test cell of `step` replaced by `source`, and its points set to 100."""
    def transform(nb):
        for cell in nb["cells"]:
            if graded_step(cell) == step:
                cell["source"] = source
                cell["metadata"]["nbgrader"]["points"] = 100
        return nb
    return transform


def _drop_step(step):
    """The solution cell that defines `step` and its hidden test cell, both deleted."""
    def defines(cell):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        return cell["cell_type"] == "code" and re.search(rf"^(def|class) {step}\b", source, re.M) is not None

    def transform(nb):
        nb["cells"] = [c for c in nb["cells"] if graded_step(c) != step and not defines(c)]
        return nb
    return transform


def _pad_cells(count):
    """`count` empty Markdown cells added at the end."""
    def transform(nb):
        nb["cells"] += [{"cell_type": "markdown", "id": f"pad-{i}", "metadata": {}, "source": ""} for i in range(int(count))]
        return nb
    return transform


def _add_markdown(path):
    """A Markdown cell added at the end, its text the file at `path` under programs/ (not a .py: no entry)."""
    text = (PROGRAMS / path).read_text()

    def transform(nb):
        nb["cells"].append({"cell_type": "markdown", "id": "student-note", "metadata": {}, "source": text})
        return nb
    return transform


TRANSFORMS = {"not_json": _not_json, "nested_json": _nested_json, "nbformat": _nbformat,
              "drop_grade_cell": _drop_grade_cell, "drop_step": _drop_step, "pad_cells": _pad_cells,
              "edit_grade_cell": _edit_grade_cell, "add_markdown": _add_markdown}


def transform(spec):
    """A transform from its header spelling: its name, then its arguments, space-separated."""
    name, *args = spec.split()
    return TRANSFORMS[name](*args)


# --- files handed in beside the notebook (what intake must leave out or keep apart) -----------

def _link(path, target):
    path.symlink_to(target)


def _fifo(path):
    os.mkfifo(path)


def _zero_bytes(path, count):
    with open(path, "wb") as handle:  # sparse: a 100 MB file costs the machine nothing until read
        handle.truncate(int(count))


def _empty_files(path, count):
    path.mkdir()
    for number in range(int(count)):
        (path / f"{number}.txt").touch()


HANDED_IN_KINDS = {"link": (_link, 1), "fifo": (_fifo, 0), "bytes": (_zero_bytes, 1), "files": (_empty_files, 1)}


@dataclass(frozen=True)
class HandedIn:
    """One file a catalogue entry hands in beside its notebook (header `hands_in`)."""
    name: str
    kind: str
    argument: str = ""

    def write(self, folder):
        make, _ = HANDED_IN_KINDS[self.kind]
        make(Path(folder) / self.name, *([self.argument] if self.argument else []))


def hands_in(spec, where="hands_in"):
    """(HandedIn) from the header's spelling: `;`-separated `NAME KIND [ARGUMENT]`."""
    files = []
    for item in filter(str.strip, spec.split(";")):
        name, kind, *argument = item.split()
        if kind not in HANDED_IN_KINDS or len(argument) != HANDED_IN_KINDS[kind][1] or "/" in name:
            raise ValueError(f"{where}: {item.strip()!r} is not `NAME KIND [ARGUMENT]` with a plain NAME and "
                             f"KIND one of {', '.join(HANDED_IN_KINDS)} (with its argument, if it takes one)")
        files.append(HandedIn(name, kind, *argument))
    return tuple(files)


# --- programs: files under programs/<assignment>/<kind>/ --------------------------------------

HEADER_KEYS = {"description", "source", "replaces", "extra_cell", "loses", "symptom", "flagged", "flag",
               "graded", "baseline", "transform", "hands_in"}
_HEADER_LINE = re.compile(r"# (\w+): ?(.*)")
_SECTION = re.compile(r"# %% (?:replaces: (.+)|(extra_cell))\s*")


def _boolean(value, where):
    if value not in ("true", "false"):
        raise ValueError(f"{where}: expected true or false, not {value!r}")
    return value == "true"


def _cell_text(lines):
    return "\n".join(lines).strip("\n") + "\n"


def parse_program(text, where="program"):
    """(header {key: value}, [(graded names, or None for the extra cell, cell text)])."""
    lines = text.splitlines()
    header, last, body = {}, None, []
    for number, line in enumerate(lines):
        if not line.strip():
            body = lines[number + 1:]
            break
        if line.startswith("#   ") and last:
            header[last] += " " + line.strip("# ")
            continue
        match = _HEADER_LINE.fullmatch(line)
        if not match or match[1] not in HEADER_KEYS:
            raise ValueError(f"{where}, line {number + 1}: not a header line (`# key: value`, keys "
                             f"{', '.join(sorted(HEADER_KEYS))}); a blank line ends the header: {line!r}")
        last = match[1]
        header[last] = match[2].strip()
    extra = _boolean(header.get("extra_cell", "false"), where)
    if "replaces" in header and extra:
        raise ValueError(f"{where}: `replaces` and `extra_cell: true` both; split the text with `# %%` markers")
    if not any(_SECTION.fullmatch(line) for line in body):
        text = _cell_text(body)
        if "replaces" in header:
            return header, [(tuple(header["replaces"].split()), text)]
        if extra:
            return header, [(None, text)]
        if text.strip():
            raise ValueError(f"{where}: say where the text goes (`replaces: NAME...` or `extra_cell: true`)")
        return header, []
    if "replaces" in header or extra:
        raise ValueError(f"{where}: a program split by `# %%` markers says in them where each cell goes")
    before, cells = [], []
    current = before
    for line in body:
        marker = _SECTION.fullmatch(line)
        if marker:
            current = []
            cells.append((tuple(marker[1].split()) if marker[1] else None, current))
        else:
            current.append(line)
    if any(line.strip() for line in before):
        raise ValueError(f"{where}: code before the first `# %%` marker")
    if sum(names is None for names, _ in cells) > 1:
        raise ValueError(f"{where}: more than one `# %% extra_cell`")
    return header, [(names, _cell_text(cell)) for names, cell in cells]


def load_program(path):
    """The Variant of one program file: its id from the file name, its assignment and kind from
    the folders above it -> (kind, Variant)."""
    path = Path(path)
    kind, assignment = path.parent.name, path.parent.parent.name
    where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
    header, cells = parse_program(path.read_text(), where)
    for key in ("description", "source"):
        if not header.get(key):
            raise ValueError(f"{where}: the header has no `{key}`")
    replace, extra = {}, ""
    for names, text in cells:
        if names is None:
            extra = text
        for name in names or ():
            replace[name] = text
    return kind, Variant(
        path.stem, assignment, header["description"], replace,
        loses=tuple(header.get("loses", "").split()), symptom=header.get("symptom", ""),
        extra_cell=extra, transform=transform(header["transform"]) if header.get("transform") else None,
        flagged=_boolean(header.get("flagged", "false"), where), flag=header.get("flag", ""),
        graded=_boolean(header.get("graded", "true"), where), baseline=header.get("baseline", ""),
        source=header["source"], hands_in=hands_in(header.get("hands_in", ""), where))


def load_programs(root=PROGRAMS):
    """{kind: [Variant]} of every program file under root, by assignment, then id."""
    out = {kind: [] for kind in KIND_FOLDERS}
    for path in sorted(root.glob("*/*/*.py"), key=lambda p: (p.parent.parent.name, p.stem)):
        if path.parent.name not in out:
            raise ValueError(f"{path}: programs are kept under one of {', '.join(KIND_FOLDERS)}")
        kind, variant = load_program(path)
        out[kind].append(variant)
    return out


_programs = load_programs()
MISTAKES = load_mistakes() + _programs["mistake"]
# Graded in process at their own step only (tests/test_step_mistakes.py), never through nbgrader:
# not rows of the grading matrix.
STEP_MISTAKES = load_mistakes(HERE / "step_mistakes.toml")
CORRECT = _programs["correct"]
HOSTILE = _programs["hostile"]


def all_variants():
    return [*MISTAKES, *CORRECT, *HOSTILE]


def by_assignment(variants, assignment):
    return [v for v in variants if v.assignment == assignment]
