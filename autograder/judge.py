"""The judge: nbgrader's Execute, with every verdict made outside the student's kernel.

`JudgedExecute` replaces nbgrader's `Execute` in `Autograde.autograde_preprocessors`
(`nbgrader_config.py`). It starts the student's kernel in a sandbox (`sandbox.py`) and runs the
notebook's ordinary cells there as nbgrader would. On reaching a graded cell it does not run
the cell's source: it runs that step's hidden cases itself, here, against the kernel's
namespace as it stands at that point of the notebook, through the data-only agent
(`agent.py`), and writes the cell's outputs: the report as text and the points as the cell's
value, which nbgrader records. Nothing the kernel prints or displays in a graded cell counts.

The expected values, the fixtures and the reference stay in this process. The only reference
code a kernel ever receives is that of a step's dependencies, once their own verdicts are in
(`reference.py`).

`judge_notebook(path)` runs the same pipeline on one notebook file, without nbgrader.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import nbformat
from jupyter_core.utils import run_sync
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Float

from autograder import dead_kernel, stuck
from autograder.errors import FLAG, CaseTimeout, KernelStuck
from autograder.harness import RECORD_KEY, CaseResult, StepResult, cases_of, instructor_flags, run_step
from autograder.kernel import agent, sandbox, still, warm
from autograder.kernel.channel import KernelChannel
from autograder.kernel.client import blocking_client
from autograder.kernel.lending import LendingKernel, SideKernel, may_lend_later
from autograder.kernel.manager import SandboxedKernel, SandboxKernelManager
from autograder.kernel_messages import sized_and_encodable
from autograder.limits import (
    CASE_TIMEOUT,
    CELL_TIMEOUT,
    ENDLESS_CELL_RETRY,
    INTERRUPT_GRACE,
    LENDING_ROOM,
    MAX_NOTEBOOK_OUTPUT_BYTES,
    SUBMISSION_TIMEOUT,
)
from autograder.reference import reference_source, with_dependencies
from autograder.sealed_outputs import SEALED_KEY
from autograder.seam import Implementation
from autograder.steps import STEPS, graded_step, nbgrader_metadata
from autograder.stubs import still_a_stub, untouched_steps

TRAINS = re.compile(r"\boptim\b")


def format_report(result: StepResult, max_points: float) -> str:
    """What the student sees under a graded cell: case titles and symptoms, never expected
    values, test source or tracebacks."""
    points = result.points(max_points)
    lines = [f"{result.step}: {points:g} / {max_points:g} points"]
    failed = [r for r in result.results if not r.passed]
    if failed and len(failed) == len(result.results) and len({r.message for r in failed}) == 1:
        # One cause (not implemented, not defined, a crash on import) fails every case: say it once.
        lines.append(f"  all {len(failed)} cases failed: {failed[0].message}")
    else:
        for r in result.results:
            lines.append(f"  [{'passed' if r.passed else 'FAILED'}] {r.case.title}")
            if not r.passed and r.message:
                lines.append(f"           {r.message}")
    lines += [f"  {FLAG}: {flag}" for flag in instructor_flags(result.as_record())]
    return "\n".join(lines)


def graded_outputs(result: StepResult, max_points: float) -> list[NotebookNode]:
    """The graded cell's outputs: the report, then the points as the cell's value."""
    report = nbformat.v4.new_output("stream", name="stdout", text=format_report(result, max_points) + "\n")
    value = nbformat.v4.new_output("execute_result", data={"text/plain": f"{result.points(max_points):g}"},
                                   execution_count=None)
    return [report, value]


def trains(nb: NotebookNode) -> bool:
    """True if a code cell names an optimiser module (`torch.optim`, `from torch import optim`):
    the warm parent builds a first optimiser for such notebooks. A notebook it misses only pays
    for its own first optimiser (a second)."""
    return any(cell.cell_type == "code" and TRAINS.search(cell.source) for cell in nb.cells)


class JudgedExecute(Execute):
    """nbgrader's Execute: ordinary cells in a sandboxed kernel, graded cells judged here."""

    endless_cell_timeout = Float(ENDLESS_CELL_RETRY, help=(
        "Seconds each ordinary cell gets once one cell of the notebook has timed out (at most "
        "`timeout`; 0: always `timeout`). Code that hung once usually hangs in every cell that calls "
        "it, and ordinary cells carry no points: the notebook's steps are judged with their own budgets."
    )).tag(config=True)
    submission_timeout = Float(SUBMISSION_TIMEOUT, help=(
        "Seconds for the whole notebook, start to end. Every cell's, step's and case's limit is cut "
        "to what is left of it, so it holds inside a cell and while a reply is read; once it is "
        "spent, the remaining cells are not run and the remaining steps score 0."
    )).tag(config=True)
    raise_on_iopub_timeout = Bool(False, help=(
        "nbgrader stops the whole notebook when a cell's output is still arriving 4 s after the cell "
        "ended (a large print, a thread that keeps printing): its grading would be lost to its own "
        "output. The judge moves on to the next cell, and what arrives late is dropped."
    )).tag(config=True)
    _cell_timed_out = False
    _deadline = float("inf")

    # The messages that carry output: counted against MAX_NOTEBOOK_OUTPUT_BYTES.
    _OUTPUT_MESSAGES = ("stream", "display_data", "execute_result", "update_display_data", "error")
    NO_OUTPUT = "\n[the grader dropped a {} message whose content is not of its kind]\n"  # dropped; graded on

    def process_message(self, msg, cell, cell_index):
        """nbclient's, with the notebook's output bounded: a kernel may print or display
        gigabytes, and each message would stay in this process (a classmate's worker) and in the
        autograded notebook. Past the budget a cell's output is dropped, with one line saying so."""
        msg_type = msg["msg_type"]
        if msg_type in self._OUTPUT_MESSAGES or msg_type.startswith("comm"):
            msg["content"], size = sized_and_encodable(msg.get("content"))
            self._output_bytes += size
            if self._output_bytes > MAX_NOTEBOOK_OUTPUT_BYTES:
                if cell_index not in self._cut_cells:
                    self._cut_cells.add(cell_index)
                    cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=(
                        f"\n[the grader kept no more output: this notebook printed or displayed more than "
                        f"{MAX_NOTEBOOK_OUTPUT_BYTES // 2**20} MiB]\n")))
                return None
        try:
            return super().process_message(msg, cell, cell_index)
        except (nbformat.ValidationError, TypeError, AttributeError, KeyError, ValueError):  # content not of its kind
            cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=self.NO_OUTPUT.format(msg_type)))

    def _left(self) -> float:
        """Seconds left of the notebook's own time."""
        return self._deadline - time.monotonic()

    def _within(self, limit: float | None = None) -> float:
        """The seconds a wait may take: `limit` (none: no limit of its own), cut to the notebook's time
        left, and never 0 (which some waits read as no limit at all)."""
        return max(min(limit, self._left()) if limit else self._left(), 0.01)

    def preprocess(self, nb, resources=None, km=None):
        resources = resources if resources is not None else {}
        self._cell_timed_out = False
        self._output_bytes, self._cut_cells = 0, set()
        folder = resources.get("metadata", {}).get("path") or os.getcwd()
        if not sandbox.available():
            sandbox.warn_once()
        self.step_results = {}
        self._unrecorded: dict[str, StepResult] = {}  # dependencies the notebook does not grade
        self._pending = [step for cell in nb.cells if (step := graded_step(cell))]
        self._untouched = untouched_steps(nb.cells)  # no lending kernel is started ahead for these
        self._inputs_sent = False  # whether the notebook's kernel has been sent a case's inputs
        self.ended_cells: set[int] = set()  # ordinary cells that ended the kernel: never replayed (`dead_kernel.py`)
        self._warm = warm.warm_parent()
        # The notebook's time starts once the grader's own start is done (the first notebook of a
        # process starts the warm parent; the first of a machine also makes the kernel image).
        self._deadline = time.monotonic() + self.submission_timeout
        if self._warm is not None and trains(nb):
            try:
                self._warm.warm("optimiser")
            except RuntimeError:
                pass  # each kernel builds its first optimiser itself
        self._box = SandboxedKernel(folder).open(self._warm)
        self._channel = None
        # Cold kernels (no warm parent) are replaced after each lending step instead.
        self._lending = None
        if self._warm is not None:
            self._lending = LendingKernel(self._start_lender, self._ordinary_cells, self._replay_timeout,
                                          self.startup_timeout)
        try:
            return super().preprocess(nb, resources, km)
        finally:
            self._close_channel()
            if self._lending is not None:
                self._lending.discard(wait=False)  # the envelope is removed next, with it
            self._box.close()

    def create_kernel_manager(self):
        self.kernel_manager_class = SandboxKernelManager
        manager = super().create_kernel_manager()
        manager.sandbox = self._box
        manager.use_bwrap = sandbox.available()
        manager.warm = self._warm
        return manager

    # the channel to the agent
    def _close_channel(self):
        if self._channel is not None:
            self._channel.stop()
            self._channel = None

    def _open_channel(self):
        if self._channel is None:
            self._channel = self._new_channel()
        return self._boot(self._channel, self._box)

    def _boot(self, channel, box):
        agent_path = box.inbox / "grader_agent.py"
        if not agent_path.exists():
            agent_path.write_text(Path(agent.__file__).read_text())
        channel.boot(agent_path, self._within(CELL_TIMEOUT))
        return channel

    def _new_channel(self, km=None, box=None):
        """A channel to the current kernel (or `km`'s, in `box`), over a blocking client of the
        shell channel only."""
        km, box = km or self.km, box or self._box
        client = blocking_client(km.connection_file)
        client.load_connection_file()
        client.ip = box.host_path(client.ip)
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        return KernelChannel(client, box.inbox, run_sync(km.interrupt_kernel),
                             km.provisioner.process.pid, box.envelope)

    def _restart_and_replay(self, upto):
        """A fresh sandboxed kernel that has run the notebook's ordinary cells before `upto`
        (`dead_kernel.restart_and_replay`: a cell a replay dies in is left out of replays too)."""
        dead_kernel.restart_and_replay(self, upto)

    # the lending kernel (`lending.py`)
    def _start_lender(self) -> SideKernel:
        """A started kernel of this submission, in its envelope, for lending steps."""
        box = SandboxedKernel(self._box.submission_dir).open(self._warm, envelope=self._box.envelope)
        km = SandboxKernelManager(kernel_name=self.km.kernel_name, config=self.config)
        km.sandbox, km.use_bwrap, km.warm = box, sandbox.available(), self._warm
        km.oom_score_adj = 1000  # out of memory, the envelope loses this kernel, never the notebook's
        lender = SideKernel(km, box)
        try:
            run_sync(km.start_kernel)(extra_arguments=self.extra_arguments)
            lender.channel = self._new_channel(km, box)
        except Exception:
            lender.stop()
            raise
        return lender

    def _ordinary_cells(self, first, upto):
        return [(index, cell.source) for index, cell in enumerate(self.nb.cells[first:upto], first)
                if cell.cell_type == "code" and not graded_step(cell) and index not in self.ended_cells]

    def _replay_timeout(self, index):
        return self._get_timeout(self.nb.cells[index]) or CELL_TIMEOUT

    # cells
    def _get_timeout(self, cell):
        timeout = super()._get_timeout(cell)
        if self._cell_timed_out and self.endless_cell_timeout > 0:
            timeout = min(timeout, self.endless_cell_timeout) if timeout else self.endless_cell_timeout
        return self._within(timeout)

    async def _async_handle_timeout(self, timeout, cell=None):
        self._cell_timed_out = True
        return await super()._async_handle_timeout(timeout, cell)

    def preprocess_cell(self, cell, resources, index):
        step = graded_step(cell)
        if step is None:
            if cell.cell_type == "code" and self._left() <= 0:
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=self._spent() + "\n")]
                return cell, self.resources
            if self._lending is not None and self._lending.kernel is not None and cell.cell_type == "code":
                if not self._room_for_lending():
                    self._lending.discard()
                    self._lending = None  # the rest of the notebook lends the older way
                elif may_lend_later(self._pending, {**self._unrecorded, **self.step_results}):
                    self._lending.follow(index + 1)  # it runs the cell while this kernel does
                else:
                    self._lending.discard()  # no step to come can be lent anything
            if self._inputs_sent and cell.cell_type == "code":
                cell.metadata[SEALED_KEY] = True  # what it shows may carry them (`sealed_outputs.py`)
            return dead_kernel.ran(partial(super().preprocess_cell, cell, resources, index), self, cell, index)
        if step in self._pending:
            self._pending.remove(step)
        if self._left() <= 0:
            result = StepResult(step, [CaseResult(c, False, self._spent()) for c in cases_of(step)])
        else:
            result = stuck.judged(self.judge, step, index)  # a stuck kernel costs the step
        self.step_results[step] = result
        if (self._lending is not None and result.fraction < 1
                and any(step in STEPS[later].depends_on for later in self._pending if later not in self._untouched)
                and self._room_for_lending()):
            self._open_lending()  # a later step will borrow its reference
        max_points = float(nbgrader_metadata(cell).get("points", STEPS[step].points))
        cell.outputs = [NotebookNode(o) for o in graded_outputs(result, max_points)]
        # The verdicts as data, for the class report (coursekit/report): never shown in feedback.
        cell.metadata[RECORD_KEY] = NotebookNode(result.as_record())
        cell.execution_count = None
        return cell, self.resources

    def judge(self, step: str, index: int) -> StepResult:
        """Run `step`'s hidden cases against the kernel as it stands before cell `index`."""
        try:
            channel = self._open_channel()
        except KernelStuck:
            self._restart_and_replay(index)
            channel = self._open_channel()
        lent = self.lent_references(step, channel, index)
        if lent:
            asked = Implementation(self._channel)
            asked.deadline = time.monotonic() + self._within(CASE_TIMEOUT)
            if still_a_stub(asked, step):
                lent = []  # it raises before it could call anything lent (`stubs.py`)
        if lent:
            return self._judge_lending(step, lent, index)
        if self._lending is not None:
            try:
                self._lending.catch_up(index, within=self._within())  # idle while a step is judged: peaks are the envelope's
            except (KernelStuck, RuntimeError, OSError):
                self._lending.discard()
        channel = self._channel  # a check of an ungraded dependency may have replaced the kernel
        self._inputs_sent = True
        result = run_step(step, Implementation(channel), budget=self._left())
        if result.kernel_lost:
            self._restart_and_replay(index)
        else:
            self._close_agent()
        return result

    def _close_agent(self):
        """The agent's connection lives as long as its step: the student's later cells find no
        socket to the judge (one that wrote to it held each later cell until its time limit), and
        the agent's thread ends."""
        if self._channel is not None:
            self._channel.close()

    def _judge_lending(self, step: str, lent: list[str], index: int) -> StepResult:
        """Judge `step` with the reference of `lent` in the lending kernel, never in the
        notebook's own: nothing of the reference (an object kept, its source recorded) is ever
        where the notebook's later cells run. Without a lending kernel (cold kernels, no room in
        the memory budget, or none would start), in the notebook's kernel, replaced afterwards."""
        needed = with_dependencies(lent)
        lender = None
        if self._lending is not None and self._room_for_lending():
            self._close_agent()  # the notebook's kernel is not judged here
            try:
                lender = self._lending.ready_for(index, within=self._within())  # its start, within the notebook's time
                channel = self._boot(lender.channel, lender.box)
                # Nothing of the notebook's kernel runs beside a kernel that holds a reference (`still.py`).
                held = still.hold(self.km.provisioner.process.pid)
            except (Exception, CaseTimeout):  # noqa: BLE001 - it did not start, catch up or hold still: the old way
                self._lending.discard()
                lender = None
        if lender is None and self._left() <= 0:  # no time for the old way (a kernel to replace) either
            return StepResult(step, [CaseResult(c, False, self._spent()) for c in cases_of(step)])
        if lender is None:
            channel = self._open_channel()
        try:
            result = run_step(step, Implementation(channel), reference_source(needed), lent, budget=self._left())
        finally:
            if lender is not None:
                self._lending.discard()  # gone, with all it held, before the notebook's kernel goes on
                still.release(held)
        if lender is None:
            self._restart_and_replay(index)
        elif may_lend_later(self._pending, {**self._unrecorded, **self.step_results}) and self._room_for_lending():
            self._open_lending()  # a fresh one, holding nothing, follows the notebook again
        return result

    def _open_lending(self):
        """Start the lending kernel if there is none; without it, the older way from here on."""
        try:
            self._lending.open()
        except Exception:  # noqa: BLE001 - none would start (its processes full, say)
            self._lending = None

    def _room_for_lending(self) -> bool:
        """Whether a lending kernel fits in the submission's memory (where it is counted): one
        may start while the submission holds less than LENDING_ROOM, and one that runs (holding
        about as much as the notebook's) may go on below twice that."""
        room = LENDING_ROOM if self._lending.kernel is None else 2 * LENDING_ROOM
        envelope = self._box.envelope
        try:
            return not envelope.counts_memory or envelope.usage() < room
        except OSError:
            return True

    def _spent(self) -> str:
        return f"not run: grading of this notebook stopped after its {self.submission_timeout:g} s"

    def lent_references(self, step: str, channel: KernelChannel, index: int) -> list[str]:
        """The dependencies of `step` whose reference the kernel gets while `step` is graded:
        those the notebook grades no later than here (so the reference of a step never helps
        that step) and not with full marks. A dependency that passes every one of its cases is
        the student's own to use: one the notebook grades, by its verdict; one it does not grade
        (04 builds on the student's own 03), by its cases run here once, unrecorded."""
        lent = []
        for name in STEPS[step].depends_on:
            if name in self._pending:
                continue
            if name not in self.step_results and name not in self._unrecorded:
                self._inputs_sent = True
                checked = run_step(name, Implementation(channel), budget=self._left())
                self._unrecorded[name] = checked
                if checked.kernel_lost:
                    self._restart_and_replay(index)
                    channel = self._open_channel()
            verdict = self.step_results.get(name) or self._unrecorded[name]
            if verdict.fraction < 1.0 or verdict.kernel_lost:
                lent.append(name)
        return lent


@dataclass
class JudgedNotebook:
    steps: dict[str, StepResult] = field(default_factory=dict)
    notebook: NotebookNode | None = None
    problem: str = ""


def judge_notebook(path: str | os.PathLike, timeout: float = CELL_TIMEOUT,
                   endless_cell_timeout: float = ENDLESS_CELL_RETRY,
                   submission_timeout: float = SUBMISSION_TIMEOUT) -> JudgedNotebook:
    """Grade one notebook file with the judge, outside nbgrader: {step: StepResult}."""
    path = Path(path)
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as error:  # noqa: BLE001 - whatever the file is, say why it cannot be graded
        return JudgedNotebook(problem=f"the notebook could not be read ({type(error).__name__}: {error})")
    executor = JudgedExecute(timeout=timeout, endless_cell_timeout=endless_cell_timeout,
                             submission_timeout=submission_timeout,
                             startup_timeout=60 + INTERRUPT_GRACE,
                             extra_arguments=["--HistoryManager.hist_file=:memory:"])
    try:
        executor.preprocess(nb, {"metadata": {"path": str(path.parent)}})
    except Exception as error:  # noqa: BLE001
        print(f"judging {path} failed: {type(error).__name__}: {error}", file=sys.stderr)
        return JudgedNotebook(getattr(executor, "step_results", {}), nb,
                              f"grading stopped ({type(error).__name__}: {str(error)[:200]})")
    return JudgedNotebook(executor.step_results, nb)
