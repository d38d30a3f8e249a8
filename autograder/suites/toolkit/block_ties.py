"""Ties of `online_softmax_attention`'s ladder told apart (its suite and `blockwise` are full): on a case's own
inputs several known mistakes can give one output (blocks of one key make every block read V's first rows, as an
answer returned after the first block does; V = ones hides which keys a query reads, so a key 0 never read looks
like a diagonal blocked). The same code on probes where the twins differ, random values in blocks of two keys with
and without causal=True, keeps only the mistakes whose model gives what it gives on both."""

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.suites.toolkit import checks

_PROBE = (lambda r: [r.normal(size=shape) for shape in ((2, 6, 4), (2, 6, 4), (2, 6, 3))])(np.random.default_rng(1528))


def _fits(out, value):
    return checks.named_mistake(out, [(value, "")]) is not None


def ties_confirmed(impl, ladder, mistakes, model):
    """`ladder` [(candidate, message)], each tie in it (checks.SEVERAL_FIT) cut to the fits that `mistakes`
    [(switches, message)] of `model(Q, K, V, block_size, causal, **switches)` show on the probes; a fit no switch
    names is kept, and a tie none of whose fits the probes show stays whole."""
    if not any(message.startswith(checks.SEVERAL_FIT) for _, message in ladder):
        return ladder
    outs = []
    for causal in (False, True):
        try:
            outs.append((causal, checks.to_array(impl.online_softmax_attention(*_PROBE, block_size=2, causal=causal),
                                                 "the probe")))
        except (RemoteError, CaseFailure):
            return ladder

    def shown(switches):
        try:
            with np.errstate(all="ignore"):
                return all(_fits(out, model(*_PROBE, 2, causal, **switches)) for causal, out in outs)
        except Exception:  # noqa: BLE001 - a model that cannot run on the probe shows nothing
            return False

    named = {message for _, message in mistakes}
    confirmed = {message for switches, message in mistakes if shown(switches)}

    def kept(message):
        if not message.startswith(checks.SEVERAL_FIT):
            return message
        fits = message[len(checks.SEVERAL_FIT):].split("; or ")
        left = [fit for fit in fits if fit in confirmed or fit not in named]
        return checks.one_or_all(left) if left else message

    return [(value, kept(message)) for value, message in ladder]
