"""A process that does what a closing Dask worker of `coursekit autograde` does at its end:
it has a warm parent and an exit handler of its own (registered first, as Dask's are), then
the `QuickExit` plugin's teardown runs, and the process exits with status 3.

argv: a file the earlier exit handler would write, and a file to write the warm parent's folder to."""

import atexit
import sys
from pathlib import Path

import coursekit  # noqa: F401 - first, as in every entry point
from autograder.kernel import warm as warm_parents
from coursekit.quick_exit import QuickExit

handler_ran, folder = map(Path, sys.argv[1:3])
atexit.register(handler_ran.write_text, "the interpreter's teardown ran")
warm = warm_parents.warm_parent()
folder.write_text(str(warm.enclosure.root) if warm else "")
QuickExit().teardown(worker=None)
sys.exit(3)
