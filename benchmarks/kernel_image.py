"""How long does making the kernel image take, and how big is it?

Makes this environment's kernel image (`autograder/kernel/runtime_image.py`) --runs times, each
into a fresh folder on /dev/shm (removed after), and prints the seconds each took and the image's
size. Grading makes one once per machine and environment, before the first notebook's time starts.

    python benchmarks/kernel_image.py [--runs 3]   (results so far: benchmarks/results.md)
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from autograder.kernel import runtime_image


def size_of(folder):
    return sum(p.lstat().st_size for p in Path(folder).rglob("*") if p.is_file() and not p.is_symlink())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    for run in range(args.runs):
        root = Path(tempfile.mkdtemp(prefix="kernel-image-bench-", dir="/dev/shm"))
        try:
            started = time.perf_counter()
            runtime_image.build(root, runtime_image.key())
            took = time.perf_counter() - started
            print(f"run {run + 1}: {took:.1f} s, {size_of(root) / 1e9:.2f} GB")
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
