"""The code shows its design: no import circle, small modules and functions, and a README whose
layout table names every module."""

import ast
import fnmatch
import posixpath
import re

import pytest

from coursekit.paths import ROOT

PACKAGES = ("autograder", "coursekit")
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60  # outside data tables (a function is code, not a table)


def _modules(package):
    """{dotted name: path} of a package's Python modules (the catalogue's programs are data)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if "programs" in path.relative_to(ROOT).parts:
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def import_graph(package):
    """{module: the package's modules it imports}, at any depth of the code (an import inside a
    function is an edge too: it only hides a circle until that function runs)."""
    modules = _modules(package)
    graph = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from package import module` depends on that module; the package around it is
                # only initialised first (a package that gathers its modules' names is no circle)
                submodules = {f"{node.module}.{alias.name}" for alias in node.names} & set(modules)
                names = [alias.name for alias in node.names if f"{node.module}.{alias.name}" not in modules]
                edges |= submodules | ({node.module} & set(modules) if names else set())
        graph[name] = edges - {name}
    return graph


def circles(graph):
    """Every import circle found by a depth-first walk, as [a, b, ..., a]."""
    state, path, found = {}, [], []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                found.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_the_circle_finder_finds_a_circle_hidden_in_a_function():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_itself_through_others(package):
    assert circles(import_graph(package)) == []


def _functions(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.end_lineno - node.lineno + 1


def test_modules_and_functions_are_small():
    """No source file over MAX_MODULE_LINES (the tests' and benchmarks' too); no function over MAX_FUNCTION_LINES, but in the suites,
    whose diagnosis ladders are tables of mistakes."""
    modules = [p for package in PACKAGES for p in _modules(package).values()]
    sources = [*modules, *(p for folder in ("tests", "benchmarks", "solutions") for p in (ROOT / folder).rglob("*.py"))]
    too_long = {str(p.relative_to(ROOT)): n for p in sources if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert too_long == {}
    long_functions = {f"{p.relative_to(ROOT)}:{name}": n for p in modules
                      if "suites" not in p.relative_to(ROOT).parts
                      for name, n in _functions(p) if n > MAX_FUNCTION_LINES}
    assert long_functions == {}


def _layout_rows():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = line.split(" | ")
        first = re.search(r"`([^`]+)`", cells[0]) if line.startswith("| `") else None
        if first:
            rows.append((first.group(1), line))
    return rows


def unlisted_modules(rows, paths):
    """The module paths (relative, with /) that no layout row names: by the row's own path (a
    pattern such as `notes*.py` or `test_<name>.py`), by its path relative to the row's folder,
    or by its dotted name."""
    missing = []
    for path in paths:
        dotted = path.removesuffix(".py").replace("/", ".")
        for where, row in rows:
            folder = where if where.endswith("/") else posixpath.dirname(where) + "/"
            if (fnmatch.fnmatch(path, re.sub(r"<[^>]+>", "*", where))
                    or re.search(rf"(?<![\w.]){re.escape(dotted)}(?![\w.])", row)
                    or (path.startswith(folder) and f"`{path[len(folder):]}`" in row)):
                break
        else:
            missing.append(path)
    return missing


def test_the_layout_check_notices_a_module_left_out():
    rows = [("coursekit/", "| `coursekit/` | `build.py` (...) |"), ("a/notes*.py", "| `a/notes*.py` | `b.py` |"),
            ("c/", "| `c/` | (`python -m c.d`) |")]
    listed = ["coursekit/build.py", "a/notes_x.py", "a/b.py", "c/d.py"]
    assert unlisted_modules(rows, [*listed, "coursekit/new.py", "c/d/e.py"]) == ["coursekit/new.py", "c/d/e.py"]


def test_the_readme_layout_table_names_every_module():
    paths = [str(p.relative_to(ROOT)) for package in PACKAGES for p in _modules(package).values()
             if p.name != "__init__.py"]
    assert unlisted_modules(_layout_rows(), paths) == []
