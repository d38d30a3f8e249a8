"""The code base passes the project's ruff and mypy configurations (pyproject.toml)."""

import shutil
import subprocess
import sys
from pathlib import Path

from coursekit.paths import ROOT


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    result = subprocess.run([ruff, "check", "--output-format", "concise",
                             "autograder", "coursekit", "solutions", "tests", "benchmarks"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_typed_contracts_type_check():
    """mypy, pinned, over the modules pyproject.toml's [tool.mypy] lists."""
    mypy = shutil.which("mypy") or str(Path(sys.executable).with_name("mypy"))
    result = subprocess.run([mypy], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_environment_variable_the_code_reads_is_listed_in_the_readme():
    import re

    reads = re.compile(r"""(?:environ(?:\.get)?[\[(]|getenv\()\s*["']([A-Z][A-Z0-9_]+)["']""")
    listed = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", (ROOT / "README.md").read_text(), re.M))
    found = {}
    for folder in ("autograder", "coursekit", "content", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            for name in reads.findall(path.read_text(errors="replace")):
                found.setdefault(name, str(path.relative_to(ROOT)))
    for name in reads.findall((ROOT / "nbgrader_config.py").read_text()):
        found.setdefault(name, "nbgrader_config.py")
    ordinary = {"PATH", "HOME", "USER"}  # the system's own, read as any program does
    assert {n: p for n, p in found.items() if n not in listed | ordinary} == {}
