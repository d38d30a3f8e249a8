"""zip_collect's archives, unpacked within a budget: an archive handed in is data, and what it
unpacks to is bounded before anything is written (issue 18: nothing escapes its budget).

nbgrader's `unzip` (setuptools' `unpack_archive`) reads each member of a zip whole into memory
before writing it, and with `tree=True` unpacks every archive found inside, to any depth, with no
bound on either. Zeros compress about a thousandfold, and nesting multiplies: a 785 kB archive
(768 MiB of zeros and a zip of 4 x 256 MiB inside) took the instructor's `nbgrader zip_collect` to
1.6 GB resident and 1.8 GB written under `downloaded/` (red-team round r27); what matches a student
is then copied again into `submitted/`. A larger one fills the machine.

Here each archive (the one handed in, then each found inside it) is unpacked, as nbgrader would,
only if what it states it holds fits what is left of one budget for the archive handed in and
everything inside it: `MAX_UNPACKED_BYTES` and `MAX_UNPACKED_MEMBERS`. The sizes an archive states
are what its reader writes at most (zipfile stops a member at its stated size and fails its
check if there is more; tarfile copies exactly a member's stated size, and a tar's link is
counted as the copy of what it names that nbgrader's unzip writes for it). An archive that does not
fit is left out whole and the instructor is told; its student then has no notebook, which
autograde reports as not graded. An archive neither reader recognises is left to nbgrader's
unpacker, which reports it as before.
"""

import lzma
import math
import os
import posixpath
import shutil
import stat
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

from nbgrader.utils import unzip
from setuptools import archive_util
from setuptools.archive_util import UnrecognizedFormat

from autograder.limits import MAX_EXTENDED_HEADERS, MAX_UNPACKED_BYTES, MAX_UNPACKED_MEMBERS
from coursekit import intake

# What nbgrader's unzip raises on an archive whose members cannot all be read or written, or that is none (its
# reader's errors: zipfile's, a decompressor's, tarfile's, setuptools' for neither; the file system's, for
# members that cannot all be, as a file and a folder of one name), and setuptools' for a member it will not write where
# its name says (above the folder, an absolute path, a backslash: r63's upload stopped zip_collect for the whole class;
# the setuptools of earlier rounds skipped such a member without a word)
UNREADABLE = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, RuntimeError, NotImplementedError,
              ValueError, tarfile.TarError, UnrecognizedFormat, getattr(archive_util, "UnsafeMember", UnrecognizedFormat),
              OSError)


class Budget:
    """What is left to unpack from one archive handed in (nested archives included)."""

    def __init__(self):
        self.size, self.members = MAX_UNPACKED_BYTES, MAX_UNPACKED_MEMBERS

    def take(self, archive):
        """Why `archive` may not be unpacked ("" if it may, and then what it holds is spent)."""
        try:
            size, members = stated(archive, self.size, self.members)
        except Unbounded as error:
            return str(error)
        except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, ValueError):
            return ""  # not an archive either reader takes: nbgrader's unpacker says what is wrong
        if size > self.size or members > self.members:
            return (f"it unpacks to more than {MAX_UNPACKED_BYTES / 1024**2:g} MiB or {MAX_UNPACKED_MEMBERS} "
                    "files, archives inside it included (MAX_UNPACKED_BYTES, MAX_UNPACKED_MEMBERS)")
        self.size -= size
        self.members -= members
        return ""


class Unbounded(Exception):
    """An archive whose reading alone takes more than its budget (not a tarfile error: tarfile lets it
    through, and the archive is left out rather than handed to nbgrader's unpacker)."""


# The headers tarfile reads whole into memory before the member they describe, and keeps while it
# reads the next: a long name or link (GNU), pax records.
EXTENDED_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                  tarfile.SOLARIS_XHDTYPE)


def _charged_member(left):
    """A TarInfo class for reading one tar: each extended header (EXTENDED_TYPES) is charged to
    `left` ({"bytes": ..., "chain": 0}) before tarfile reads it, at most MAX_EXTENDED_HEADERS before
    one member, and a sparse file, whose map tarfile reads without bound, is refused: nbgrader's
    unpacker, which reads the archive again, reads only what was charged here. A 4.7 MB tar.gz of
    four 256 MiB long names, each kept while the next was read, took the instructor's process to
    1.1 GB before any member (red-team round r44)."""

    class Charged(tarfile.TarInfo):
        def _proc_member(self, opened):
            if self.type == tarfile.GNUTYPE_SPARSE:
                raise Unbounded("it holds a sparse file, whose map tarfile reads without bound")
            extended = self.type in EXTENDED_TYPES
            left["chain"] = left["chain"] + 1 if extended else 0
            left["bytes"] -= self.size if extended else 0
            if left["chain"] > MAX_EXTENDED_HEADERS or left["bytes"] < 0:
                raise Unbounded(f"its headers alone hold more than {MAX_UNPACKED_BYTES / 1024**2:g} MiB, or more "
                                f"than {MAX_EXTENDED_HEADERS} of them describe one file (MAX_EXTENDED_HEADERS)")
            return super()._proc_member(opened)

        def _proc_gnusparse_10(self, *args):
            raise Unbounded("it holds a sparse file, whose map tarfile reads without bound")

    return Charged


def stated(archive, size_left, members_left):
    """(bytes, members) `archive` states it unpacks to; a tar is read only until either passes
    what is left (its headers lie between its members: reading on decompresses them). Raises
    Unbounded where reading its headers would pass what is left (`_charged_member`)."""
    if zipfile.is_zipfile(archive):
        directory, members = _zip_directory(archive, members_left)
        if members > members_left:
            return 0, members
        if directory > size_left:
            raise Unbounded(f"its list of files alone holds more than {MAX_UNPACKED_BYTES / 1024**2:g} MiB")
        with zipfile.ZipFile(archive) as opened:
            # setuptools' unpack_zipfile reads each member by its name, which zipfile answers with the
            # last member of that name: each of a name's members is a copy of that one (r54: empty members
            # named as a large one behind them wrote it once each)
            infos = opened.infolist()
            return sum(opened.getinfo(info.filename).file_size for info in infos), len(infos)
    size = members = 0
    links = []
    headers = {"bytes": size_left, "chain": 0}
    with tarfile.open(archive, tarinfo=_charged_member(headers)) as opened:
        for member in opened:
            size += member.size if member.isreg() else 0
            links += [member] if member.islnk() or member.issym() else []
            members += 1
            if size > size_left or members > members_left:
                return size, members
        # nbgrader's unzip (setuptools' unpack_tarfile) writes each hard or symbolic link as a whole
        # copy of the member it names, following links to links; a link states no size (r39: a 5 kB
        # tar.gz of one 8 MB file and 40 links wrote 328 MB). By name, the last member wins, as there.
        by_name = {member.name: member for member in opened.getmembers()}
        for link in links:
            size += _linked_size(link, by_name)
    return size + size_left - headers["bytes"], members


def _zip_directory(archive, members_left):
    """(bytes of `archive`'s central directory, its records, counted only until they pass
    `members_left`), read record by record, where zipfile reads the whole directory into memory and
    makes an object of each record before anyone can count them: a 5.1 MB upload whose zip inside
    lists 2 million empty files (a record is 46 bytes and a name, and they compress twentyfold) took
    the instructor's zip_collect 34 s and about 1 GB, and the bytes budget lets a zip inside list 9
    million (red-team round r46). The directory is found as zipfile finds it."""
    with open(archive, "rb") as file:
        end = zipfile._EndRecData(file)
        if not end:
            raise zipfile.BadZipFile("no end of central directory")
        size = end[zipfile._ECD_SIZE]
        start = end[zipfile._ECD_LOCATION] - size
        if end[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:
            start -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator
        file.seek(max(start, 0))
        read = members = 0
        while read < size and members <= members_left:
            record = file.read(zipfile.sizeCentralDir)
            if len(record) != zipfile.sizeCentralDir:
                break  # truncated: zipfile says so
            fields = struct.unpack(zipfile.structCentralDir, record)
            file.seek(fields[zipfile._CD_FILENAME_LENGTH] + fields[zipfile._CD_EXTRA_FIELD_LENGTH]
                      + fields[zipfile._CD_COMMENT_LENGTH], os.SEEK_CUR)
            read, members = file.tell() - start, members + 1
    return size, members


def _linked_size(link, by_name):
    """What setuptools' `_resolve_tar_file_or_dir` writes for `link`: the size of the regular file at
    the end of its links (0 for a directory or nothing). Links that name each other never end
    there (zip_collect held forever): unbounded here, so the archive is left out."""
    seen = set()
    while link is not None and (link.islnk() or link.issym()):
        if id(link) in seen:
            return math.inf
        seen.add(id(link))
        target = link.linkname
        if link.issym():
            target = posixpath.normpath(posixpath.join(posixpath.dirname(link.name), target))
        link = by_name.get(target)
    return link.size if link is not None and link.isreg() else 0


def _own_folder(archive, dest):
    """Where nbgrader's unzip(create_own_folder=True) puts what `archive` holds."""
    name = os.path.splitext(os.path.basename(archive))[0]
    stem, ext = os.path.splitext(name)
    return Path(dest) / (stem if ext == ".tar" else name)


def unpack(archive, dest, zip_ext, log, budget=None):
    """nbgrader's `unzip(archive, dest, zip_ext, create_own_folder=True, tree=True)`, each archive
    unpacked only within one `Budget` (nested ones unpacked flat into their own folders beside
    them, in the order nbgrader's tree walk finds them; the walk does not recurse). Returns
    (folder, archive) for each archive unpacked, `archive`'s own first: the names below a nested
    archive's folder are whoever made that archive's, a student's (`coursekit/zip_names.py`)."""
    budget = budget or Budget()
    extensions = tuple(zip_ext)
    pending, seen, unpacked = [Path(archive)], set(), []
    top = _own_folder(archive, dest)
    while pending:
        path = pending.pop(0)
        seen.add(path)
        reason = budget.take(path)
        if reason:
            log.warning("zip_collect: left out %s: %s", path, reason)
            continue
        where = dest if path == Path(archive) else path.parent
        folder = _own_folder(path, where)
        new = not os.path.lexists(folder)
        try:
            unzip(str(path), str(where), zip_ext=zip_ext, create_own_folder=True, tree=False)
        except UNREADABLE as error:
            # A member its list shows but no reader can read (a failed CRC, a password, a compression
            # zipfile lacks) or that cannot be written, or no archive at all: nbgrader's unzip raised, and
            # zip_collect stopped there, no classmate's upload collected (r54). Left out whole, as one past
            # the budget.
            log.warning("zip_collect: left out %s: it could not be unpacked (%s)", path, type(error).__name__)
            if new:
                shutil.rmtree(folder, ignore_errors=True)
            continue
        intake.disarm(folder)  # it writes each member's mode as the archive states
        unpacked.append((folder, path))
        if not pending:  # the next round of nbgrader's walk: every archive under `top` not yet unpacked
            pending = [p for p, _, info in intake.entries_under(top)
                       if stat.S_ISREG(info.st_mode) and p.suffix in extensions and p not in seen]
    return unpacked
