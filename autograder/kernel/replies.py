"""What the judge accepts as an agent's reply: every reply is hostile input.

A kernel answers the judge with bytes of JSON it chose. Before the judge reads anything in them,
they must be a reply: containers and nesting bounded, one of REPLY_KEYS, an error made of strings
(`checked_reply`). What fails costs the case it answers, as the submission's failure (`KernelChannel`).
"""

import json
import re
from typing import Any, NotRequired, TypedDict

from autograder.limits import MAX_REPLY_CONTAINERS, MAX_REPLY_DEPTH


class ErrorInfo(TypedDict):
    """An exception of the code under test, as the agent describes it (`agent.describe_error`)."""

    type: str
    bases: list[str]
    message: str


class Reply(TypedDict):
    """What the agent answers a request with: exactly one of these keys."""

    ok: NotRequired[Any]  # the result, encoded (`agent.encode`)
    error: NotRequired[ErrorInfo]
    undefined: NotRequired[str]  # the name asked for is not defined
    interrupted: NotRequired[bool]  # the request ran over its time


class HostileReply(ValueError):
    """A reply that is not the data a reply is made of."""


REPLY_KEYS = {"ok", "error", "undefined", "interrupted"}
ERROR_FIELDS = {"type": str, "bases": list, "message": str}


_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')  # linear on JSON, every string of which is closed
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")


def _depth(data: bytes) -> int:
    """How deeply `data`, which json.loads has taken (an unclosed string would make the search
    for strings quadratic), nests: read from its brackets outside strings, not from the decoded
    reply. A walk of the decoded values held a tuple for each item of a flat list, which
    MAX_REPLY_CONTAINERS does not bound (one list): 64 MiB of `0,` took the judge 2.9 GB and 43 s
    (red-team round r27)."""
    depth = deepest = 0
    for bracket in _NOT_BRACKET.sub(b"", _STRING.sub(b"", data)):  # at most 2 x MAX_REPLY_CONTAINERS
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def checked_reply(data: bytes) -> Reply:
    """The reply in `data` (bytes of JSON), once it is known to be a reply: bounded containers and
    nesting, one of REPLY_KEYS, and an error made of strings. Raises HostileReply otherwise."""
    containers = data.count(b"[") + data.count(b"{")  # an upper bound: brackets in strings count too
    if containers > MAX_REPLY_CONTAINERS:
        raise HostileReply(f"more than {MAX_REPLY_CONTAINERS} lists and objects")
    try:
        reply = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise HostileReply(type(error).__name__) from None
    if containers > MAX_REPLY_DEPTH and _depth(data) > MAX_REPLY_DEPTH:
        raise HostileReply(f"nested more than {MAX_REPLY_DEPTH} deep")
    if not isinstance(reply, dict) or len(reply) != 1 or not set(reply) <= REPLY_KEYS:
        raise HostileReply("not a reply")
    info = reply.get("error")
    if info is not None and not (isinstance(info, dict) and all(
            isinstance(info.get(k, t()), t) for k, t in ERROR_FIELDS.items())
            and all(isinstance(b, str) for b in info.get("bases", []))):
        raise HostileReply("an error that is not made of strings")
    if "undefined" in reply and not isinstance(reply["undefined"], str):
        raise HostileReply("an undefined name that is not a string")
    return Reply(**reply)  # type: ignore[typeddict-item]  # its keys were checked above


def no_answer(message: str) -> Reply:
    return {"error": {"type": "NoAnswer", "bases": [], "message": message}}


def invalid_answer(message: str) -> Reply:
    """What the judge makes of an answer it refuses (`KernelChannel`): the call's failure, as the submission's."""
    return {"error": {"type": "InvalidAnswer", "bases": ["Exception", "BaseException"], "message": message}}
