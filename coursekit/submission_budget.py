"""How much one submission folder may bring in: its entries by number, its files by bytes together.

A student chooses how many files they hand in and how large each is; every path that takes a
submission in (`coursekit.intake`) walks its folder in one order and counts as it goes, so that
what is left out is the same on every path and for every run.
"""

from autograder.limits import MAX_SUBMITTED_BYTES, MAX_SUBMITTED_ENTRIES

TOO_MANY = f"past the first {MAX_SUBMITTED_ENTRIES} files and folders a submission may hold, not read"
TOO_MUCH = f"past the {MAX_SUBMITTED_BYTES / 1000**2:g} MB a submission's files may hold together, not read"


class Count:
    """The entries of one submission folder in the order they are walked: those past
    MAX_SUBMITTED_ENTRIES are left out (a folder whole), and the files past MAX_SUBMITTED_BYTES,
    but for the assignment's own notebooks (`notebooks`, names at the top), which are never counted:
    leaving one out would leave the submission not graded, which its author could choose."""

    def __init__(self, notebooks=()):
        self.notebooks, self.seen, self.over, self.taken = set(notebooks), 0, set(), 0

    def _notebook(self, relative):
        return len(relative.parts) == 1 and relative.name in self.notebooks

    def room(self, relative):
        """Bytes the file at `relative` may still take (None: a notebook, which only its own limit bounds)."""
        return None if self._notebook(relative) else MAX_SUBMITTED_BYTES - self.taken

    def weigh(self, relative, size):
        """Why the file at `relative`, of `size` bytes, is left out for the bytes before it, or ""."""
        room = self.room(relative)
        if room is None:
            return ""
        if size > room:
            return TOO_MUCH
        self.taken += size
        return ""

    def settle(self, relative, weighed, taken):
        """The file at `relative`, weighed at `weighed` bytes, took `taken` in the end (it grew or shrank
        while copied, or was left out: 0)."""
        if not self._notebook(relative):
            self.taken += taken - weighed

    def refusal(self, relative):
        """Why the entry at `relative` is left out for the number before it, or ""."""
        if self._notebook(relative):
            return ""
        self.seen += 1
        if self.seen <= MAX_SUBMITTED_ENTRIES:
            return ""
        self.over.add(relative)
        return TOO_MANY

    def enter(self, relative):
        return relative not in self.over
