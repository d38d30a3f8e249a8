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
