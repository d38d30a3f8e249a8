"""Opening a file below a folder someone else can change, following no link on the way."""

import os


def open_below(top, parts, dir_fd=None):
    """A read-only descriptor for the entry `parts` (a path's names) below the folder `top` (relative to
    `dir_fd`, where given), opened one name at a time, none of them followed if it is a link. O_NOFOLLOW on
    the whole path refuses a link in its last name only: a student who swapped a folder for a link between
    a walk and a copy had collect copy, as theirs, a file of the link's folder (red-team round r46), and a
    kernel may put a link anywhere in its working copy. Raises OSError; the caller checks what it opened."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        for name in parts[:-1]:
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = below
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
