"""The one seam between the hidden suites and the code under test: data in, data out.

`impl.softmax(x, axis=0)` sends the arguments to the agent (`agent.py`) wherever the code under
test lives, and returns what it answered as plain NumPy arrays, tensors and numbers. An object
that is not data (a student's `nn.Module`) comes back as a `Handle`, driven by the few
operations a suite needs: call it, describe an attribute, load weights, switch train/eval,
copy it, backpropagate through it.

Two channels carry the requests, through the same codec:
- `channel.LocalChannel`: an agent in this process, over the reference (CI) or any namespace;
- `channel.KernelChannel`: the agent inside a student's sandboxed kernel (the judge).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from autograder.errors import CaseFailure, CaseTimeout, KernelStuck, RemoteError
from autograder.limits import CASE_TIMEOUT, FORK_COST_ALLOWANCE

if TYPE_CHECKING:
    from autograder.kernel.channel import SharedMemory, Written


def _undefined(name: str) -> CaseFailure:
    return CaseFailure(f"`{name}` is not defined: run the cell that defines it, and keep its name "
                       "exactly as given")


class Channel(Protocol):
    """What carries the seam's requests: `kernel.channel.LocalChannel` or `KernelChannel`."""

    def request(self, payload: dict[str, Any], timeout: float) -> Mapping[str, Any]: ...

    def reset(self) -> int: ...

    def peak(self) -> int: ...

    def shared(self) -> SharedMemory: ...

    def apart(self, watch: SharedMemory | None = None) -> AbstractContextManager[Written]: ...

    def hold_others(self) -> int: ...

    @property
    def counts_children(self) -> bool: ...


class Implementation:
    """The code under test, reached through `channel`."""

    def __init__(self, channel: Channel):
        self._channel = channel
        self.deadline: float | None = None  # monotonic time by which the current case must be done

    def __getattr__(self, name: str) -> _Remote:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Remote(self, name)

    # requests
    def _timeout(self) -> float:
        if self.deadline is None:
            return CASE_TIMEOUT
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise CaseTimeout()
        return left

    def _request(self, payload: dict[str, Any]) -> Any:
        from autograder.kernel import agent

        reply = self._channel.request(payload, self._timeout())
        if "ok" in reply:
            try:
                return agent.decode(reply["ok"], lambda data: Handle(self, data))
            except Exception as error:  # noqa: BLE001 - whatever the kernel sent, it is not data
                raise RemoteError.from_reply({"type": "InvalidAnswer",
                                              "message": f"the answer is not plain data ({error})"[:300]}) from None
        if reply.get("interrupted"):
            raise CaseTimeout()
        if "undefined" in reply:
            if reply["undefined"] != payload.get("target"):  # only the name it was asked for
                raise RemoteError.from_reply({"type": "InvalidAnswer", "message": "a forged answer"})
            raise _undefined(reply["undefined"])
        raise RemoteError.from_reply(reply.get("error") or {})

    def _call(self, target: str | dict[str, int], method: str | None, args: tuple, kwargs: dict[str, Any], *,
              no_grad: bool = False, seed: int | None = None) -> Any:
        from autograder.kernel import agent

        return self._request({"op": "call", "target": target, "method": method,
                              "args": agent.encode(list(args), _handle_data),
                              "kwargs": agent.encode(dict(kwargs), _handle_data),
                              "no_grad": no_grad, "seed": seed})

    def hold(self, *values: Any) -> list[Handle]:
        """Handles to `values`, kept with the code under test: pass one to a call, then read it
        back (`handle.call("clone")`) to see whether the call changed it in place."""
        from autograder.kernel import agent

        return self._request({"op": "hold", "values": agent.encode(list(values))})

    def measure_peak(self, name: str, *args: Any) -> tuple[Any, int]:
        """(name(*args), the most memory it held at once, in bytes above what was held before).

        Measured from outside the process that runs it: its peak resident set size, reset
        just before the call. Decoding the inputs does not count (sent first, or, in a child, left out
        with what forking costs, measured with blank inputs of the same sizes). Where
        the peak counts children (a kernel's envelope), the call runs in a forked child of the
        kernel, alone: every other process of the submission, the kernel with its threads, is stopped
        from before the child is sent the inputs until it ends (`KernelChannel.apart`). Memory held before
        (a buffer an earlier cell made, which a full score matrix was written into) is then counted too,
        page by page, as the call writes it, and what the child alone maps as it begins (memory another
        process gave up to it) counts whole. A child shares the kernel's files in RAM and shared mappings,
        and writes them without a copy: what the submission holds there is counted as the call's too (a
        shared buffer, or a file given back to make room, red-team round r46). What forking costs doing
        nothing is left out, up to FORK_COST_ALLOWANCE (it is measured in the kernel, whose code could make
        it anything). What the call wrote into memory a stopped process alone maps (process_vm_writev, or
        /proc/PID/mem: no copy, no page charged) counts page by page too (red-team round r48)."""
        if not self._channel.counts_children:
            held = self.hold(*args)
            before = self._channel.reset()
            result = self._call_held(name, held)
            return result, max(0, self._channel.peak() - before)
        start = self._channel.reset()
        with self._channel.apart():  # as the call's below, with inputs of the same sizes: none it could keep
            self._alone_holding([_blank(a) for a in args])
        overhead = min(max(0, self._channel.peak() - start), FORK_COST_ALLOWANCE)
        before = self._channel.reset()
        shared = self._channel.shared()
        with self._channel.apart(watch=shared) as written:
            alone, held = self._alone_holding(args)
            result = self._call_held(name, held)
        return result, max(0, self._channel.peak() - before - overhead) + shared.size + alone + written.size

    def _alone_holding(self, values: Sequence[Any]) -> tuple[int, list[Handle]]:
        """In the channel's `apart`: the kernel's child answers from here on, every other process of the
        submission stopped, and holds `values`. (What the child alone maps, bytes; the handles.)"""
        self._request({"op": "apart"})
        alone = self._channel.hold_others()
        return alone, self.hold(*values)

    def _call_held(self, name: str, held: Sequence[Handle]) -> Any:
        return self._request({"op": "call", "target": name, "method": None,
                              "args": [{"$h": h.id} for h in held], "kwargs": {"$dict": {}}})

    # a step's frame
    def begin(self, reference_source: str = "", reference_names: Sequence[str] = ()) -> None:
        self._request({"op": "begin", "reference_source": reference_source,
                       "reference_names": list(reference_names)})

    def end(self) -> None:
        self._request({"op": "end"})


def _blank(value: Any) -> Any:
    """An input of `value`'s size and kind that tells nothing of it (zeros, for an array)."""
    import numpy as np

    return np.zeros_like(value) if isinstance(value, np.ndarray) else value


def _handle_data(value: Any) -> dict[str, int]:
    if isinstance(value, Handle):
        return {"$h": value.id}
    raise TypeError(f"{type(value).__name__} cannot be sent to the code under test")


class _Remote:
    """A graded name: calling it calls the submission's object of that name."""

    def __init__(self, impl: Implementation, name: str):
        self._impl, self.__name__ = impl, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._impl._call(self.__name__, None, args, kwargs)

    def describe(self, path: str = "") -> dict[str, Any]:
        """What the object of this name (or its attribute at `path`) is: see Handle.describe;
        for a function also `code` {names, ops}, what it reads and does."""
        return self._impl._request({"op": "describe", "target": self.__name__, "path": path})

    def backward(self, args: Sequence[Any], cotangent: Any, paths: Sequence[str]) -> dict[str, Any]:
        """Call it on `args`, the floating-point tensors among them needing gradients, and backpropagate
        `cotangent`: as `Handle.backward`, with `paths` "0", "1", ... naming the arguments whose gradients come back."""
        from autograder.kernel import agent

        return self._impl._request({"op": "backward", "target": self.__name__, "paths": list(paths),
                                    "args": agent.encode(list(args)), "cotangent": agent.encode(cotangent)})

    def __repr__(self) -> str:
        return f"<graded name {self.__name__}>"


class Handle:
    """An object living with the code under test (a module, a cache), driven as data."""

    def __init__(self, impl: Implementation, data: dict[str, Any]):
        self._impl = impl
        self.id = int(data["$h"])
        self.type_name = str(data.get("type", "object"))
        self.is_module = bool(data.get("module"))
        self.mro = tuple(data.get("mro", ()))

    def __repr__(self) -> str:
        return f"<{self.type_name} handle {self.id}>"

    def _op(self, op: str, **fields: Any) -> Any:
        return self._impl._request({"op": op, "target": {"$h": self.id}, **fields})

    def __call__(self, *args: Any, _seed: int | None = None, **kwargs: Any) -> Any:
        """The forward pass (no autograd graph), optionally after torch.manual_seed(_seed)."""
        return self._impl._call({"$h": self.id}, None, args, kwargs, no_grad=True, seed=_seed)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._impl._call({"$h": self.id}, method, args, kwargs)

    def train(self) -> Handle:
        self.call("train")
        return self

    def eval(self) -> Handle:
        self.call("eval")
        return self

    def to(self, dtype: Any) -> Handle:
        self.call("to", dtype)
        return self

    def __len__(self) -> int:
        return int(self._op("len"))

    def describe(self, path: str = "") -> dict[str, Any]:
        """{exists, type, mro, module, training, stray_tensors ({name: type} of a module's own
        tensors that are not buffers: plain attributes, and parameters not of a submodule), weight_shape, bias, p, len, value} of `path`."""
        return self._op("describe", path=path)

    def set_linear(self, path: str, weight: Any, bias: Any = None) -> None:
        from autograder.kernel import agent

        self._op("set_linear", path=path, weight=agent.encode(weight), bias=agent.encode(bias))

    def copy(self) -> Handle:
        return self._op("copy")

    def backward(self, args: Sequence[Any], cotangent: Any, paths: Sequence[str]) -> dict[str, Any]:
        """Train mode, forward on `args`, backpropagate `cotangent`: {differentiable,
        backward_error, grads {path: array or None}, called [the layers of `paths` forward called]}."""
        from autograder.kernel import agent

        return self._op("backward", args=agent.encode(list(args), _handle_data),
                        cotangent=agent.encode(cotangent), paths=list(paths))


__all__ = ["Implementation", "Handle", "CaseFailure", "CaseTimeout", "KernelStuck", "RemoteError"]
