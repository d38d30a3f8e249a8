# Helpers every notebook of this course shares. Run this cell and move on.
#
#   with needs("softmax"): ...           runs a demo once `softmax` is implemented; until then it
#                                        prints a one-line hint instead of a traceback
#   GRADING                              True while the notebook is being graded (plt.show then
#                                        closes figures instead of drawing them)
#   show_attention(ax, weights, labels)  draws attention weights as a heatmap, always on the same
#                                        0-to-1 colour scale, so equal shades mean equal weights
#                                        in every panel of every notebook
#   checked_call(name, f, *args, hint=)  what the visible checks use to call your code: f(*args),
#                                        saying `hint` first if it raises, and failing if it
#                                        changed one of its inputs in place
#   expect_gradients(out, module, names) fails unless a backward pass from a module's output
#                                        reaches each of its layers `names`
#   expect_mask_buffer(module, name)     fails if a module keeps a tensor as a plain attribute,
#                                        which .to(device) would leave behind
import os
from contextlib import contextmanager

import matplotlib.pyplot as plt
import numpy as np

# True while nbgrader autogrades this notebook: demos then measure fewer sizes, since neither
# the grade nor the feedback needs their plots.
GRADING = os.environ.get("NBGRADER_EXECUTION") == "autograde"
if GRADING:
    # Nobody looks at a figure drawn while grading: closing it instead of rendering it saves
    # a fraction of a second per plot, paid again by every notebook of a class.
    plt.show = lambda *args, **kwargs: plt.close("all")


def _as_array(values):
    """A NumPy array of floats from a NumPy array, a list or a torch tensor (any device)."""
    values = getattr(values, "detach", lambda: values)()
    values = getattr(values, "cpu", lambda: values)()
    return np.asarray(values, dtype=float)


def _listed(names):
    """`a`, `a` and `b`, `a`, `b` and `c`."""
    quoted = [f"`{name}`" for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


@contextmanager
def needs(*names):
    """Run a demonstration only once the steps it uses are implemented.

    While one of `names` is still a stub (raises NotImplementedError), print one line saying
    what to implement instead of a traceback. Any other error is shown as usual: it is a bug
    worth seeing.
    """
    try:
        yield
    except NotImplementedError:
        plt.close("all")  # no half-drawn figure
        cells = "its cell" if len(names) == 1 else "their cells"
        print(f"Nothing to show yet: implement {_listed(names)} above and run {cells}, "
              "then run this cell again.")


def show_attention(ax, weights, labels=None, title="", numbers=None):
    """Draw a matrix of attention weights on the axes `ax`: row = query, column = key.

    `weights` is (n_q, n_k), a NumPy array or a torch tensor. Colours run from 0 (white) to 1
    (dark blue) in every call, so two panels can be compared by eye. Each cell shows its weight
    unless the matrix is large (`numbers=None` decides: up to 10 x 10); weights that are exactly
    0, such as masked ones, are printed in grey. Returns the image, for a colour bar.
    """
    w = _as_array(weights)
    if w.ndim != 2:
        raise ValueError(f"show_attention draws one (n_q, n_k) matrix, got shape {w.shape}")
    image = ax.imshow(w, cmap="Blues", vmin=0.0, vmax=1.0)
    if labels is not None:
        ax.set_xticks(range(w.shape[1]), labels[: w.shape[1]], rotation=45, ha="right")
        ax.set_yticks(range(w.shape[0]), labels[: w.shape[0]])
    ax.set_xlabel("key: the token looked at")
    ax.set_ylabel("query: the token looking")
    if numbers is None:
        numbers = max(w.shape) <= 10
    if numbers:
        for (i, j), value in np.ndenumerate(w):
            colour = "0.7" if value == 0 else ("white" if value > 0.55 else "black")
            ax.text(j, i, "0" if value == 0 else f"{value:.2f}", ha="center", va="center",
                    fontsize=8, color=colour)
    ax.set_title(title)
    return image


def _snapshot(value):
    """A copy of an array or tensor argument, to compare with after the call (None otherwise)."""
    if hasattr(value, "detach") and hasattr(value, "clone"):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    return None


def checked_call(name, function, *args, hint="", **kwargs):
    """function(*args, **kwargs) for a visible check of `name`.

    If it raises (anything but NotImplementedError), the check fails with `hint` first and the
    error after it, so even a line cut short shows what to fix. If it changed one of its array
    or tensor arguments in place, the check fails: no graded function may modify its inputs,
    and the grader checks that too.
    """
    arguments = [*args, *kwargs.values()]
    before = [_snapshot(arg) for arg in arguments]
    try:
        result = function(*args, **kwargs)
    except NotImplementedError:
        raise
    except Exception as error:
        lead = f"{hint} " if hint else ""
        raise AssertionError(f"{lead}({name} raised {type(error).__name__}: {error})") from None
    for position, (arg, copy) in enumerate(zip(arguments, before), start=1):
        if copy is not None and not np.array_equal(_as_array(arg), _as_array(copy)):
            raise AssertionError(f"{name} changed its argument {position} in place: no graded function may "
                                 "modify its inputs (work on a copy; avoid -=, /=, masked_fill_ and friends)")
    return result


def expect_gradients(out, module, *names):
    """A backward pass from `out`, a forward's output, must reach the weight of each layer in `names`.

    The output is weighted unevenly before it is summed, so that no coincidence of a check's inputs
    (value rows with equal sums, say, against weights whose rows sum to 1) leaves a layer that is
    wired right with a zero gradient.
    """
    keep = ("keep forward in torch (no .numpy(), .detach() or torch.no_grad()) so that training can update "
            "every layer")
    assert out.requires_grad, f"no gradient can flow back: {keep}"
    uneven = out.new_tensor(np.arange(1.0, out.numel() + 1.0)).view_as(out)
    (out * uneven).sum().backward()
    for name in names:
        grad = getattr(module, name).weight.grad
        assert grad is not None and bool(grad.abs().sum() > 0), f"no gradient reached {name}: {keep}"


def expect_mask_buffer(module, name):
    """`module` keeps no tensor as a plain attribute: such a tensor (a mask) stays where it was made when
    the module moves (`.to("cuda")`), and the forward pass then mixes devices. Buffers move with it."""
    plain = [key for key, value in vars(module).items() if hasattr(value, "dim") and value.dim() > 0]
    assert not plain, (f"{name} keeps the tensor `{plain[0]}` as a plain attribute, which .to(device) leaves "
                       "behind: keep the mask with self.register_buffer(name, tensor)")
