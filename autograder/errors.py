"""What can go wrong in a case, as types every other grader module may import (a leaf module)."""

import builtins

# Starts the line of a step's report that the instructor must look at (a grader error, a kernel
# the judge restarted). Here, not in the judge, so reading reports does not import the judge.
FLAG = "FLAGGED FOR THE INSTRUCTOR"


def one_line(text):
    """`text` with each unprintable character shown as its escape (a newline as \\n): a name the
    student chose, put on a line of a report or of the instructor's flags, cannot start a line
    of its own (a forged flag) or carry bytes a page cannot encode."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def printable(text):
    """`text` as `one_line` shows each of its lines, the newlines kept: the student's own words,
    where a report, a file or the instructor's terminal shows them, carry no escape sequence,
    carriage return or bidi override, which a terminal would obey (red-team round r37)."""
    return "\n".join(one_line(line) for line in text.split("\n"))


class CaseFailure(AssertionError):
    """A wrong answer. Its message is shown to the student as is."""


class CaseTimeout(BaseException):
    """The case ran out of time. A BaseException, so no `except Exception` can swallow it."""


class DiagnosisTimeout(CaseTimeout):
    """The case ran out of time while the grader ran the code again to name the cause of a wrong
    value it had already seen (`toolkit.checks.diagnosing`): the case is lost for the wrong value."""


class KernelStuck(CaseTimeout):
    """The kernel did not answer even after an interrupt: it must be restarted."""


class RemoteError(Exception):
    """An exception raised by the code under test, carried back as data.

    `from_reply` makes an instance of a subclass named like the original type and derived
    from its nearest builtin base, so `except ValueError` in a suite still works. It is always
    the submission's: the kernel is the submission's territory, whatever it says.
    """

    type_name = "Exception"

    @classmethod
    def from_reply(cls, info):
        name = str(info.get("type", "Exception"))[:80] or "Exception"
        # shown in the report: a newline in it started a line with the judge's flag marker
        name = one_line(name)
        base = Exception
        for base_name in info.get("bases", ()):
            candidate = getattr(builtins, str(base_name), None)
            if isinstance(candidate, type) and issubclass(candidate, Exception):
                base = candidate
                break
        kind = type(name if name.isidentifier() else "RemoteException", (cls, base), {"type_name": name})
        return kind(str(info.get("message", ""))[:2000])
