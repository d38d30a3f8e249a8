"""Regenerate (or check) the committed student release `assignments/` with nbgrader.

    python -m coursekit.release           # rewrite assignments/ from source/
    python -m coursekit.release --check   # fail if assignments/ is not what source/ generates

Both run `nbgrader generate_assignment` in a scratch course directory, so the repository's own
gradebook is never touched.
"""

import argparse
import sys
import tempfile
from pathlib import Path

from autograder.steps import ASSIGNMENTS
from coursekit import generated, grading
from coursekit.paths import RELEASE


def generate(scratch, assignments):
    course = grading.prepare(Path(scratch) / "course")
    for assignment in assignments:
        grading.release(course, assignment)
    return course / "assignments"


def outputs(generated_folder, committed):
    """{file under `committed`: its bytes as nbgrader generated it under `generated_folder`}."""
    return {committed / p.relative_to(generated_folder): p.read_bytes()
            for p in generated_folder.rglob("*") if p.is_file()}


def stale(release_outputs, committed=RELEASE):
    """What of `committed` is not `release_outputs` ({file: bytes}, from `outputs`): [] when it is."""
    return generated.stale(release_outputs, owned=committed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        release = outputs(generate(scratch, ASSIGNMENTS), RELEASE)
        return generated.regenerate_or_check(release, "python -m coursekit.release", args.check, owned=RELEASE)


if __name__ == "__main__":
    sys.exit(main())
