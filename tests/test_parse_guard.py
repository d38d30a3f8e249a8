"""The judge's process parses without CPython 3.11's shared-depth race (`autograder/parse_guard.py`):
a finalizer that parses, run by a collection inside a parse, no longer fails the outer parse."""

import ast
import gc

import pytest

import autograder  # noqa: F401 - importing the package installs the guard
from autograder import parse_guard

SOURCE = "\n".join(f"def f{i}(a, b):\n    return [a + b * {i} for _ in range(3)]" for i in range(2000))


class ParsesWhenCollected:
    """Garbage only a collection frees (it refers to itself), whose finalizer parses, as a
    logged traceback does on 3.11."""

    def __init__(self):
        self.itself = self

    def __del__(self):
        ast.parse("x + 1")


def parse_among_garbage(parse):
    gc.collect()
    for _ in range(200):
        ParsesWhenCollected()
    return parse(SOURCE)


@pytest.mark.skipif(not parse_guard.has_the_race(), reason="this interpreter counts the depth per call")
def test_the_unguarded_parse_fails_here_so_the_guard_is_needed():
    with pytest.raises(SystemError, match="recursion depth mismatch"):
        for _ in range(5):
            parse_among_garbage(ast.parse.unguarded)


def test_a_parse_with_a_collection_inside_builds_its_tree():
    trees = [parse_among_garbage(ast.parse) for _ in range(5)]
    assert all(len(tree.body) == 2000 for tree in trees)


def test_collection_is_on_again_after_a_parse_and_after_a_syntax_error():
    assert gc.isenabled()
    with pytest.raises(SyntaxError):
        ast.parse("def (:")
    assert gc.isenabled()


def test_the_guard_is_installed_exactly_on_the_releases_with_the_race():
    assert parse_guard.has_the_race((3, 11, 7)) and not parse_guard.has_the_race((3, 11, 8))
    assert not parse_guard.has_the_race((3, 12, 0))
    assert hasattr(ast.parse, "unguarded") == parse_guard.has_the_race()
