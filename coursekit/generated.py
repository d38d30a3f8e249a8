"""The one rule of every generated artefact: regenerate it, or (in CI, `--check`) fail when what
is committed is not what its source generates now.

    regenerate_or_check(outputs, "python -m coursekit.build", check=args.check)

`outputs` maps each generated file to its content (text or bytes). Regenerating writes them (and,
with `owned`, removes the files of that folder that nothing generates); checking writes nothing,
lists every file that is missing, differs or is not generated, and names the command that
regenerates them. The generators of the repository go through here: the source notebooks
(`coursekit/build.py`) and the release (`coursekit/release.py`); the stored fixtures and
ERRATA.md (`autograder/fixtures/stored.py`, `notes.py`) still carry their own copy of the rule
(TODO: theirs is for the judge's maintainers to replace with this one). It needs nothing but the
standard library, so either package may import it. (The grading matrix is checked by its
points, row by row, in tests/test_catalogue.py, not byte for byte.)
"""

from pathlib import Path


def _read(path, like):
    return path.read_text(encoding="utf-8") if isinstance(like, str) else path.read_bytes()


def _shown(path):
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _strays(outputs, owned):
    """Files under `owned` that no output names."""
    if owned is None or not Path(owned).exists():
        return []
    wanted = {Path(p).resolve() for p in outputs}
    return sorted(p for p in Path(owned).rglob("*") if p.is_file() and p.resolve() not in wanted)


def stale(outputs, owned=None, same=None):
    """What is not as generated, one line each ([] when everything is current). `same(path,
    content)`: whether the committed file at `path` holds `content` (default: equal bytes or
    text), for a format that is not byte for byte reproducible."""
    problems = []
    for path, content in sorted(outputs.items()):
        path = Path(path)
        if not path.is_file():
            problems.append(f"missing: {_shown(path)}")
        elif not (same(path, content) if same is not None else _read(path, content) == content):
            problems.append(f"differs: {_shown(path)}")
    problems += [f"not generated: {_shown(p)}" for p in _strays(outputs, owned)]
    return problems


def write(outputs, owned=None):
    """Write every output (and remove the files under `owned` that no output names)."""
    for path in _strays(outputs, owned):
        path.unlink()
    for path, content in sorted(outputs.items()):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        print(f"wrote {_shown(path)}")


def regenerate_or_check(outputs, command, check, owned=None, same=None):
    """Regenerate `outputs`, or with `check` say which are stale and how to regenerate them
    (`command`) -> the exit status: 1 when the check finds anything stale, else 0."""
    if not check:
        write(outputs, owned)
        return 0
    problems = stale(outputs, owned, same)
    if problems:
        print(f"stale (run `{command}`):", *problems, sep="\n  ")
        return 1
    return 0
