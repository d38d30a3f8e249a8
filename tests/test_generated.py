"""coursekit/generated.py: the one rule of every generated artefact."""

from coursekit.generated import regenerate_or_check, stale


def test_regenerating_writes_every_output_and_removes_what_nothing_generates(tmp_path, capsys):
    owned = tmp_path / "release"
    (owned / "old").mkdir(parents=True)
    (owned / "old" / "gone.ipynb").write_text("left from an assignment that was renamed")
    outputs = {owned / "a" / "a.ipynb": "notebook\n", owned / "a" / "data.bin": b"\0\1"}
    assert regenerate_or_check(outputs, "make it", check=False, owned=owned) == 0
    assert (owned / "a" / "a.ipynb").read_text() == "notebook\n" and (owned / "a" / "data.bin").read_bytes() == b"\0\1"
    assert not (owned / "old" / "gone.ipynb").exists()
    assert regenerate_or_check(outputs, "make it", check=True, owned=owned) == 0


def test_the_check_names_each_stale_file_and_the_command_and_writes_nothing(tmp_path, capsys):
    current, changed, missing, stray = (tmp_path / n for n in ("current.md", "changed.md", "missing.md", "stray.md"))
    current.write_text("same")
    changed.write_text("edited by hand")
    stray.write_text("nothing generates me")
    outputs = {current: "same", changed: "generated", missing: "generated"}
    capsys.readouterr()
    assert regenerate_or_check(outputs, "python -m coursekit.build", check=True, owned=tmp_path) == 1
    printed = capsys.readouterr().out
    assert "run `python -m coursekit.build`" in printed
    assert all(f"{kind}: {path}" in printed for kind, path in
               (("differs", changed), ("missing", missing), ("not generated", stray)))
    assert "current.md" not in printed
    assert changed.read_text() == "edited by hand" and not missing.exists() and stray.exists()


def test_a_format_that_is_not_reproducible_byte_for_byte_is_compared_by_its_own_rule(tmp_path):
    path = tmp_path / "numbers.txt"
    path.write_text("1.0000001")
    close = lambda p, new: abs(float(p.read_text()) - float(new)) < 1e-6  # noqa: E731
    assert stale({path: "1.0"}, same=close) == []
    assert stale({path: "1.1"}, same=close) == [f"differs: {path}"]
