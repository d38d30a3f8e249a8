"""The instructor's second opinion on each submission, outside the student's kernel.

Grading inside the student's kernel is what nbgrader does, and a determined submission can
fool code that shares its process. So every submission is also
  1. scanned: code that rebinds numpy/torch/builtins, imports the grader or the reference,
     reads grader files, exits the process, or reaches into the interpreter is named;
  2. regraded: the hidden suites run again outside the kernel (`autograder.regrade`): in a
     memory-capped child forked from a process that imported the grader first and blocks the
     reference, with the student's cells loaded after it;
and any step where nbgrader's points differ from the regrade is flagged, as are failed runs.
"""

import ast
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.notebook import FLAG

REGRADE_TIMEOUT = 300

_GUARDED_MODULES = {"np", "numpy", "torch", "F", "nn", "math", "builtins", "functional", "testing", "sys", "os"}
_EXITS = {("sys", "exit"), ("os", "_exit"), ("os", "kill"), ("os", "abort"), ("", "exit"), ("", "quit")}
_INTROSPECTION = {("sys", "modules"), ("sys", "meta_path"), ("sys", "_getframe"), ("gc", "get_objects"),
                  ("gc", "get_referrers"), ("inspect", "stack"), ("sys", "settrace"), ("sys", "setprofile")}
_FORBIDDEN_IMPORTS = {"autograder", "solutions", "ctypes", "importlib"}


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def scan_source(source):
    """Names of suspicious things one cell's code does (empty for ordinary code)."""
    try:
        tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line
                                   for line in source.splitlines()))
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                name = _dotted(target) if isinstance(target, ast.Attribute) else None
                if name and name.split(".")[0] in _GUARDED_MODULES:
                    found.append(f"rebinds {name}")
        elif isinstance(node, ast.Call):
            func = _dotted(node.func) or ""
            owner, _, attr = func.rpartition(".")
            if (owner.split(".")[-1] if owner else "", attr) in _EXITS:
                found.append(f"calls {func}()")
            if func in ("setattr", "delattr") and node.args and (_dotted(node.args[0]) or "").split(".")[0] in _GUARDED_MODULES:
                found.append(f"{func}() on {_dotted(node.args[0])}")
            if func in ("__import__", "importlib.import_module", "exec", "eval", "compile"):
                found.append(f"calls {func}()")
            if func == "getattr" and len(node.args) > 1 and _folded(node.args[1]) in ("__import__", "import_module"):
                found.append(f"calls {_folded(node.args[1])}() through getattr")
            if func in ("open", "np.load", "numpy.load", "torch.load") or func.endswith(".read_text"):
                text = ast.unparse(node)
                if any(word in text for word in ("autograder", "fixtures", "solutions", ".npz", "site-packages")):
                    found.append(f"reads grader files: {text[:80]}")
            if "stderr" in ast.unparse(node) and attr in ("write", "print", "warn"):
                found.append("writes to stderr")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] in _FORBIDDEN_IMPORTS:
                    found.append(f"imports {module}")
        elif isinstance(node, ast.Attribute):
            name = _dotted(node) or ""
            owner, _, attr = name.rpartition(".")
            if (owner, attr) in _INTROSPECTION:
                found.append(f"uses {name}")
        elif isinstance(node, (ast.Constant, ast.BinOp)):
            # a literal, or literals glued together ("auto" + "grader") to dodge this scan
            text = _folded(node)
            if text is not None and ("autograder" in text or "solutions" in text.split(".")[0:1]):
                found.append(f"mentions {text[:40]!r}")
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            found.append("uses __builtins__")
    return sorted(set(found))


def _folded(node):
    """The string a constant expression of str literals and `+` evaluates to, else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def scan_notebook(path):
    """[(cell index, finding)] for the submission's code cells, or a reason it cannot be read."""
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        return [(-1, f"not a readable notebook ({type(error).__name__})")]
    if nb.get("nbformat") != 4:
        return [(-1, f"nbformat {nb.get('nbformat')!r}, not 4")]
    findings = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        findings += [(index, f) for f in scan_source(source)]
    return findings


def regrade_many(items, workers=2):
    """[(notebook, assignment)] -> [(points {step: points} or None, problem)], regraded outside
    the kernel by `autograder.regrade` (one warmed-up process, a forked child per notebook)."""
    if not items:
        return []
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "regrade.json"
        command = [sys.executable, "-m", "autograder.regrade", "--out", str(out),
                   "--workers", str(workers), *(f"{path}:{assignment}" for path, assignment in items)]
        env = dict(os.environ, PYTHONWARNINGS="ignore", MPLBACKEND="Agg")
        process = subprocess.Popen(command, cwd=scratch, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            process.wait(timeout=REGRADE_TIMEOUT * (1 + len(items) // workers))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if not out.exists():
            return [(None, f"regrade process failed (exit {process.returncode})")] * len(items)
        return [_summarise(data) for data in json.loads(out.read_text())]


def _summarise(data):
    if "error" in data:
        return None, data["error"]
    points = {step: entry["points"] for step, entry in data["steps"].items()}
    tampered = sorted({t for entry in data["steps"].values() for t in entry["tampered"]})
    problems = ["tampered with " + ", ".join(tampered)] if tampered else []
    if data.get("rebound_at_load"):
        problems.append("top-level code rebinds " + ", ".join(data["rebound_at_load"]))
    # Ordinary errors (a stub that still raises) are the student's business; these are not.
    problems += [f"code cell {i}: {m}" if i >= 0 else m for i, m in data["load_errors"]
                 if any(word in m for word in ("did not finish", "SystemExit", "MemoryError",
                                               "KeyboardInterrupt", "not an nbformat", "JSON"))]
    return points, "; ".join(problems)


def kernel_flags(autograded_path):
    """Lines the in-kernel grader marked for the instructor."""
    try:
        nb = json.loads(Path(autograded_path).read_text())
    except (OSError, ValueError):
        return []
    found = []
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            found += [line.strip() for line in text.splitlines() if FLAG in line]
    return found


def audit_many(submissions, workers=2):
    """Flags for each of [(submitted, autograded, assignment, nbgrader_points)], in order.
    `nbgrader_points` is {step: points or None}, or None when autograde produced nothing."""
    regrades = regrade_many([(s[0], s[2]) for s in submissions], workers)
    return [_flags(*submission, regraded) for submission, regraded in zip(submissions, regrades)]


def _flags(submitted, autograded, assignment, nbgrader_points, regraded):
    flags = [f"code cell {i}: {f}" if i >= 0 else f for i, f in scan_notebook(submitted)]
    flags += kernel_flags(autograded)
    points, problem = regraded
    if problem:
        flags.append(problem)
    if points is not None and nbgrader_points is not None:
        for step, honest in sorted(points.items()):
            given = nbgrader_points.get(step)
            if given is not None and abs(given - honest) > 1e-6:
                flags.append(f"{step}: nbgrader gave {given:g}, the out-of-kernel regrade {honest:g}")
    return flags
