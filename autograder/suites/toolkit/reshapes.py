"""A reshape to the transposed shape written where the transpose belongs (X.reshape(d, n) for X.T), shared by the
steps whose result is a product with a transpose (A @ Bᵀ): the candidate it gives, for their ladders, and its error
on a batch, named from the batch's first item, where such a reshape of one matrix runs."""

from autograder.errors import CaseFailure
from autograder.harness import error_name
from autograder.suites.toolkit import checks

# The reshape has the transpose's shape, so the product runs and only its values tell the two apart (on a single row
# or column they agree, and on a square matrix the reshape changes nothing).
RESHAPED_FOR_TRANSPOSE = ("reshapes to the transposed shape where the transpose belongs (X.reshape(d, n) for X.T): "
                          "a reshape keeps the entries in their order and only cuts them into new rows, so row i of "
                          "the result is not column i of X; swap the last two axes, np.swapaxes(X, -1, -2) (X.T on "
                          "one matrix)")


def reshaped(B):
    """B (..., n, d) reshaped to (..., d, n), the shape of its transpose, its entries kept in their order."""
    return B.reshape(*B.shape[:-2], B.shape[-1], B.shape[-2])


def reshape_mistakes(A, B, after=lambda product: product):
    """[(candidate, symptom)] of `after` (a scale, say) applied to A @ B reshaped to the shape of Bᵀ, for the ladder
    of a step whose result is after(A @ Bᵀ); none where B is square (the reshape leaves it as it is, the product
    untransposed, which the step names) or one row or column (the reshape is its transpose)."""
    if B.shape[-1] == B.shape[-2] or 1 in B.shape[-2:]:
        return []
    return [(lambda: after(A @ reshaped(B)), RESHAPED_FOR_TRANSPOSE)]


def name_on_one_item(name, error, label, run, A, B, after=lambda product: product):
    """An `error` of `name` on a batch (`label`) whose first item, A and B, gives after(A @ B reshaped) when run
    there, `run(A, B)`: a reshape spelled with one matrix's axes (X.reshape(X.shape[1], X.shape[0])) cannot cut a
    batch, so the code raises there, and this names the reshape. Returns quietly where the item tells nothing."""
    try:
        out = checks.to_array(run(A, B), name)
    except Exception:  # noqa: BLE001 - only asks what one item gives
        return
    if checks.named_mistake(out, reshape_mistakes(A, B, after)) is not None:
        raise CaseFailure(f"{name} raised {error_name(error)} on {label}, but runs on one item of it, where it "
                          f"{RESHAPED_FOR_TRANSPOSE}") from None
