"""The grader's agent: the only grading code that runs where the submission runs.

The judge (`autograder.judge`) holds the hidden cases, the stored expected outputs and the reference; the kernel
holds none of them. The two talk through this agent in plain data only: JSON whose arrays are `.npy` bytes read with
`allow_pickle=False`, no pickle, no object reference the other side could walk. An object that is not data (a
student's `nn.Module`) stays here and crosses as a numbered handle. A submission may rewrite the agent or forge its
replies; that changes only what its own code is reported to return. Self-contained (standard library, NumPy, torch
when present): the judge ships this source into the kernel, and imports it for the codec.
"""

import base64
import copy
import ctypes
import dis
import io
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

import numpy as np

MODULE_NAME = "__grader_agent__"
SOCKET_NAME = "agent.sock"  # the judge listens here, in the folder the kernel sees read-only

# How this file and the reference code the judge ships in name themselves in tracebacks.
AGENT_FILENAME = "<grader-agent>"
REFERENCE_FILENAME = "<reference>"

# How long the GIL's holder runs before a waiting thread: at 5 ms, the default, a submission's thread that spins
# forever made one step take 6 s, not 0.2 s. Later cells keep it (benchmarks/results.md, sixth session).
SWITCH_INTERVAL = 0.0005


def _torch():
    return sys.modules.get("torch")


# --- the codec ------------------------------------------------------------------------------
def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _from_npy(text):
    return np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False)


class Encoded:
    """A value an operation has already encoded (a handle it registered on purpose)."""

    def __init__(self, data):
        self.data = data


def encode(value, register=None):
    """`value` as JSON-able data. Objects that are not data become handles via `register` (None: they are refused)."""
    torch = _torch()
    if isinstance(value, Encoded):
        return value.data
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):  # a subclass (an IntEnum) as the plain number
        return int(value) if isinstance(value, int) else float(value)
    if isinstance(value, np.generic) and not isinstance(value, np.object_):
        return {"$nd": _npy(np.asarray(value)), "scalar": True}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("an array of Python objects is not numeric data")
        return {"$nd": _npy(value)}
    if torch is not None and isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        dtype = str(tensor.dtype).replace("torch.", "")
        if tensor.dtype in (torch.bfloat16, torch.float16):
            tensor = tensor.float()
        return {"$t": _npy(tensor.resolve_conj().resolve_neg().numpy()), "dtype": dtype,
                "requires_grad": bool(value.requires_grad)}
    if torch is not None and isinstance(value, torch.dtype):
        return {"$dtype": str(value).replace("torch.", "")}
    if isinstance(value, tuple):  # torch.Size included
        return {"$tuple": [encode(v, register) for v in value]}
    if isinstance(value, list):
        return [encode(v, register) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"$dict": {k: encode(v, register) for k, v in value.items()}}
    if register is None:
        raise TypeError(f"a {type(value).__name__} is not plain data")
    return register(value)


def decode(data, resolve=None):
    """The value `encode` produced. `resolve(handle_data)` turns a handle into an object."""
    if isinstance(data, list):
        return [decode(v, resolve) for v in data]
    if not isinstance(data, dict):
        return data
    if "$nd" in data:
        array = _from_npy(data["$nd"])
        return array[()] if data.get("scalar") else array
    if "$t" in data or "$dtype" in data:  # a dtype is read from torch's namespace: as an attribute,
        torch = _torch() or __import__("torch")  # "_inductor" imported 800 modules into the judge (r44)
        tensor = torch.from_numpy(_from_npy(data["$t"]).copy()) if "$t" in data else None
        dtype = vars(torch).get(str(data["$dtype"] if tensor is None else data.get("dtype", str(tensor.dtype)[6:])))
        if not isinstance(dtype, torch.dtype) or tensor is not None and dtype.itemsize > tensor.element_size():
            raise ValueError("a dtype torch does not have, or one wider than its data (r63: bool named complex128)")
        return dtype if tensor is None else tensor.to(dtype)
    if "$tuple" in data:
        return tuple(decode(v, resolve) for v in data["$tuple"])
    if "$dict" in data:
        return {k: decode(v, resolve) for k, v in data["$dict"].items()}
    if "$h" in data:
        if resolve is None:
            raise ValueError("a handle where only data may appear")
        return resolve(data)
    raise ValueError(f"unknown data tag in {sorted(data)[:3]}")


# --- framing: one JSON document per message, after its length ----------------------------------
_LENGTH = struct.Struct(">Q")


class TooLarge(ValueError):
    """A message longer than the reader allows."""


def send(sock, message):
    data = json.dumps(message, allow_nan=True).encode()
    sock.sendall(_LENGTH.pack(len(data)) + data)


def _exactly(sock, size, deadline=None):
    """`size` bytes from `sock`; TimeoutError once `deadline` (time.monotonic) has passed, however they trickle in."""
    chunks, left = [], size
    while left:
        if deadline is not None:
            sock.settimeout(max(deadline - time.monotonic(), 0))
            if deadline <= time.monotonic():
                raise TimeoutError("the message did not arrive in time")
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the connection closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive_bytes(sock, limit=None, deadline=None):
    """The next message's bytes; EOFError when the other side is gone; TooLarge past `limit` bytes; TimeoutError when
    the whole of it has not arrived by `deadline`."""
    (size,) = _LENGTH.unpack(_exactly(sock, _LENGTH.size, deadline))
    if limit is not None and size > limit:
        raise TooLarge(size)
    return _exactly(sock, size, deadline)


def receive(sock, limit=None):
    """The next message (the agent reads the judge's requests with it)."""
    return json.loads(receive_bytes(sock, limit))


# --- errors ---------------------------------------------------------------------------------
# A submission's exception whose `__str__` or class name raises would end the agent's thread: one case, not the step.
ENDED_ITS_PROCESS = {"type": "SystemExit", "bases": ["SystemExit"], "message": "the call ended the process it ran in"}
UNDESCRIBABLE = {"type": "Exception", "bases": ["Exception", "BaseException"], "message": "(its message raised when read)"}


def describe_error(error):
    """An exception as data. Whose fault it was is the judge's to decide, from what it sees."""
    try:
        return {"type": type(error).__name__,
                "bases": [c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins"],
                "message": str(error)[:2000]}
    except BaseException:  # noqa: BLE001 - whatever a submission's method raises
        return dict(UNDESCRIBABLE)


# --- the agent ------------------------------------------------------------------------------
class Agent:
    """Serves the judge's requests against a namespace (the kernel's, or the reference's)."""

    def __init__(self, namespace):
        self.namespace = namespace
        self.objects = {}  # handle -> object
        self.saved = None  # what `begin` replaced, put back by `end`
        self.thread = None  # the thread serving the judge, in a kernel

    # handles
    def _register(self, obj):
        handle = next((h for h, known in self.objects.items() if known is obj), None)
        if handle is None:
            handle = len(self.objects) + 1
            self.objects[handle] = obj
        torch = _torch()
        is_module = torch is not None and isinstance(obj, torch.nn.Module)
        return {"$h": handle, "type": type(obj).__name__, "module": is_module,
                "mro": [c.__name__ for c in type(obj).__mro__]}

    def _resolve(self, data):
        return self.objects[int(data["$h"])]

    def _target(self, request):
        target = request["target"]
        if isinstance(target, str):
            if target not in self.namespace:
                raise LookupError(target)
            return self.namespace[target]
        return self._resolve(target)

    def _path(self, obj, path):
        for part in [p for p in path.split(".") if p]:
            obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
        return obj

    # operations
    def op_call(self, request):
        func = self._target(request)
        if request.get("method"):
            func = getattr(func, request["method"])
        args = decode(request.get("args", []), self._resolve)
        kwargs = decode(request.get("kwargs", {"$dict": {}}), self._resolve)
        torch = _torch()
        if request.get("seed") is not None and torch is not None:
            torch.manual_seed(int(request["seed"]))
        if request.get("no_grad") and torch is not None:
            with torch.no_grad():
                return func(*args, **kwargs)
        return func(*args, **kwargs)

    def op_hold(self, request):
        """Values kept here, as handles for a later call: decoding is not what that call is measured for."""
        return [Encoded(self._register(value)) for value in decode(request["values"], self._resolve)]

    def op_room(self, request):
        """Empty arrays of the `shapes` and `dtypes` asked, as handles, each with where its data lies in this
        process's memory: the judge writes their values there itself (`apart`)."""
        arrays = [np.empty(tuple(int(n) for n in shape), dtype=np.dtype(str(dtype)))
                  for shape, dtype in zip(request["shapes"], request["dtypes"], strict=True)]
        return [{"handle": Encoded(self._register(a)), "address": a.ctypes.data} for a in arrays]

    def op_len(self, request):
        return len(self._target(request))

    def op_describe(self, request):
        """What the object at `path` is, as data: the facts the judge checks attributes with."""
        torch = _torch()
        try:
            obj = self._path(self._target(request), request.get("path", ""))
        except (AttributeError, IndexError, KeyError, TypeError):
            return {"exists": False}
        info = {"exists": True, "type": type(obj).__name__, "mro": [c.__name__ for c in type(obj).__mro__]}
        if torch is not None and isinstance(obj, torch.nn.Module):
            info.update(module=True, training=bool(obj.training))
            # its own tensors that are not buffers: a plain attribute stays behind in .to(device), a parameter is trained
            info["stray_tensors"] = {k: type(v).__name__ for k, v in {**vars(obj), **obj._parameters}.items()
                                     if torch.is_tensor(v) and v.dim()}
        if torch is not None and isinstance(obj, torch.nn.Linear):
            info["weight_shape"] = list(obj.weight.shape)
            info["bias"] = obj.bias is not None
        if torch is not None and isinstance(obj, torch.nn.Dropout):
            info["p"] = float(obj.p)
        if hasattr(type(obj), "__len__"):
            try:
                info["len"] = int(len(obj))
            except Exception:  # noqa: BLE001 - a length that cannot be taken is no length
                pass
        if isinstance(obj, (int, float, bool, str)) or obj is None:
            info["value"] = obj
        if type(obj).__name__ == "function" and hasattr(obj, "__code__"):  # is it still the stub?
            info["code"] = {"names": list(obj.__code__.co_names)[:64],
                            "ops": sorted({op.opname for op in dis.get_instructions(obj.__code__)})}
        return info

    def op_set_linear(self, request):
        """Copy a weight (and bias, or zeros for an unwanted one) into the nn.Linear at `path`."""
        torch = _torch()
        layer = self._path(self._target(request), request["path"])
        weight = decode(request["weight"])
        bias = decode(request.get("bias"))
        with torch.no_grad():
            layer.weight.copy_(torch.as_tensor(weight).to(layer.weight.dtype))
            if layer.bias is not None:
                layer.bias.copy_(torch.zeros_like(layer.bias) if bias is None
                                 else torch.as_tensor(bias).to(layer.bias.dtype))
        return None

    def op_copy(self, request):
        return Encoded(self._register(copy.deepcopy(self._target(request))))

    def op_backward(self, request):
        """Train mode, forward, backpropagate `cotangent`; the gradients at `paths`, as data. A function's are
        those of its floating-point tensor arguments (paths "0", "1", ...), each passed to it as a copy."""
        torch = _torch()
        module = self._target(request)
        is_module = isinstance(module, torch.nn.Module)
        for parameter in module.train().parameters() if is_module else ():
            parameter.grad = None
        args = decode(request.get("args", []), self._resolve)
        if not is_module:  # a copy: changing its argument in place is another case's rule, not a failed backward
            leaves = [a.detach().requires_grad_() if torch.is_tensor(a) and a.is_floating_point() else a for a in args]
            args = [a.clone() if torch.is_tensor(a) and a.requires_grad else a for a in leaves]
        called, hooks = set(), []
        for layer in {path.rsplit(".", 1)[0] for path in request.get("paths", []) if "." in path and is_module}:
            try:  # which of the layers forward calls: a layer no gradient reaches may be never called
                hooks.append(self._path(module, layer).register_forward_hook(
                    lambda *_, layer=layer: called.add(layer)))
            except (AttributeError, IndexError, TypeError, ValueError):
                continue
        try:
            out = module(*args)
        finally:
            for hook in hooks:
                hook.remove()
        if not isinstance(out, torch.Tensor) or not out.requires_grad:
            return {"differentiable": False}
        cotangent = torch.as_tensor(decode(request["cotangent"])).to(out.dtype)
        try:
            (out * cotangent).sum().backward()
        except RuntimeError as error:
            return {"differentiable": True, "backward_error": str(error)[:300]}
        grads = {path: self._path(module if is_module else leaves, path).grad for path in request.get("paths", [])}
        return {"differentiable": True, "grads": grads, "called": sorted(called)}

    def op_begin(self, request):
        """Start grading a step: remember the random state, and put the reference of the step's dependencies (shipped
        as source, only once their own grading is over) in place."""
        torch = _torch()
        self.objects.clear()
        saved = {"numpy_rng": np.random.get_state(), "names": {}}
        if torch is not None:
            saved["torch_rng"] = torch.random.get_rng_state()
        source = request.get("reference_source")
        if source:
            definitions = {"__name__": "__reference__"}
            exec(compile(source, REFERENCE_FILENAME, "exec"), definitions)  # noqa: S102
            for name in request.get("reference_names", []):
                saved["names"][name] = self.namespace.get(name, _MISSING)
                self.namespace[name] = definitions[name]
        self.saved = saved
        return None

    def op_end(self, request):
        """Put back what `begin` replaced; drop every handle."""
        torch = _torch()
        self.objects.clear()
        saved, self.saved = self.saved, None
        if saved is None:
            return None
        for name, value in saved["names"].items():  # a name the step's start added goes again
            self.namespace.pop(name, None) if value is _MISSING else self.namespace.__setitem__(name, value)
        np.random.set_state(saved["numpy_rng"])
        if torch is not None and "torch_rng" in saved:
            torch.random.set_rng_state(saved["torch_rng"])
        return None

    def answer(self, request):
        """One request (a dict) -> one reply (a dict); never raises."""
        try:
            op = getattr(self, "op_" + str(request.get("op")))
        except AttributeError:
            return {"error": {"type": "ValueError", "bases": ["ValueError"],
                              "message": f"unknown operation {request.get('op')!r}"}}
        try:
            return {"ok": encode(op(request), self._register)}
        except LookupError as error:
            if isinstance(request.get("target"), str) and describe_error(error)["message"].strip("'") == request["target"]:
                return {"undefined": request["target"]}
            return {"error": describe_error(error)}
        except KeyboardInterrupt:
            return {"interrupted": True}
        except BaseException as error:  # noqa: BLE001 - SystemExit from a submission included
            return {"error": describe_error(error)}

    def serve(self, sock):
        """Answer the judge's requests on `sock` until it closes, from a thread of its own (no trip through IPython)."""
        with sock:
            while True:
                try:
                    request = receive(sock)
                except KeyboardInterrupt:
                    continue  # an interrupt that arrived just after its request was answered
                except (EOFError, OSError, ValueError):
                    return
                if request.get("op") == "apart" or request.get("apart"):
                    apart(self, sock, request)
                    continue
                try:
                    send(sock, self.answer(request))
                except (TypeError, ValueError) as error:  # a reply json cannot write
                    send(sock, {"error": describe_error(error)})
                except OSError:
                    return

    def interrupt(self):
        """Raise KeyboardInterrupt in the thread that serves the judge (asked from the kernel's main thread when a
        request runs over its time)."""
        if self.thread is not None and self.thread.is_alive():
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread.ident),
                                                       ctypes.py_object(KeyboardInterrupt))


_MISSING = object()


def apart(agent, sock, request):
    """Fork; the child answers. To {"op": "apart"}: the judge on `sock`, in the kernel's place, until the judge ends it. To a
    call marked "apart" (in that child): that call, once let go; it stops itself at once, and the judge opens the call's
    window, writes its inputs into the arrays `op_room` made (empty until then), and lets it go (`KernelChannel`)."""
    try:
        child = os.fork()
    except BaseException as error:  # noqa: BLE001 - the fork failed: the judge is answered, held by nobody
        return send(sock, {"error": describe_error(error)})
    if child == 0:
        try:
            if request.get("op") == "apart":
                __import__("gc").disable()  # a collection writes to every object: a copy of the whole heap
                sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the kernel's streams are its threads'
                send(sock, {"ok": None})
                agent.serve(sock)  # the kernel's loop, in the child: until the judge ends it
            else:
                os.kill(os.getpid(), signal.SIGSTOP)
                send(sock, agent.answer(request))  # (one json cannot write ends the process: no answer, the call failed)
        finally:
            os._exit(0)
    while True:
        try:
            return os.waitpid(child, 0)
        except KeyboardInterrupt:  # an interrupt meant for the child's request: the judge ends the child
            continue


def install(namespace, socket_path):
    """In the kernel: connect to the judge at `socket_path` and answer it from a thread."""
    import types

    sys.setswitchinterval(SWITCH_INTERVAL)  # each step's boot sets it again, whatever a cell did
    module = types.ModuleType(MODULE_NAME)
    module.agent = Agent(namespace)
    module.install = install  # the next step's boot reuses it (compiling this file took 5 ms)
    sys.modules[MODULE_NAME] = module
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(socket_path)
    module.agent.thread = threading.Thread(target=module.agent.serve, args=(connection,), daemon=True,
                                           name="grader-agent")
    module.agent.thread.start()
    return module.agent
