"""The kernels' copies of the files handed in beside the notebook, read from outside while they are held.

Each kernel works in a copy of the submission folder on a tmpfs of its own (`zygote`): memory in RAM,
written before any cell runs, which a call can write in place without a page more being charged. 05's
memory cases count files in RAM as the call's (`Envelope.shared`), which failed an honest notebook
handed in beside a 54 MB file (red-team round r46); the copies were then left out by their size,
so a call could keep its whole score matrix in a file handed in for it, or in a file of the same size
made to replace one. Now only the pages of a copy that still hold what was handed in are left out,
and any of them that holds something else after the call counts as the call's.

The judge reads a kernel's copy through /proc/PID/root of a process in the kernel's mount namespace,
one name at a time, following no link (the kernel may have put one anywhere in its folder), and reads
the original in the job's own `submission` folder, which the kernel sees read-only.
"""

import os
import stat
from pathlib import Path

from autograder.kernel import procfs
from autograder.no_links import open_below

CHUNK = 256 * procfs.PAGE  # read at once; compared whole first, page by page only where they differ


def _open_file_below(root_fd, parts):
    """A descriptor for the regular file at `parts` below the folder `root_fd` (`no_links.open_below`);
    None when anything is not what it should be."""
    try:
        file_fd = open_below(".", parts, dir_fd=root_fd)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        os.close(file_fd)
        return None
    return file_fd


def _same_pages(original_fd, copy_fd):
    """The offsets of the pages where the copy holds what the original does."""
    offset = 0
    while (data := os.pread(copy_fd, CHUNK, offset)) and (handed := os.pread(original_fd, CHUNK, offset)):
        if data == handed:
            yield from range(offset, offset + len(data), procfs.PAGE)
        else:
            yield from (offset + start for start in range(0, min(len(data), len(handed)), procfs.PAGE)
                        if data[start:start + procfs.PAGE] == handed[start:start + procfs.PAGE])
        offset += CHUNK


def _kernel_roots(pids, jobs):
    """{job: a descriptor for the kernel's view of its `work` folder}, for those of `jobs` whose kernel
    is among `pids`: found from the mount each kernel's namespace has there."""
    roots, seen = {}, set()
    wanted = {str(Path(job) / "work"): job for job in jobs}
    for pid in pids:
        try:
            namespace = os.stat(f"/proc/{pid}/ns/mnt").st_ino
            if namespace in seen:
                continue
            seen.add(namespace)
            with open(f"/proc/{pid}/mountinfo") as mounts:
                points = {line.split()[4] for line in mounts if " - tmpfs " in line}
            for point in points & set(wanted) - {str(Path(j) / "work") for j in roots}:
                roots[wanted[point]] = os.open(f"/proc/{pid}/root{point}", os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
    return roots


def _compare(pids, jobs, wanted=None):
    """{(job, file, offset)} of the pages of the kernels' copies (kernels among `pids`, working in `jobs`) that
    hold what was handed in: of every file handed in, or of those `wanted` ({(job, file)})."""
    same = set()
    roots = _kernel_roots(pids, jobs)
    try:
        for job, root in roots.items():
            original = Path(job) / "submission"
            for folder, _, names in os.walk(original):
                for name in names:
                    path = Path(folder) / name
                    relative = path.relative_to(original)
                    if path.is_symlink() or not path.is_file() or wanted is not None and (job, relative) not in wanted:
                        continue
                    copy = _open_file_below(root, relative.parts)
                    if copy is None:
                        continue
                    try:
                        with open(path, "rb", buffering=0) as handle:
                            same.update((job, relative, offset) for offset in _same_pages(handle.fileno(), copy))
                    finally:
                        os.close(copy)
    finally:
        for root in roots.values():
            os.close(root)
    return same


def kept_pages(pids, jobs):
    """{(job, file, offset)} of every page of the kernels' copies (kernels among `pids`, working in `jobs`) that
    holds what was handed in (the original, in the job's `submission`, which the kernel cannot write)."""
    return _compare(pids, jobs)


def changed_bytes(pids, kept):
    """The bytes of the pages `kept_pages` found (`kept`) that hold something else now, or are gone."""
    still_kept = _compare(pids, {job for job, _, _ in kept}, {(job, relative) for job, relative, _ in kept})
    return procfs.PAGE * len(kept - still_kept)
