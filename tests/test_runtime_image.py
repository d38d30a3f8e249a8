"""The kernel image (`autograder/kernel/runtime_image.py`): what goes in, who may own it, when it
goes, and what grading does without one. That kernels read only from it is `test_name_cache.py`'s."""

import fcntl
import os
import stat
import subprocess
from pathlib import Path

import pytest

from autograder.kernel import runtime_image, sandbox


def test_the_image_holds_what_a_kernel_imports_and_nothing_of_the_grader():
    names = {d.metadata["Name"].lower() for d in runtime_image.kernel_distributions()}
    assert {"numpy", "torch", "matplotlib", "ipykernel", "pyzmq", "traitlets"} <= names, names
    assert not names & {"nbgrader", "dask", "distributed", "jupyterlab", "self-attention-course"}, names
    root = runtime_image.image().root  # this machine's, built once for every test
    assert (root / runtime_image.COMPLETE).read_text() == root.name == runtime_image.key()  # its key, not a file's name


def test_an_image_folder_someone_else_could_write_is_never_used(tmp_path):
    ours = tmp_path / "ours"
    ours.mkdir(mode=0o755)
    assert runtime_image.trusted(ours) == ours
    (tmp_path / "link").symlink_to(ours)
    with pytest.raises(PermissionError):
        runtime_image.trusted(tmp_path / "link")
    ours.chmod(0o775)
    with pytest.raises(PermissionError):
        runtime_image.trusted(ours)
    if os.getuid() == 0:  # a folder another user made first (/dev/shm is everyone's)
        ours.chmod(0o755)
        os.chown(ours, 65534, 65534)
        with pytest.raises(PermissionError):
            runtime_image.trusted(ours)


def test_a_users_image_folder_is_named_by_a_secret_no_other_user_can_read(tmp_path, monkeypatch):
    """Red-teamed in the seventeenth session: another local user (a student with a shell on the hub's
    machine) who made /dev/shm/coursekit-kernel-image-<uid> first turned the image off for every kernel a
    grader who is not root ran. The folder's name now holds a secret in the grading user's home."""
    monkeypatch.setattr(runtime_image, "_home_of", lambda uid: tmp_path)
    uid = os.getuid()
    home = runtime_image.users_home(uid, make=True)
    secret = tmp_path / runtime_image.SECRET
    assert home.parent == Path("/dev/shm") and secret.read_text() in home.name
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and stat.S_IMODE(secret.parent.stat().st_mode) == 0o700
    assert runtime_image.users_home(uid, make=True) == home == runtime_image.users_home(uid)  # kept, not made anew
    secret.chmod(0o644)  # others can read it
    with pytest.raises(PermissionError):
        runtime_image.users_home(uid)
    secret.chmod(0o600)
    secret.write_text("0" * 31)  # no secret at all
    with pytest.raises(PermissionError):
        runtime_image.users_home(uid)


def test_an_image_is_removed_only_once_no_process_reads_it(tmp_path):
    for name in ("current", "read", "unread", "unfinished"):
        (tmp_path / name).mkdir()
    for name in ("current", "read", "unread"):
        (tmp_path / name / runtime_image.IN_USE).touch()
    reader = os.open(tmp_path / "read" / runtime_image.IN_USE, os.O_RDONLY)
    try:
        fcntl.flock(reader, fcntl.LOCK_SH)  # as a grading process whose kernels read it holds it
        runtime_image.remove_unused(tmp_path, keep="current")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "read"]
    finally:
        os.close(reader)
    runtime_image.remove_unused(tmp_path, keep="current")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current"]


def test_without_an_image_kernels_read_the_disk_and_grading_says_so(monkeypatch, capfd):
    def no_room():
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runtime_image, "image", no_room)
    sandbox.kernel_image.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="no kernel image could be made"):
            assert sandbox.kernel_image() is None
        assert "WARNING: no kernel image could be made" in capfd.readouterr().err
        enclosure = sandbox.Enclosure(prefix="judge-test-no-image-")
        try:
            binds = [enclosure.view[i + 2] for i, a in enumerate(enclosure.view) if a == "--ro-bind"]
            assert "/usr" in binds and all(runtime_image.IMAGE_MOUNT.as_posix() not in a for a in enclosure.view)
        finally:
            enclosure.close()
    finally:
        sandbox.kernel_image.cache_clear()


@pytest.mark.skipif(not sandbox.available(), reason="the image is the sandbox's")
def test_a_notebooks_shell_lines_and_programs_run_in_its_kernel(tmp_path):
    """A student's `!` line, or a program run with subprocess, runs as it did on the disk's files:
    without a shell in the image, the line raised and the rest of its cell was lost."""
    from test_judge import notebook, printed

    from autograder.judge import judge_notebook

    cell = "!echo shell ran && ls / > /dev/null\nimport subprocess\nsubprocess.run(['sleep', '0'], check=True)\nprint('cell ended')"
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [cell, "!no-such-program"]))
    assert printed(judged, 0).split() == ["shell", "ran", "cell", "ended"], printed(judged, 0)
    assert "not found" in printed(judged, 1)


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder in another user's name needs root")
def test_a_users_image_folder_another_user_made_first_is_named_anew(tmp_path, monkeypatch):
    """Red-teamed in r48: the secret is in the folder's name, which anyone can read by listing /dev/shm. Once
    the folder is gone (the machine restarted, /dev/shm with it) another user could make it first, and every
    kernel the grader ran went without an image again. Then the secret is replaced, and the folder named anew."""
    monkeypatch.setattr(runtime_image, "_home_of", lambda uid: tmp_path)
    uid = os.getuid()
    seen = runtime_image.users_home(uid, make=True)  # what a listing of /dev/shm told the other user
    made = []
    try:
        seen.mkdir(mode=0o755)
        os.chown(seen, 65534, 65534)
        made.append(seen)
        home = runtime_image._users_own_home(uid)
        made.append(home)
        assert home != seen and home == runtime_image.users_home(uid) and runtime_image.trusted(home) == home
    finally:
        for folder in made:
            folder.rmdir()


@pytest.mark.skipif(os.getuid() != 0, reason="opening the locks as another user needs root")
def test_no_other_user_can_hold_the_images_locks():
    """Red-teamed in r48: the image folder's lock and an image's IN_USE were readable by anyone, and a lock
    needs only a file opened for reading: a student with a shell on the machine who held either with
    LOCK_EX stalled every grading process there in `image()`, for as long as they liked."""
    root = runtime_image.image().root
    hold = ("import fcntl, os, sys\n"
            "for path in sys.argv[1:]:\n"
            "    fcntl.flock(os.open(path, os.O_RDONLY), fcntl.LOCK_EX | fcntl.LOCK_NB)\n")
    for path in (root.parent / ".lock", root / runtime_image.IN_USE):
        tried = subprocess.run(["/usr/bin/python3", "-c", hold, str(path)], user=65534, group=65534,
                               capture_output=True, text=True, timeout=60)
        assert "PermissionError" in tried.stderr, (path, tried.stderr)
