"""A closing worker ends its process without the interpreter's teardown (`coursekit/quick_exit.py`),
after stopping its warm parent."""

import subprocess
import sys
from pathlib import Path

import pytest

from autograder.kernel import sandbox

SCRIPT = Path(__file__).with_name("scripts") / "closing_worker.py"


@pytest.mark.skipif(not sandbox.available(), reason="the warm parent runs only in the sandbox")
def test_a_closing_worker_stops_its_warm_parent_and_skips_the_teardown(tmp_path):
    handler_ran, folder = tmp_path / "handler-ran", tmp_path / "warm-parent-folder"
    run = subprocess.run([sys.executable, str(SCRIPT), str(handler_ran), str(folder)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]  # its own exit, before sys.exit(3) went further
    assert not handler_ran.exists()  # no exit handler registered before it ran
    assert folder.read_text() and not Path(folder.read_text()).exists()  # the warm parent is gone
