"""Hidden suite of `dot_product_variance` (assignment 02).

The student may draw the samples with any generator (NumPy's or torch's, any method), so the
values are graded statistically. For `n` samples of `q·k` (d_k i.i.d. standard-normal pairs)
the sample variance has relative standard error about sqrt((2 + 6/d_k) / n); every tolerance
below is at least 5.5 of those, so a correct implementation fails by chance less than about one
time in ten million per comparison. Only `var_scaled = var_unscaled / d_k` is checked tightly:
both come from the same dot products.
"""

import math

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import check_stored

STEP = "dot_product_variance"
STORED_RTOL = 0.08  # the stored values are one sample too; see stored_inputs


def stored_inputs():
    # relative SE of the difference of two independent estimates: sqrt(2 (2 + 6/d_k) / n)
    # d_k 3, n 60000: 0.0082; d_k 8, n 40000: 0.0117; d_k 24, n 30000: 0.0122 (all < 0.08 / 6.5)
    return [dict(label=f"d_k={d}, num_samples={n}, seed={s}", d_k=np.int64(d), num_samples=np.int64(n),
                 seed=np.int64(s))
            for d, n, s in ((3, 60_000, 11), (8, 40_000, 12), (24, 30_000, 13))]


def apply(impl, record):
    return _called(impl, int(record["d_k"]), num_samples=int(record["num_samples"]), seed=int(record["seed"]))


DOT_OF_MATRICES = ("np.dot (or .dot) of the (num_samples, d_k) queries and keys multiplies them as matrices, which "
                   "does not fit (and with k transposed pairs every query with every key, num_samples² dot "
                   "products): one dot product per sample is np.sum(q * k, axis=-1), or np.einsum('nd,nd->n', q, k)")


def _called(impl, d_k, **kwargs):
    """impl.dot_product_variance(d_k, **kwargs); an error that only np.dot of two matrices words so is named:
    this step's only arrays are the (num_samples, d_k) samples."""
    try:
        return impl.dot_product_variance(d_k, **kwargs)
    except RemoteError as error:
        if "not aligned" in str(error):
            raise CaseFailure(f"dot_product_variance raised {error.type_name}: {DOT_OF_MATRICES}") from None
        raise


def _pair(impl, d_k, **kwargs):
    """(var_unscaled, var_scaled) as two floats, or a CaseFailure saying what came back instead."""
    call = f"dot_product_variance({d_k}" + "".join(f", {k}={v}" for k, v in kwargs.items()) + ")"
    out = _called(impl, d_k, **kwargs)
    if out is None:
        raise checks.returned_none(call)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise CaseFailure(f"{call} should return a tuple (var_unscaled, var_scaled) of two numbers")
    unscaled = checks.to_float(out[0], f"var_unscaled of {call}")
    return unscaled, checks.to_float(out[1], f"var_scaled of {call}"), call


ROUNDED_ROOT = ("sqrt(d_k) was rounded down to a whole number (int(), // or math.isqrt), so d_k = 32 is scaled by "
                "5, not 5.66, and d_k = 2 or 3 by 1: keep the root a float (np.sqrt(d_k) or d_k ** 0.5)")
HALF_POWER = "not by sqrt(d_k): d_k ** 1/2 is (d_k ** 1) / 2, since ** binds before /; a root is d_k ** 0.5"
# (what var_scaled / var_unscaled is, its name, why) where sqrt(d_k) is spelt d_k ** 1/2
HALF_POWERS = [(lambda d: 4 / d ** 2, "4/d_k", f"the dot products were divided by d_k / 2, {HALF_POWER}"),
               (lambda d: 1 / (4 * d ** 2), "1/(4·d_k)",
                f"the dot products were divided by d_k and then by 2 (x / d_k ** 1/2 is x / d_k / 2), {HALF_POWER}"),
               # right wherever d_k is a square (9, and the theory case's 4, 16, 64); 1 (no scale) for d_k 2 or 3
               (lambda d: 1 / math.isqrt(d) ** 2, "var_unscaled / int(sqrt(d_k))²", ROUNDED_ROOT)]


def _half_power(impl):
    """The symptom of sqrt(d_k) spelt d_k ** 1/2 or rounded down to a whole number, where
    dot_product_variance(9) and (32) both show it, or None: with d_k = 2 the divisor d_k / 2 is 1, and
    int(sqrt(2)) is 1, which looks like no scaling at all."""
    ratios = []
    for d_k in (9, 32):
        try:
            with checks.diagnosing():  # of a value already wrong, as explain's calls are
                unscaled, scaled, _ = _pair(impl, d_k, num_samples=2_000, seed=4)
        except Exception:  # noqa: BLE001 - only asks whether the scale follows the pattern
            return None
        ratios.append((d_k, scaled / unscaled if unscaled else float("nan")))
    for factor, near, because in HALF_POWERS:
        if all(abs(ratio - factor(d_k)) < 1e-4 * factor(d_k) for d_k, ratio in ratios):
            return f"var_scaled is near {near}: {because}"
    return None


SAME_SAMPLES = ("var_unscaled is 0 but for rounding: every sample is the same pair q, k, as when the generator is "
                "made again from `seed` for each sample (np.random.default_rng(seed) inside the loop); make it once "
                "and draw every sample from it")


def _same_samples(unscaled, d_k):
    """A variance of rounding noise alone: equal dot products in every sample (exactly 0 is one number)."""
    return 0 < abs(unscaled) < 1e-20 * d_k


def _near(value, target, rel):
    return abs(value - target) <= rel * abs(target)


# scaled = dots; scaled /= np.sqrt(d_k): one array under two names, so var_unscaled is taken of the scaled dot products
# too. Both come out the same number near 1, which no swap (d_k and 1) and no missing scale (both near d_k) gives.
BOTH_SCALED = ("var_unscaled equals var_scaled, both near 1: var_unscaled is taken of dot products already divided by "
               "sqrt(d_k), as when they are divided in place (dots /= np.sqrt(d_k), or scaled = dots, then scaled /= "
               "..., which divides the one array both names hold); take var_unscaled first, or divide into a new "
               "array, dots / np.sqrt(d_k)")


def _both_scaled(unscaled, scaled, d_k, rel):
    return d_k > 1 and scaled == unscaled and _near(unscaled, 1, rel)


def diagnose(unscaled, scaled, d_k, rel):
    """A symptom naming the mistake that (unscaled, scaled) points to, or None."""
    if _both_scaled(unscaled, scaled, d_k, rel):
        return BOTH_SCALED
    if _near(unscaled, d_k, rel):
        if _near(scaled, 1 / d_k, rel) and d_k > 1:
            return "var_scaled is near 1/d_k: the dot products were divided by d_k; divide by sqrt(d_k)"
        if _near(scaled, d_k, rel) and d_k > 1:
            return "var_scaled is near d_k: the dot products were not divided by sqrt(d_k)"
        if _near(scaled, math.sqrt(d_k), rel) and d_k > 1:
            return ("var_scaled is near sqrt(d_k): the variance was divided by sqrt(d_k); scale the dot "
                    "products by 1/sqrt(d_k), which divides their variance by d_k")
        return None
    if _near(unscaled, 1, rel) and _near(scaled, d_k, rel) and d_k > 1:
        return "returns (var_scaled, var_unscaled): return (var_unscaled, var_scaled) in that order"
    if _near(unscaled, math.sqrt(d_k), rel) and d_k > 1:
        return ("var_unscaled is near sqrt(d_k): that is the standard deviation; return the variance "
                "(np.var), its square")
    if _near(unscaled, 1, rel) and _near(scaled, 1 / d_k, rel) and d_k > 1:
        return ("var_unscaled is near 1, not d_k: sum the d_k products of each pair q, k into one dot "
                "product before taking the variance")
    if _near(unscaled, 1 / d_k, rel) and _near(scaled, 1 / d_k ** 2, rel) and d_k > 1:
        return ("var_unscaled is near 1/d_k: each sample's products were averaged (np.mean), which divides every "
                "dot product by d_k; a dot product is their sum")
    if _near(unscaled, d_k / 9, rel) and _near(scaled, 1 / 9, rel):
        return ("var_unscaled is near d_k/9, as for entries uniform on [-1, 1] (each of variance 1/3): draw q and "
                "k with standard-normal entries (rng.standard_normal)")
    if _same_samples(unscaled, d_k):
        return SAME_SAMPLES
    # exactly 0: the variance of a single number, every sample's products summed into one (for d_k = 1 a
    # squeeze that drops the features' axis does that with axis=-1 too: its own message, in test_width_one)
    if unscaled == 0 and scaled == 0 and d_k > 1:
        return ("both variances are exactly 0, the variance of a single number: the products of every sample "
                "were summed into one (np.sum with no axis), or only one pair q, k was drawn, as "
                "rng.normal((num_samples, d_k)) draws (it reads the tuple as the mean: two numbers, not that shape; "
                "the shape is size=, or rng.standard_normal((num_samples, d_k))); sum each pair's d_k products "
                "only, one dot product per sample (the last axis)")
    if _near(unscaled, d_k / 144, rel) and _near(scaled, 1 / 144, rel):
        return CENTRED_UNIFORM
    # below 0.1, but not the 7/144 of uniform entries of width 1 (the means of the dot products are ~0.005)
    if 0 < abs(unscaled) < 0.1 and 0 < abs(scaled) < 0.1 and not _near(unscaled, 7 / 144 * d_k, rel):
        return ("both values are near 0, as the mean of the dot products is: return their variance (np.var), "
                "about d_k before scaling")
    if _near(unscaled, 2 * d_k, rel) and _near(scaled, 2, rel):
        return ("var_unscaled is near 2·d_k and var_scaled near 2, as when k is q itself: each q·k is then a "
                "sum of squares; draw the keys separately from the queries, from the same generator (two "
                "generators made from one seed, np.random.default_rng(seed) twice, draw the same numbers)")
    if _near(unscaled, 7 / 144 * d_k, rel):
        return ("var_unscaled is far below d_k, as for uniform entries: draw q and k with standard-normal "
                "entries (rng.standard_normal)")
    return None


# rng.random() - 0.5: a product of two such entries has variance (1/12)², so the dot products have d_k / 144; a mean of
# dot products is also near 0, but var_scaled / var_unscaled is then 1 / sqrt(d_k), not 1 / d_k.
CENTRED_UNIFORM = ("var_unscaled is near d_k/144 and var_scaled near 1/144, as for entries uniform on [-0.5, 0.5) "
                   "(rng.random() - 0.5, each of variance 1/12): draw q and k with standard-normal entries "
                   "(rng.standard_normal), each of variance 1")


def _shown_again(impl, symptom, d_k, rel):
    """Whether the same code shows `symptom` again with another seed and 20000 samples: a mistake's variances
    follow d_k whatever the draw, while a value that one draw puts near a mistake's by chance (one key shared by
    every sample gives |k|², which scatters from seed to seed) is no such mistake. Code that fails there keeps it."""
    try:
        unscaled, scaled, _ = _pair(impl, d_k, num_samples=20_000, seed=101)
    except Exception:  # noqa: BLE001 - only asks whether another draw shows the same
        return True
    return diagnose(unscaled, scaled, d_k, rel) == symptom


def explain(impl, unscaled, scaled, d_k, rel):
    """diagnose's symptom, or the one of a mistake that only a second call shows: the dot products
    summed over the samples, whose variance follows num_samples instead of d_k."""
    with checks.diagnosing():
        return _explained(impl, unscaled, scaled, d_k, rel)


def _explained(impl, unscaled, scaled, d_k, rel):
    if _near(1 / d_k, d_k / 9, rel):  # d_k = 3: averaged products and uniform entries give the same variances
        try:
            d_k = 2 * d_k
            unscaled, scaled, _ = _pair(impl, d_k, num_samples=10_000, seed=7)
        except Exception:  # noqa: BLE001 - only asks which of the two it is
            return None
    symptom = diagnose(unscaled, scaled, d_k, rel)
    if symptom is not None and _shown_again(impl, symptom, d_k, rel):
        return symptom  # one that another draw does not show was near it by chance: the rungs below may name it
    try:
        few, many = (checks.to_float(_called(impl, 256, num_samples=n, seed=0)[0], "var_unscaled")
                     for n in (64, 1024))
    except Exception:  # noqa: BLE001 - only asks how the variance follows num_samples
        return None
    if _near(few, 64, 0.35) and _near(many, 1024, 0.35):  # the right one stays near 256 for both
        return ("var_unscaled follows num_samples, not d_k: each dot product sums over the samples; draw q "
                "and k as (num_samples, d_k) and sum each pair's d_k products (the last axis)")
    return _fixed_divisor(impl) or _one_draw_shared(impl)


def _fixed_divisor(impl):
    """The symptom of a divisor that ignores d_k (sqrt(64) written in, say), or None: var_unscaled / var_scaled
    is then one number c at every d_k, exactly (the same dot products divided by sqrt(c)); fresh samples, or
    a root of d_k spelt wrong, give ratios that move with the draw or with d_k."""
    try:
        with checks.diagnosing():  # of a value already wrong, as _half_power's calls are
            ratios = [unscaled / scaled for unscaled, scaled, _ in (_pair(impl, d, num_samples=2_000, seed=5)
                                                                   for d in FIXED_DIVISOR_D_K) if scaled]
    except Exception:  # noqa: BLE001 - only asks whether the divisor follows d_k
        return None
    if len(ratios) < len(FIXED_DIVISOR_D_K) or not all(_near(r, ratios[0], 1e-4) for r in ratios) \
            or _near(ratios[0], 1, 1e-4):  # no scale at all has its own message
        return None
    if _near(ratios[0], 2_000, 1e-4) and _divisor_follows_num_samples(impl):
        return BY_NUM_SAMPLES
    return (f"var_scaled is var_unscaled / {ratios[0]:.4g} whatever d_k (d_k = "
            f"{', '.join(map(str, FIXED_DIVISOR_D_K))} tried): the dot products are divided by a fixed number, "
            f"sqrt({ratios[0]:.4g}) = {math.sqrt(ratios[0]):.4g}, not by the square root of the d_k the function "
            "is given")


FIXED_DIVISOR_D_K = (2, 5, 20)
BY_NUM_SAMPLES = ("var_scaled is var_unscaled / num_samples whatever d_k (2000 and 3000 samples tried): the dot products "
                  "are divided by sqrt(num_samples), the number of samples, not by sqrt(d_k), the number of products "
                  "each dot product sums")


def _divisor_follows_num_samples(impl):
    """Whether var_unscaled / var_scaled is num_samples again with 3000 samples: the divisor then follows the
    number of samples (sqrt(len(dots)), sqrt(q.shape[0])), not a number written in that happens to be 2000."""
    try:
        with checks.diagnosing():
            unscaled, scaled, _ = _pair(impl, 5, num_samples=3_000, seed=6)
    except Exception:  # noqa: BLE001 - only asks whether the divisor follows num_samples
        return False
    return bool(scaled) and _near(unscaled / scaled, 3_000, 1e-4)
SHARED_DRAW_SEEDS, SHARED_DRAW_D_K, SHARED_DRAW_SAMPLES = range(300, 320), 8, 2_000


def _one_draw_shared(impl):
    """The symptom of one key (or query) drawn once and paired with every sample, or None. For a fixed k the
    variance of q·k is |k|² var(q_i): one draw's |k|², which scatters from seed to seed as a chi-squared of
    d_k degrees does (relative spread sqrt(2/d_k), 0.5 at d_k = 8) however many samples are drawn, around d_k.
    The right code's spread over seeds is its sampling error, sqrt((2 + 6/d_k) / num_samples) = 0.037 here;
    20 seeds put that of one shared draw within [0.4, 2.5] times 0.5 (simulated: 0.27 to 0.88 in 1000 runs)."""
    try:
        values = np.array([_pair(impl, SHARED_DRAW_D_K, num_samples=SHARED_DRAW_SAMPLES, seed=s)[0]
                           for s in SHARED_DRAW_SEEDS])
    except Exception:  # noqa: BLE001 - only asks how the variance scatters from seed to seed
        return None
    mean = float(values.mean())
    spread, expected = float(values.std(ddof=1)) / mean if mean else 0.0, math.sqrt(2 / SHARED_DRAW_D_K)
    if not (_near(mean, SHARED_DRAW_D_K, 0.5) and 0.4 * expected <= spread <= 2.5 * expected):
        return None
    return (f"var_unscaled scatters from seed to seed like one draw of |k|² (d_k = {SHARED_DRAW_D_K}: "
            f"{values.min():.3g} to {values.max():.3g} over {len(values)} seeds): the variance of q·k for a fixed k "
            "is |k|² var(q_i), so a key (or query) drawn once and paired with every sample gives one draw's |k|², "
            "not d_k; draw a new pair q, k per sample")


@case(STEP, "stored", weight=4)
def test_stored_outputs(impl):
    """matches the reference's values within sampling error for d_k = 3, 8 and 24"""

    def symptoms(record, k):
        d, unscaled, scaled = int(record["d_k"]), float(record["expected_0"]), float(record["expected_1"])
        if k == 0:
            return [(lambda: scaled,
                     "returns (var_scaled, var_unscaled): return (var_unscaled, var_scaled) in that order"),
                    (lambda: 1.0,
                     "var_unscaled is near 1, not d_k: sum the d_k products of each pair into one dot product "
                     "before taking the variance")]
        return [(lambda: unscaled / d,
                 "var_scaled is near 1/d_k: the dot products were divided by d_k; divide by sqrt(d_k)"),
                (lambda: unscaled,
                 "var_scaled equals var_unscaled: the dot products were not divided by sqrt(d_k)"),
                (lambda: unscaled / math.sqrt(d),
                 "var_scaled is near sqrt(d_k): the variance was divided by sqrt(d_k); scale the dot products "
                 "by 1/sqrt(d_k)"),
                *[(lambda factor=factor: unscaled * factor(d), f"var_scaled is near {near}: {because}")
                  for factor, near, because in HALF_POWERS]]

    def checked_apply(impl, record):
        out = apply(impl, record)
        if isinstance(out, (tuple, list)) and len(out) == 2:
            d = int(record["d_k"])
            unscaled = checks.to_float(out[0], f"var_unscaled on {record['label']}")
            scaled = checks.to_float(out[1], f"var_scaled on {record['label']}")
            if not (_near(unscaled, float(record["expected_0"]), STORED_RTOL)
                    and _near(scaled, float(record["expected_1"]), STORED_RTOL)):
                # a root spelt wrong can look like none at d_k = 3: the calls _half_power makes tell
                symptom = _half_power(impl) or explain(impl, unscaled, scaled, d, 0.1)
                if symptom:
                    raise CaseFailure(f"dot_product_variance on {record['label']}: {symptom}")
        return out

    check_stored(impl, STEP, checked_apply, "dot_product_variance", atol=0.0, rtol=STORED_RTOL,
                 symptoms=symptoms)


@case(STEP, "oracle", weight=4)
def test_matches_theory(impl):
    """gives var_unscaled near d_k and var_scaled near 1 (the notes' claim) for d_k = 4, 16 and 64"""
    rel = 0.10  # relative SE with 10000 samples is at most 0.0187 here: 5.3 SE
    for d_k in (4, 16, 64):
        unscaled, scaled, call = _pair(impl, d_k, num_samples=10_000, seed=0)
        if _near(unscaled, d_k, rel) and _near(scaled, 1.0, rel):
            continue
        symptom = explain(impl, unscaled, scaled, d_k, rel)
        if symptom:
            raise CaseFailure(f"{call}: {symptom}")
        if not _near(unscaled, d_k, rel):
            raise CaseFailure(f"{call} gives var_unscaled = {unscaled:.4g}; for standard-normal q and k of "
                              "width d_k the variance of q·k is about d_k")
        half_power = _half_power(impl)
        raise CaseFailure(f"{call} gives var_scaled = {scaled:.4g}; the variance of q·k / sqrt(d_k) is "
                          "about 1" + ("" if half_power is None else f", and {half_power}"))


@case(STEP, "property")
def test_same_dot_products_scaled(impl):
    """computes var_scaled from the same dot products, so var_scaled = var_unscaled / d_k"""
    for d_k in (2, 9, 32):
        unscaled, scaled, call = _pair(impl, d_k, num_samples=5_000, seed=3)
        if abs(scaled * d_k - unscaled) <= 1e-4 * abs(unscaled):  # float32 rounding allowed
            continue
        if _same_samples(unscaled, d_k):  # their ratio is one of rounding noise
            raise CaseFailure(f"{call}: {SAME_SAMPLES}")
        ratio = scaled * d_k / unscaled if unscaled else float("nan")
        half_power = _half_power(impl)
        if half_power is not None:
            raise CaseFailure(f"{call}: {half_power}")
        if abs(ratio - 1 / d_k) < 1e-4 / d_k:
            raise CaseFailure(f"{call}: var_scaled = var_unscaled / d_k², the dot products were divided by "
                              "d_k; divide by sqrt(d_k)")
        if _both_scaled(unscaled, scaled, d_k, 0.25):  # the two equal, as unscaled, but near 1: both scaled
            raise CaseFailure(f"{call}: {BOTH_SCALED}")
        if abs(ratio - d_k) < 1e-4 * d_k:
            raise CaseFailure(f"{call}: var_scaled equals var_unscaled; divide the dot products by sqrt(d_k)")
        if abs(ratio - d_k ** 2) < 1e-4 * d_k ** 2:
            if _near(scaled, d_k ** 2, 0.25):  # var_unscaled is right (about d_k): not swapped, multiplied
                raise CaseFailure(f"{call}: var_scaled = var_unscaled · d_k, the dot products were multiplied "
                                  "by sqrt(d_k); divide them by it")
            raise CaseFailure(f"{call}: var_unscaled = var_scaled / d_k, the two are swapped; return "
                              "(var_unscaled, var_scaled)")
        if abs(ratio - d_k ** 0.5) < 1e-4 * d_k ** 0.5:
            if _near(scaled, math.sqrt(d_k), 0.2):  # var_unscaled is right (about d_k): a variance, divided
                raise CaseFailure(f"{call}: var_scaled = var_unscaled / sqrt(d_k), the variance itself was "
                                  "divided by sqrt(d_k); divide the dot products by it, which divides their "
                                  "variance by d_k")
            means = diagnose(unscaled, scaled, d_k, 0.1) if abs(unscaled) < 0.1 else None  # means differ so too
            if means is not None:
                raise CaseFailure(f"{call}: {means}")
            raise CaseFailure(f"{call}: the two values differ by a factor sqrt(d_k), as standard deviations "
                              "do; return variances (np.var)")
        fixed = _fixed_divisor(impl)
        if fixed is not None:
            raise CaseFailure(f"{call}: {fixed}")
        raise CaseFailure(f"{call}: var_scaled is not var_unscaled / d_k; take both variances from the same "
                          "dot products (scale those, do not draw new samples)")


@case(STEP, "property")
def test_seed_controls_the_samples(impl):
    """the same seed gives the same result, a different seed a different one"""
    first = _pair(impl, 8, num_samples=2_000, seed=5)
    again = _pair(impl, 8, num_samples=2_000, seed=5)
    other = _pair(impl, 8, num_samples=2_000, seed=6)
    if first[:2] != again[:2]:
        raise CaseFailure("two calls with seed=5 gave different results: make the generator from `seed` "
                          "(np.random.default_rng(seed)) inside the function")
    if first[:2] == other[:2]:
        symptom = diagnose(*first[:2], 8, 0.1)  # a constant result may have another cause than the seed
        if symptom is not None:
            raise CaseFailure(f"seed=5 and seed=6 gave identical results, and {first[2]}: {symptom}")
        raise CaseFailure("seed=5 and seed=6 gave identical results: the function ignores `seed`")


@case(STEP, "property")
def test_num_samples_is_used(impl):
    """uses num_samples: with 3 samples the variance scatters widely from seed to seed"""
    values = [_pair(impl, 4, num_samples=3, seed=s)[0] for s in range(10)]
    if all(_near(v, 4, 0.1) for v in values):
        raise CaseFailure("with num_samples=3 every seed gave a variance close to d_k, as if far more "
                          "samples were drawn: draw num_samples pairs q, k")


@case(STEP, "property")
def test_width_one(impl):
    """handles d_k = 1, where scaling changes nothing: both variances near 1 and equal"""
    unscaled, scaled, call = _pair(impl, 1, num_samples=40_000, seed=2)
    # with d_k 1 the relative SE is sqrt(8 / 40000) = 0.014: 0.1 is 7 SE
    if not _near(unscaled, 1.0, 0.1):
        symptom = explain(impl, unscaled, scaled, 1, 0.1)
        if symptom:
            raise CaseFailure(f"{call}: {symptom}")
        raise CaseFailure(f"{call} gives var_unscaled = {unscaled:.4g}; for d_k = 1 q·k is a product of two "
                          "standard normals, with variance 1")
    if abs(scaled - unscaled) > 1e-4 * abs(unscaled):
        fixed = _fixed_divisor(impl)
        raise CaseFailure(f"{call}: var_scaled differs from var_unscaled, but sqrt(1) = 1 scales nothing"
                          + ("" if fixed is None else f"; {fixed}"))
