"""zip_collect unpacks an archive within a budget (`coursekit/archives.py`): a small archive of
zeros, or one nesting others, unpacked to gigabytes in the instructor's memory and disk
(red-team round r27: 785 kB became 1.8 GB on disk and 1.6 GB resident). The budget is made
small here, so the archives stay small."""

import io
import logging
import shutil
import struct
import tarfile
import tracemalloc
import zipfile

import pytest
from nbgrader.utils import unzip

from coursekit import archives

A = "01_simplified_self_attention"
MB = 1 << 20


def _zeros(archive, name, size):
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with archive.open(info, "w") as out:
        out.write(bytes(size))


def _archive(path, inner_sizes=(), notebook=b"{}"):
    """A zip holding a notebook and, if `inner_sizes`, inner.zip holding files of those sizes."""
    if inner_sizes:
        with zipfile.ZipFile(path.with_name("inner.zip"), "w") as inner:
            for i, size in enumerate(inner_sizes):
                _zeros(inner, f"part{i}.bin", size)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"eve/{A}.ipynb", notebook)
        if inner_sizes:
            archive.write(path.with_name("inner.zip"), "eve/inner.zip")
    return path


def _tree(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_size if p.is_file() else None) for p in folder.rglob("*"))


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setattr(archives, "MAX_UNPACKED_BYTES", 4 * MB)
    monkeypatch.setattr(archives, "MAX_UNPACKED_MEMBERS", 50)


def test_an_archive_within_the_budget_unpacks_as_nbgraders_unzip(tmp_path, small_budget):
    archive = _archive(tmp_path / "eve.zip", inner_sizes=(MB, MB))
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir(), theirs.mkdir()
    archives.unpack(archive, ours, [".zip", ".gz"], logging.getLogger("test"))
    unzip(str(archive), str(theirs), zip_ext=[".zip", ".gz"], create_own_folder=True, tree=True)
    assert _tree(ours) == _tree(theirs) and (ours / "eve" / "eve" / "inner" / "part1.bin").stat().st_size == MB


def test_a_nested_archive_past_the_budget_is_left_out_and_said(tmp_path, small_budget, caplog):
    archive = _archive(tmp_path / "eve.zip", inner_sizes=(3 * MB, 3 * MB))  # 6 MB inside, a few kB handed in
    assert archive.stat().st_size < 64 * 1024
    out = tmp_path / "out"
    out.mkdir()
    archives.unpack(archive, out, [".zip"], logging.getLogger("test"))
    assert (out / "eve" / "eve" / f"{A}.ipynb").read_bytes() == b"{}"
    assert not (out / "eve" / "eve" / "inner").exists()
    assert "left out" in caplog.text and "inner.zip" in caplog.text and "MAX_UNPACKED_BYTES" in caplog.text


def test_an_archive_past_the_budget_is_not_unpacked_at_all(tmp_path, small_budget, caplog):
    archive = tmp_path / "eve.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        _zeros(opened, f"eve/{A}.ipynb", 5 * MB)
    out = tmp_path / "out"
    out.mkdir()
    archives.unpack(archive, out, [".zip"], logging.getLogger("test"))
    assert list(out.rglob("*.ipynb")) == [] and "left out" in caplog.text


def test_too_many_members_and_a_tar_are_counted_too(tmp_path, small_budget):
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as opened:
        for i in range(51):
            opened.writestr(f"f{i}", b"")
    assert archives.Budget().take(many) != ""
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "big.bin").write_bytes(bytes(5 * MB))
    tar = shutil.make_archive(str(tmp_path / "big"), "gztar", folder)
    assert archives.Budget().take(tar) != ""
    (folder / "big.bin").write_bytes(bytes(MB))
    tar = shutil.make_archive(str(tmp_path / "small"), "gztar", folder)
    assert archives.Budget().take(tar) == ""


def _linked_tar(path, links):
    """A tar.gz of one 1 MB file and `links` = [(name, type, target)] (tarfile.LNKTYPE or SYMTYPE)."""
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("big.bin")
        info.size = MB
        tar.addfile(info, io.BytesIO(bytes(MB)))
        for name, kind, target in links:
            link = tarfile.TarInfo(name)
            link.type, link.linkname = kind, target
            tar.addfile(link)
    return path


def test_a_tars_links_are_counted_as_the_copies_nbgraders_unzip_writes(tmp_path, small_budget, caplog):
    """Red-teamed in round r39: setuptools' unpack_tarfile (nbgrader's unzip) writes each hard or
    symbolic link as a full copy of what it names, and a link states no size. A 5 kB tar.gz of one
    8 MB file and 40 links to it wrote 328 MB; at the real budget, 512 MB times 10,000 members."""
    links = [(f"hard{i}", tarfile.LNKTYPE, "big.bin") for i in range(3)]
    links += [(f"sub/soft{i}", tarfile.SYMTYPE, "../big.bin") for i in range(2)]
    archive = _linked_tar(tmp_path / "eve.tar.gz", links)  # 6 MB once unpacked, past the 4 MB budget
    assert archives.stated(archive, 100 * MB, 50) == (6 * MB, 6)
    out = tmp_path / "out"
    out.mkdir()
    archives.unpack(archive, out, [".gz"], logging.getLogger("test"))
    assert list(out.rglob("*.bin")) == [] and "left out" in caplog.text
    within = _linked_tar(tmp_path / "ok.tar.gz", links[:2])
    assert archives.Budget().take(within) == ""


def test_a_tar_whose_links_name_each_other_is_left_out(tmp_path, small_budget):
    """setuptools' unpack_tarfile follows a link to a link until it finds a file: two symbolic links
    naming each other held `nbgrader zip_collect` forever (red-team round r39)."""
    archive = _linked_tar(tmp_path / "eve.tar.gz", [("a", tarfile.SYMTYPE, "b"), ("b", tarfile.SYMTYPE, "a")])
    assert archives.Budget().take(archive) != ""


def _header(name, size, kind, pax=None):
    info = tarfile.TarInfo(name)
    info.size, info.type, info.pax_headers = size, kind, pax or {}
    return info.tobuf(format=tarfile.PAX_FORMAT if pax else tarfile.USTAR_FORMAT)


def _headed_tar(path, headers):
    """A tar.gz of `headers` (each a header block and the bytes after it, padded to blocks) and then
    one small notebook."""
    with tarfile.open(path, "w:gz") as tar:
        for block, data in headers:
            tar.fileobj.write(block + data + bytes(-len(data) % tarfile.BLOCKSIZE))
            tar.offset += len(block) + len(data) + (-len(data) % tarfile.BLOCKSIZE)
        info = tarfile.TarInfo("nb.ipynb")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    return path


def test_what_tarfile_reads_whole_before_a_member_is_bounded_too(tmp_path, small_budget):
    """Red-teamed in round r44: tarfile reads a member's long name, long link and pax records whole
    into memory, each holding on to it while it reads the next header, and a sparse file's map
    without bound: a 4.7 MB tar.gz of four 256 MiB long names took the instructor's process to
    1.1 GB while its budget was asked, and was then taken (a member states no size for them); a
    131 kB one whose sparse map counts 64 Mi numbers held it 52 s, and was then taken. Such
    headers are charged to the budget before they are read, at most MAX_EXTENDED_HEADERS of them
    before one member, and a sparse file is left out."""
    name = (b"a" + bytes(5 * MB), tarfile.GNUTYPE_LONGNAME)
    long_name = _headed_tar(tmp_path / "name.tar.gz", [(_header("././@LongLink", 5 * MB + 1, name[1]), name[0])])
    assert archives.Budget().take(long_name) != ""
    chained = _headed_tar(tmp_path / "chain.tar.gz", [(_header("././@LongLink", 2, tarfile.GNUTYPE_LONGNAME), b"a\0")] * 40)
    assert archives.Budget().take(chained) != ""
    pax = _header("x", 0, tarfile.REGTYPE, {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "s"})
    sparse = _headed_tar(tmp_path / "sparse.tar.gz", [(pax, b"1000000\n" + b"0\n" * 20_000)])
    assert archives.Budget().take(sparse) != ""
    fine = _headed_tar(tmp_path / "fine.tar.gz", [(_header("././@LongLink", 300, name[1]), b"b" * 299 + b"\0")])
    assert archives.Budget().take(fine) == ""


def _listed_zip(path, records, name_bytes=8):
    """A zip whose central directory lists `records` empty stored files (names of `name_bytes`), all
    pointing at one local header: the directory is all there is (zip64 end records, for any count)."""
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0) + b"a"
    directory = b"".join(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, 0, 0, 0, name_bytes,
                                     0, 0, 0, 0, 0, 0) + b"%0*d" % (name_bytes, i) for i in range(records))
    end = len(local) + len(directory)
    path.write_bytes(local + directory
                     + struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, records, records, len(directory), len(local))
                     + struct.pack("<IIQI", 0x07064B50, 0, end, 1)
                     + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))
    return path


def test_a_zips_list_of_files_is_counted_before_it_is_read(tmp_path, small_budget, monkeypatch):
    """Red-teamed in round r46: zipfile reads a zip's whole central directory, and makes an object of
    each record, before its members can be counted. A 5.1 MB upload whose zip inside lists 2 million
    empty files took zip_collect 34 s and about 1 GB (the bytes budget lets one list 9 million); here
    200,000 records held 94 MB. They are counted first, record by record, only until they pass the
    budget, and the directory's bytes are charged to the budget too."""
    assert len(zipfile.ZipFile(_listed_zip(tmp_path / "few.zip", 50)).infolist()) == 50  # zips zipfile reads
    listed = _listed_zip(tmp_path / "listed.zip", 200_000)
    tracemalloc.start()
    try:
        refused = archives.Budget().take(listed)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused != "" and held < MB, held
    long_names = _listed_zip(tmp_path / "long.zip", 40, name_bytes=65_000)  # a 2.6 MB list of 40 files
    assert archives.Budget().take(long_names) == ""
    monkeypatch.setattr(archives, "MAX_UNPACKED_BYTES", 2 * MB)
    assert archives.Budget().take(long_names) != "" and archives.Budget().take(tmp_path / "few.zip") == ""


def test_a_zips_members_of_one_name_are_counted_as_the_copies_nbgraders_unzip_writes(tmp_path, small_budget, caplog):
    """Red-teamed in round r54: setuptools' unpack_zipfile (nbgrader's unzip) reads each member by its name,
    which zipfile answers with the last member of that name: 40 empty members named as a 3 MB one before them
    wrote (and read whole into memory) 3 MB 41 times, where the zip states 3 MB. At the real budget, one
    500 MiB member behind 9,999 empty ones of its name, an upload of 1.5 MB, is 5 TB written, each copy read
    whole into memory (5 copies of 200 MiB: 5.1 s, 687 MiB resident), about 7 hours of zip_collect."""
    archive = tmp_path / "eve.zip"
    with zipfile.ZipFile(archive, "w") as out, pytest.warns(UserWarning, match="Duplicate name"):
        for _ in range(40):
            out.writestr("eve/big.bin", b"")
        _zeros(out, "eve/big.bin", 3 * MB)
    assert archives.stated(archive, 1000 * MB, 50) == (41 * 3 * MB, 41)
    unpacked = tmp_path / "out"
    unpacked.mkdir()
    archives.unpack(archive, unpacked, [".zip"], logging.getLogger("test"))
    assert list(unpacked.rglob("*.bin")) == [] and "left out" in caplog.text
