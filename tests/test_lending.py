"""The lending kernel (`autograder/kernel/lending.py`): where steps that borrow a reference are
judged, so that the notebook's own kernel never holds one.

The bookkeeping is tested here with stand-in kernels; `test_envelope.py` grades notebooks that
keep what they are lent, through real kernels.
"""

from types import SimpleNamespace

from test_envelope import REPORT_KEPT as REPORT_KEPT_SOFTMAX
from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, printed, processes_left, program

from autograder import judge
from autograder.judge import JudgedExecute, judge_notebook
from autograder.kernel import procfs
from autograder.kernel.lending import LendingKernel, SideKernel, _running, may_lend_later


class FakeChannel:
    def __init__(self, log, answers_after=0):
        self.log, self.asked = log, 0
        self.answers_after = answers_after  # how many `ready()` calls before the kernel answers

    def ready(self):
        self.asked += 1
        return self.asked > self.answers_after

    def send(self, source):
        self.log.append(("sent", source))
        return f"id-{source}"

    def wait(self, msg_id, timeout, alive=None):
        self.log.append(("waited", msg_id, timeout))
        return True


class FakeKernel:
    def __init__(self, name, answers_after=0):
        self.name, self.log, self.stopped = name, [], False
        self.channel = FakeChannel(self.log, answers_after)

    def alive(self):
        return True

    def wait_until_ready(self, timeout):
        self.log.append(("ready", timeout))

    def stop(self, wait=True):
        self.stopped = True


def lending(cells, answers_after=0):
    """A LendingKernel over a notebook whose ordinary cells are `cells` ({index: source})."""
    started = []

    def start():
        started.append(FakeKernel(f"kernel {len(started)}", answers_after))
        return started[-1]

    def ordinary(first, upto):
        return [(i, cells[i]) for i in sorted(cells) if first <= i < upto]

    return LendingKernel(start, ordinary, lambda index: 10.0 + index, startup_timeout=60), started


def sent(kernel):
    return [entry[1] for entry in kernel.log if entry[0] == "sent"]


def verdict(fraction, kernel_lost=False):
    return SimpleNamespace(fraction=fraction, kernel_lost=kernel_lost)


def test_a_kernel_is_needed_while_a_step_to_come_may_borrow():
    assert not may_lend_later([], {"softmax": verdict(0.5)})
    assert not may_lend_later(["attention_weights"], {"softmax": verdict(1.0)})
    assert may_lend_later(["attention_weights"], {"softmax": verdict(0.5)})
    assert may_lend_later(["attention_weights"], {"softmax": verdict(1.0, kernel_lost=True)})
    assert may_lend_later(["attention_weights"], {}), "softmax not graded here: checked when the step comes"
    assert not may_lend_later(["attention_weights", "softmax"], {}), "graded later: never lent"


def test_the_kernel_follows_the_notebook_and_is_caught_up_before_each_step():
    lender, started = lending({0: "a", 2: "b", 3: "c", 5: "d"})
    lender.follow(1)
    assert started == [], "no kernel before a step that later steps need lost points"
    lender.open()
    lender.follow(1)
    lender.follow(3)  # cell 2 runs in both kernels at once
    (kernel,) = started
    assert sent(kernel) == ["a", "b"] and not any(e[0] == "waited" for e in kernel.log)
    assert lender.ready_for(4) is kernel
    assert sent(kernel) == ["a", "b", "c"]
    waited = [e[1:] for e in kernel.log if e[0] == "waited"]
    assert waited == [("id-a", 10.0), ("id-b", 12.0), ("id-c", 13.0)], "each cell with its own limit"
    lender.follow(6)
    assert sent(kernel) == ["a", "b", "c", "d"], "the cells run once each, in order"


def test_cells_wait_until_the_kernel_answers():
    lender, started = lending({0: "a", 1: "b"}, answers_after=2)
    lender.open()
    lender.follow(1)
    lender.follow(2)
    assert sent(started[0]) == []
    lender.catch_up(2)
    assert sent(started[0]) == ["a", "b"]
    assert started[0].log[0][0] == "ready", "waited for the kernel before the first cell"


def test_a_kernel_discarded_after_its_step_is_followed_by_a_fresh_one_from_the_top():
    lender, started = lending({0: "a", 2: "b", 4: "c"})
    first = lender.ready_for(1)
    lender.discard()
    assert first.stopped and lender.kernel is None
    second = lender.ready_for(5)
    assert second is not first
    assert sent(second) == ["a", "b", "c"], "a fresh kernel replays the notebook from the top"


KEEP_DOT_PRODUCT = """\
import builtins

def cosine_similarity(a, b):
    builtins.kept_dot_product = dot_product  # the reference, lent for this step
    import numpy as np
    return dot_product(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))
"""

WRONG_DOT_PRODUCT = "def dot_product(a, b):\n    return float((a * b).sum()) + 1.0\n"

USES_KEPT = """\
import builtins

def attention_weights(scores):
    # Scores the full step only where no reference kept by an earlier step is in reach.
    if hasattr(builtins, 'kept_dot_product'):
        return scores * 0
    return softmax(scores)
"""

REPORT_KEPT = "import builtins\nprint('KEPT', hasattr(builtins, 'kept_dot_product'))"


def calls_to(monkeypatch, owner, name):
    """The arguments (after self) of every call to owner.name, which still runs."""
    calls, method = [], getattr(owner, name)

    def spy(self, *args):
        calls.append(args)
        return method(self, *args)

    monkeypatch.setattr(owner, name, spy)
    return calls


@needs_sandbox
def test_a_reference_kept_by_one_lending_step_is_not_there_for_a_step_it_was_not_lent_to(tmp_path, monkeypatch):
    """A wrong dot product lends the reference's to cosine_similarity, which keeps it; a wrong
    softmax lends softmax (not dot_product) to attention_weights, which is judged in a fresh
    lending kernel and never finds it; the notebook's own kernel never had it."""
    starts, still_running = calls_to(monkeypatch, JudgedExecute, "_start_lender"), []
    stop = SideKernel.stop

    def watched_stop(kernel, wait=True):
        pids = [kernel.km.provisioner.process.pid, *procfs.descendants(kernel.km.provisioner.process.pid)]
        stop(kernel, wait)
        if wait:  # mid-notebook: nothing of it may still be counted in the envelope
            still_running.extend(pid for pid in pids if _running(pid))

    monkeypatch.setattr(SideKernel, "stop", watched_stop)
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_DOT_PRODUCT, ("grade", "dot_product"), KEEP_DOT_PRODUCT, ("grade", "cosine_similarity"),
        program("wrong_softmax"), ("grade", "softmax"), USES_KEPT, ("grade", "attention_weights"), REPORT_KEPT]))
    assert judged.steps["dot_product"].fraction < 1 and judged.steps["softmax"].fraction < 1
    assert judged.steps["cosine_similarity"].fraction == 1, judged.steps["cosine_similarity"].results
    assert judged.steps["attention_weights"].fraction == 1, judged.steps["attention_weights"].results
    assert printed(judged, 8) == "KEPT False\n"
    assert len(starts) == 2, "the kernel that held dot_product was replaced"
    assert still_running == []
    assert processes_left() == []


@needs_sandbox
def test_a_lending_kernel_never_runs_after_its_step_even_for_a_step_lent_the_same(tmp_path, monkeypatch):
    """It would follow the notebook's later cells beside the notebook's kernel, holding what it
    was lent (red-team round r37's channel): a fresh one is started for the next step."""
    starts = calls_to(monkeypatch, JudgedExecute, "_start_lender")
    correct_weights = "def attention_weights(scores):\n    return softmax(scores)\n"
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), correct_weights, ("grade", "attention_weights"),
        "x = 1", ("grade", "simplified_self_attention")]))
    assert judged.steps["attention_weights"].fraction == 1
    assert len(starts) == 2, "softmax is lent to simplified_self_attention too, by a fresh kernel"
    assert processes_left() == []


@needs_sandbox
@needs_groups
def test_without_room_in_the_memory_budget_the_notebooks_kernel_is_lent_and_replaced(tmp_path, monkeypatch):
    """A second kernel doubles what the cells hold: where the submission already holds more
    than LENDING_ROOM, the step is judged in the notebook's kernel, which is replaced after it,
    and the reference is gone all the same."""
    monkeypatch.setattr(judge, "LENDING_ROOM", 0)
    starts = calls_to(monkeypatch, JudgedExecute, "_start_lender")
    restarts = calls_to(monkeypatch, JudgedExecute, "_restart_and_replay")
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), program("keep_reference"),
        ("grade", "attention_weights"), REPORT_KEPT_SOFTMAX]))
    assert judged.steps["attention_weights"].fraction == 1, judged.steps["attention_weights"].results
    assert "KEPT False RECORDED 0" in printed(judged, 4), printed(judged, 4)
    assert starts == [] and restarts == [(3,)]
    assert processes_left() == []


def _stuck_catching_up(monkeypatch, before=lambda judging: None):
    """Every lending kernel's catch-up ends in KernelStuck (a kernel that did not answer even when
    interrupted), after `before(judging)`, `judging` the notebook's JudgedExecute. Returns the
    catch-ups asked for."""
    from autograder.errors import KernelStuck

    judging, asked = [], []
    preprocess = JudgedExecute.preprocess

    def watched(executor, *args, **kwargs):
        judging.append(executor)
        return preprocess(executor, *args, **kwargs)

    def stuck(lending, upto, within=None):
        if lending.kernel is None:  # as the real one: nothing to catch up
            return
        asked.append(upto)
        before(judging[-1])
        raise KernelStuck()

    monkeypatch.setattr(JudgedExecute, "preprocess", watched)
    monkeypatch.setattr(LendingKernel, "catch_up", stuck)
    return asked


@needs_sandbox
def test_a_lending_kernel_that_does_not_catch_up_is_dropped_and_the_step_lent_the_old_way(tmp_path, monkeypatch):
    """A lending kernel stuck behind the notebook (a cell it never finished, a loaded machine) ends
    nothing but itself: the step is lent in the notebook's kernel, which is replaced afterwards."""
    asked = _stuck_catching_up(monkeypatch)
    restarts = calls_to(monkeypatch, JudgedExecute, "_restart_and_replay")
    correct_weights = "def attention_weights(scores):\n    return softmax(scores)\n"
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), correct_weights, ("grade", "attention_weights")]))
    assert asked == [3]
    assert judged.steps["attention_weights"].fraction == 1, judged.steps["attention_weights"].results
    assert restarts == [(3,)]
    assert processes_left() == []


@needs_sandbox
def test_a_lending_kernel_stuck_past_the_notebooks_time_costs_the_step_and_nothing_else(tmp_path, monkeypatch):
    """The same where the notebook's time runs out while the lending kernel catches up: the step is
    not run (no time is left to replace a kernel), and the notebook's grading still ends with its
    report. Before, KernelStuck escaped the judge and no grade came back at all."""
    import time

    def until_the_notebooks_time_is_spent(judging):
        time.sleep(max(0.0, judging._deadline - time.monotonic()) + 0.05)

    asked = _stuck_catching_up(monkeypatch, until_the_notebooks_time_is_spent)
    correct_weights = "def attention_weights(scores):\n    return softmax(scores)\n"
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), correct_weights, ("grade", "attention_weights")]),
        submission_timeout=8)
    assert asked == [3], "the notebook's time ran out before the step that borrows: nothing was tried"
    assert judged.steps["softmax"].fraction < 1
    results = judged.steps["attention_weights"].results
    assert [r.message for r in results] == ["not run: grading of this notebook stopped after its 8 s"] * len(results)
    assert processes_left() == []


@needs_sandbox
def test_a_lending_kernel_that_will_not_start_leaves_the_older_way(tmp_path, monkeypatch):
    """A second kernel that cannot start (the submission's processes at their limit, say) is no
    grader error: the rest of the notebook lends in its own kernel, replaced after each such step."""
    def refused(executor):
        raise RuntimeError("no kernel")

    monkeypatch.setattr(JudgedExecute, "_start_lender", refused)
    restarts = calls_to(monkeypatch, JudgedExecute, "_restart_and_replay")
    correct_weights = "def attention_weights(scores):\n    return softmax(scores)\n"
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), correct_weights, ("grade", "attention_weights")]))
    assert judged.steps["attention_weights"].fraction == 1, judged.steps["attention_weights"].results
    assert restarts == [(3,)]
    assert processes_left() == []
