"""Real Unix accounts for the JupyterHub test, and commands run as them: each account is made
fresh (`useradd`) and removed at the end, also on failure; a command that runs over its time has
its whole process group stopped (pip's children too)."""

import pwd
import secrets
import shutil
import subprocess
from contextlib import contextmanager, suppress

from processes import stop_groups

from autograder.kernel import runtime_image

CALL_TIMEOUT = 300  # seconds for one command or API call (a class's autograde is the slowest)


def run(argv, cwd=None, timeout=CALL_TIMEOUT, check=True):
    """`argv` to its end; on a timeout its whole process group is killed (pip's children too)."""
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_groups([process], grace=5)
        raise
    done = subprocess.CompletedProcess(argv, process.returncode, output)
    assert not check or done.returncode == 0, f"{' '.join(map(str, argv))}: {done.returncode}\n{output[-4000:]}"
    return done


def as_user(user, argv, bin_dirs, cwd=None, extra_env=(), check=True):
    """`argv` as `user`, in a clean environment: their home, `bin_dirs` first on PATH."""
    home = pwd.getpwnam(user).pw_dir
    path = ":".join([*map(str, bin_dirs), "/usr/bin", "/bin"])
    env = [f"HOME={home}", f"USER={user}", f"LOGNAME={user}", f"PATH={path}", "MPLBACKEND=Agg",
           "PYTHONWARNINGS=ignore", *extra_env]
    return run(["runuser", "-u", user, "--", "env", "-i", *env, *map(str, argv)], cwd=cwd or home, check=check)


@contextmanager
def accounts(*roles):
    """A fresh Unix account per role, with a home; every one removed at the end."""
    tag = secrets.token_hex(3)
    names = {role: f"ck{tag}{role}"[:32] for role in roles}
    try:
        for name in names.values():
            run(["useradd", "--create-home", "--shell", "/bin/bash", name])
        yield names
    finally:
        for name in names.values():
            with suppress(Exception):
                # A user's kernel image, if it graded (runtime_image: a tmpfs outlives the account).
                shutil.rmtree(runtime_image.users_home(pwd.getpwnam(name).pw_uid), ignore_errors=True)
            with suppress(Exception):
                run(["userdel", "--force", "--remove", name], check=False)
