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
from autograder.limits import CASE_TIMEOUT

if TYPE_CHECKING:
    from autograder.kernel.channel import ApartCall


def _undefined(name: str) -> CaseFailure:
    return CaseFailure(f"`{name}` is not defined: run the cell that defines it, and keep its name "
                       "exactly as given")


class Channel(Protocol):
    """What carries the seam's requests: `kernel.channel.LocalChannel` or `KernelChannel`."""

    def request(self, payload: dict[str, Any], timeout: float) -> Mapping[str, Any]: ...

    def reset(self) -> int: ...

    def peak(self) -> int: ...

    def apart(self) -> AbstractContextManager[ApartCall]: ...

    def hold_others(self) -> None: ...

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

    @property
    def peaks_are_separate(self) -> bool:
        """Whether each `measure_peak` call is measured alone, in a process of its own (a kernel's envelope), so two
        calls' peaks compare: a per-process peak does not count what a call reuses of memory an earlier one freed
        (in this process, 05's reference style measured 4.5 to 5.6 MiB on the same 1536 tokens)."""
        return self._channel.counts_children

    def measure_peak(self, name: str, *args: Any) -> tuple[Any, int]:
        """(name(*args), the most memory it held at once, in bytes above what was held before).

        Measured from outside the process that runs it. Where the peak is per process, it is the peak
        resident set size, reset just after the inputs were sent. Where it counts children (a kernel's
        envelope), the call runs alone in a process of its own, forked from a fork of the kernel, every
        other process of the submission stopped until it ends (`KernelChannel.apart`). Its window opens
        as it starts: its inputs are written into its memory from outside just before, every process
        stopped, so no code has them before the window, and nothing measured in the kernel is ever left
        out; their pages are the judge's, left out. In the window, every page it writes of those it shares
        is a copy of its own, charged; the memory it alone mapped as it began, and the files in RAM and
        shared mappings of the submission, count whole; what it writes in place into a held process's own
        memory counts page by page (`ApartCall`)."""
        if not self._channel.counts_children:
            held = self.hold(*args)
            before = self._channel.reset()
            result = self._call_held(name, held)
            return result, max(0, self._channel.peak() - before)
        import numpy as np

        placed = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and not a.dtype.hasobject]
        with self._channel.apart() as call:
            self._request({"op": "apart"})  # the kernel forks: its child answers from here on
            self._channel.hold_others()
            rooms = self._request({"op": "room", "shapes": [args[i].shape for i in placed],
                                   "dtypes": [args[i].dtype.str for i in placed]})
            try:
                handles = [room["handle"] for room in rooms]
                call.inputs = [(int(room["address"]), np.ascontiguousarray(args[i]).tobytes())
                               for room, i in zip(rooms, placed, strict=True)]
            except (TypeError, KeyError, ValueError, IndexError) as error:
                raise RemoteError.from_reply({"type": "InvalidAnswer",
                                              "message": f"no room for the call's inputs ({error})"[:300]}) from None
            sent = dict(zip(placed, handles, strict=True))
            result = self._call_held(name, [sent.get(i, a) for i, a in enumerate(args)], apart=True)
        peak = max(0, self._channel.peak() - call.before) + call.uncharged  # (read: the call group goes)
        if call.disturbed:  # what a process the call let go, or one it killed, gave it is counted nowhere
            raise RemoteError.from_reply({"type": "InvalidAnswer", "message": (
                "the call let go, or ended, another process of the submission that was held still while it ran")})
        return result, peak

    def _call_held(self, name: str, args: Sequence[Any], apart: bool = False) -> Any:
        """name(*args), where an argument may be a Handle to a value already held; `apart`: in a process of its own
        (`KernelChannel.apart`)."""
        from autograder.kernel import agent

        return self._request({"op": "call", "target": name, "method": None, "apart": apart,
                              "args": agent.encode(list(args), _handle_data), "kwargs": {"$dict": {}}})

    # a step's frame
    def begin(self, reference_source: str = "", reference_names: Sequence[str] = ()) -> None:
        self._request({"op": "begin", "reference_source": reference_source,
                       "reference_names": list(reference_names)})

    def end(self) -> None:
        self._request({"op": "end"})


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
