"""The last rung of every comparison's ladder (autograder/suites/toolkit/differences.py): each kind
of wrong value is named by its own message, an unrelated error by none, and a comparison of two
outputs of the same code (relation=False) never claims to know the right value."""

import re

import numpy as np
import pytest

from autograder.errors import CaseFailure
from autograder.suites.toolkit import checks, differences
from autograder.suites.toolkit.model import softmax

RIGHT = np.random.default_rng(0).normal(size=(2, 4, 5))
ROW_FACTORS = np.random.default_rng(1).uniform(1.5, 3, size=(2, 4, 1))
COLUMN_FACTORS = np.random.default_rng(2).uniform(1.5, 3, size=(2, 1, 5))


KINDS = {
    "zeros": (np.zeros_like(RIGHT), "nothing was computed into the result"),
    "constant factor": (RIGHT / 16, "every entry is 0.0625 (= 1/16) times the right value"),
    "first item only": (np.stack([RIGHT[0], RIGHT[1] * 2 + 1]), "only item(s) 0 of the batch"),
    "rows scaled": (RIGHT * ROW_FACTORS, "each row's normaliser or scale is wrong"),
    "columns scaled": (RIGHT * COLUMN_FACTORS, "each column's normaliser or scale is wrong"),
    "columns negated": (RIGHT * np.array([1, -1, 1, -1, 1]), "some columns are the negative of the right ones"),
    "rows reordered": (RIGHT[:, ::-1], "it holds the right rows, in the wrong order"),
    "entries moved": (RIGHT.swapaxes(-1, -2).reshape(RIGHT.shape), "the right numbers, in the wrong places"),
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_wrong_value_is_named_by_its_own_message(kind):
    wrong, phrase = KINDS[kind]
    message = differences.pattern_of(wrong, RIGHT)
    assert message is not None and phrase in message
    assert [k for k, (_, p) in KINDS.items() if p in message] == [kind]


def test_weights_from_scores_scaled_by_the_wrong_factor_are_named_with_it():
    """Only the right weights are known, not the scores: their logs are the scores up to a constant
    per row, which is enough; rows with blocked (zero) entries keep them."""
    scores = np.where(np.triu(np.ones((4, 5), dtype=bool), 1), -np.inf, RIGHT)
    message = differences.pattern_of(softmax(scores / 8), softmax(scores))
    assert "each row is the softmax of the right scores times 0.125 (= 1/8)" in message
    uniform = np.full((3, 4), 0.25)
    assert differences.pattern_of(softmax(RIGHT[0, :3, :4]), uniform) is None  # no scores to scale


def test_an_unrelated_error_is_named_by_none():
    noisy = RIGHT + np.random.default_rng(3).normal(scale=0.1, size=RIGHT.shape)
    assert differences.pattern_of(noisy, RIGHT) is None
    with pytest.raises(CaseFailure, match=checks.UNNAMED):
        checks.expect_close(noisy, RIGHT, "the output")


def test_a_rough_worked_example_scaled_up_is_still_a_constant_factor():
    """Printed numbers are rounded: scaled by 4, their rounding error is 4 times larger."""
    printed = np.round(np.array([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]), 4)
    exact = np.array([0.13854756, 0.23789153, 0.23327722, 0.12399944, 0.10818993, 0.15809429])
    assert "times the right value" in differences.pattern_of(exact * 4, printed, atol=1e-4, rtol=0)


def test_a_comparison_with_the_codes_own_output_claims_no_right_value():
    out = np.random.default_rng(4).normal(size=(4, 4))
    with pytest.raises(CaseFailure) as failure:
        checks.expect_close(out, out.T, "the scores compared with their transpose", relation=False)
    assert checks.UNNAMED in str(failure.value)
    with pytest.raises(CaseFailure) as failure:
        checks.expect_close(out * 2, out, "softmax(x + 10) compared with softmax(x)")
    assert "times the right value" in str(failure.value)


def test_too_few_entries_or_a_zero_right_value_say_nothing():
    assert differences.pattern_of(np.array([2.0]), np.array([1.0])) is None
    assert differences.pattern_of(np.ones(3), np.zeros(3)) is None
    assert differences.pattern_of(np.array([np.nan, 1.0]), np.array([1.0, 1.0])) is None


def test_infinities_are_compared_without_a_warning_on_the_graders_stderr():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        message = checks.describe_difference(np.array([np.inf, 1.0, 2.0]), np.array([-np.inf, 1.0, 2.0]), "x")
    assert "off by up to inf, most at index (0,)" in message


SHAPES = {
    "first axis missing": ((6, 4), (2, 6, 4), "its first axis is missing"),
    "last axis missing": ((2, 6), (2, 6, 4), "its last axis is missing"),
    "an extra axis of size 1": ((2, 1, 6, 4), (2, 6, 4), "an extra axis of size 1"),
    "an axis of size 1 missing": ((2, 4), (2, 1, 4), "an axis of size 1 is missing"),
    "last two swapped": ((2, 4, 6), (2, 6, 4), "its last two axes are swapped"),
    "other order": ((6, 2, 4), (2, 6, 4), "the right sizes in another order"),
    "other layout": ((4, 12), (2, 6, 4), "the right number of entries in another shape"),
}


@pytest.mark.parametrize("kind", SHAPES)
def test_each_relation_of_a_wrong_shape_to_the_right_one_is_named(kind):
    got, want, phrase = SHAPES[kind]
    with pytest.raises(CaseFailure) as failure:
        checks.expect_shape(np.zeros(got), want, "the output")
    assert str(failure.value).startswith(f"the output has shape {checks.fmt_shape(got)}, expected")
    assert phrase in str(failure.value)
    assert [k for k, (g, w, p) in SHAPES.items() if p in (checks.shape_relation(got, want) or "")] == [kind]


def test_a_wrong_shape_unrelated_to_the_right_one_says_only_the_shapes():
    with pytest.raises(CaseFailure) as failure:
        checks.expect_shape(np.zeros((3, 5)), (2, 6, 4), "the output")
    assert str(failure.value) == "the output has shape (3, 5), expected (2, 6, 4)"


def test_an_infinite_candidate_matches_only_its_own_infinity():
    """A known mistake whose value is -inf (a division by a zero length, say) names no finite output: its
    tolerance, relative to an infinity, would be infinite."""
    assert checks.named_mistake(np.array(-0.99), [(np.array(-np.inf), "divides by zero")]) is None
    assert checks.named_mistake(np.array([1.0, -np.inf]), [(np.array([1.0, -np.inf]), "the same")]) == "the same"


# Red-team round r63: code that saw a case's inputs returned, for each later case, an empty array whose sizes were
# digits of those inputs, and every failed case's message spelt them out.
SIZES_OF_AN_EMPTY_RESULT = '''
import re

import numpy as np
SEEN = []
def softmax(x, axis=-1):
    SEEN.append(np.asarray(x, dtype=float))
    return np.empty([0] + [int(abs(v) * 1000) % 1000 + 101 for v in SEEN[0].flatten()[:6]])
'''


def test_an_empty_results_sizes_carry_no_digits_of_a_cases_inputs():
    from autograder.harness import run_step
    from autograder.judge import format_report
    from autograder.reference import reference_with

    result = run_step("softmax", reference_with({"softmax": SIZES_OF_AN_EMPTY_RESULT}))
    report = format_report(result, 3)
    assert "axes, at least one of size 0" in report, report
    assert not re.search(r"\(0, \d{3}", report), report


def test_an_empty_shape_a_mistake_can_make_is_shown_whole():
    assert checks.fmt_shape((2, 3072, 0)) == "(2, 3072, 0)"
    assert checks.fmt_shape((0,)) == "(0,)"
    assert checks.fmt_shape((0, 141, 321, 501)) == "(4 axes, at least one of size 0)"
