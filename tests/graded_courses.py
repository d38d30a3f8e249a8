"""Course directories as the class-grading tests compare them: copied without reading a link or
a FIFO, and read back as their autograded files, less what differs from run to run (timestamps,
how a kernel chunks a print, the durations a demo measures). Their gradebooks are read by
`coursekit.grading.gradebook_contents`, which benchmarks/class_grading.py compares too."""

import json
import os
import re
import shutil
import stat
from pathlib import Path


def copy_course(template, tmp_path, name):
    """A copy of the course directory, links as links and FIFOs as FIFOs (never read)."""
    fifos = []

    def fifos_of(folder, names):
        found = [n for n in names if stat.S_ISFIFO(os.lstat(os.path.join(folder, n)).st_mode)]
        fifos.extend(Path(folder, n).relative_to(template) for n in found)
        return found

    copy = Path(shutil.copytree(template, tmp_path / name, symlinks=True, ignore=fifos_of))
    for relative in fifos:
        os.mkfifo(copy / relative)
    return copy


# What two runs of the same notebook print differently: the durations a demo measures ("loop
# over 128 queries: 20.67 ms") and its verdict on them ("(2.7 times faster here)", or "(no faster
# this time: ...)" or even "(much slower than the loop: ...)" on a busy machine).
MEASURED = re.compile(r" *\d+(?:\.\d+)?(?= ?(?:ms|s|µs)\b)"
                      r"|\((?:[\d.]+ times faster here|no faster this time[^)]*|much slower than the loop[^)]*)\)")


def _streams_joined(outputs):
    """Outputs with consecutive writes to one stream joined (how a kernel chunks a print into
    messages varies from run to run: "text" and "\\n" or "text\\n") and measured durations masked."""
    joined = []
    for output in outputs:
        if output.get("output_type") == "stream":
            text = "".join(output["text"]) if isinstance(output["text"], list) else output["text"]
            if joined and joined[-1].get("output_type") == "stream" and joined[-1]["name"] == output["name"]:
                joined[-1]["text"] += text
                continue
            output = dict(output, text=text)
        joined.append(output)
    for output in joined:
        if output.get("output_type") == "stream":
            output["text"] = MEASURED.sub("#", output["text"])
    return joined


def autograded(course):
    """{path: file}, notebooks parsed, without each cell's execution timestamps, with each
    stream's consecutive writes joined and the durations its cells measured masked."""
    files = {}
    for path in sorted((course / "autograded").rglob("*")):
        if path.is_file():
            content = path.read_bytes()
            if path.suffix == ".ipynb":
                content = json.loads(content)
                for cell in content["cells"]:
                    cell.get("metadata", {}).pop("execution", None)
                    if "outputs" in cell:
                        cell["outputs"] = _streams_joined(cell["outputs"])
            files[str(path.relative_to(course))] = content
    return files
