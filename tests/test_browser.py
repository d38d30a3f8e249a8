"""A student's first hour, in a real browser: JupyterLab in Debian's Chromium, driven by Playwright.

`coursekit lab --student` serves a folder on 127.0.0.1 holding the released notebook 01 twice:
untouched, and completed with the reference. For each the test clicks *Run > Run All Cells*
(and, as a student would after an error, *Run Selected Cell and All Below* from the first cell
that did not run), then clicks nbgrader's *Validate* button and reads its verdict.

- Untouched: every graded cell raises NotImplementedError, every demo prints its one-line hint,
  and Validate fails, naming every step.
- Completed: no cell fails, no demo prints a hint, and Validate passes.

Every wait is keyed to what the page shows: the notebook's cells, the kernel's "Idle", the
clicked cell's prompt leaving `[ ]:` (the run has started), no `[*]:` left (it has ended),
Validate's dialog. The timeouts are only upper bounds for a loaded machine. The test used to
sleep 0.3 s after clicking Run and then poll for "no [*] and Idle": on a busy machine (load 4
to 12 on 2 cores) the run had not started 0.3 s after the click, so the poll found the
notebook idle and untouched, the test clicked Run again, and the notebook ran twice over,
past the 90 s bound. Opening the second notebook also restored the first one's tab, which
could keep the focus (Run's menu items then stay disabled); each notebook now opens in a
workspace of its own, reset, so it is the only one in the page.

Screenshots are kept under pytest's temporary folder; the test prints where. Chromium must be
installed (`.ci/run` installs it with apt-get); without it the test fails, it does not skip.
"""

import json
import os
import re
import shutil
import time
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from autograder.steps import A01, graded_step, steps_of
from coursekit import samples
from coursekit.paths import ROOT, released_notebook

CHROMIUM = os.environ.get("COURSEKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NOTEBOOK = released_notebook(A01)
HINT = "Nothing to show yet"
DEMO = re.compile(r"^with needs\(", re.M)  # a demo cell: runs once the steps it names are done
# The notebook on show: the tab opened last. The other tab's notebook stays in the page, hidden,
# and its cells must neither count as this one's nor be clicked.
SHOWN = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"
PROMPTS = (f"() => Array.from(document.querySelectorAll('{SHOWN} .jp-CodeCell .jp-InputPrompt'))"
           ".map(e => e.textContent.trim())")
# JupyterLab settings for the test: every cell in the DOM, no news or update pop-ups.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}
# Upper bounds, never a pace: every wait ends as soon as the page shows what it waits for. On a
# loaded machine (load 4 to 12 on 2 cores) one click's cells can take minutes.
RUN_TIMEOUT = 300  # seconds for the cells started by one click to finish
VALIDATE_TIMEOUT = 300  # seconds for Validate's verdict (it runs the notebook in its own kernel)
OPEN_TIMEOUT = 180  # seconds for a notebook to show and its kernel to be idle
IDLE = "#jp-main-statusbar >> text=Idle"


def _chromium():
    path = shutil.which(CHROMIUM) or (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None)
    if path is None:
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's package (`apt-get install -y "
                    "chromium`, as .ci/run does) or set COURSEKIT_CHROMIUM to its path", pytrace=False)
    return path


def _hand_out(folder):
    """The student's two notebooks, fresh, in `folder`: the untouched release and the completed one."""
    release = samples.read(NOTEBOOK)
    samples.write(release, folder / "untouched" / NOTEBOOK.name)
    samples.write(samples.complete(release), folder / "completed" / NOTEBOOK.name)


def write_lab_settings(folder):
    """LAB_SETTINGS as JupyterLab's settings files in `folder` (JUPYTERLAB_SETTINGS_DIR)."""
    for name, values in LAB_SETTINGS.items():
        path = Path(folder) / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return folder


@pytest.fixture
def student_lab(tmp_path):
    """A student's folder with the untouched and the completed release, served by `coursekit lab`."""
    from test_server import labs

    folder = tmp_path / "student"
    _hand_out(folder)
    settings = write_lab_settings(tmp_path / "lab-settings")
    env = dict(os.environ, COURSEKIT_EXCHANGE=str(tmp_path / "exchange"), MPLBACKEND="Agg",
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    (tmp_path / "exchange").mkdir()
    with labs(dict(course=ROOT, env=env, log=tmp_path / "lab.log", student=folder)) as (server,):
        yield server, folder


@contextmanager
def chromium(profile):
    """Debian's Chromium, headless, driven by Playwright, with its profile in `profile`."""
    from playwright.sync_api import sync_playwright

    executable = _chromium()
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=executable, headless=True,
            args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(90_000)  # any one click or wait not bounded below
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path / "chromium-profile") as context:
        yield context


def _settled(page, timeout=RUN_TIMEOUT):
    """Wait until no cell of the notebook shows [*] and the kernel says Idle; the prompts then."""
    page.wait_for_function(f"() => !({PROMPTS})().includes('[*]:')", timeout=timeout * 1000)
    page.locator(IDLE).wait_for(timeout=timeout * 1000)
    return page.evaluate(PROMPTS)


def _run_from(page, cell, command):
    """Select code cell `cell`, click Run > `command`, and wait for what the page shows: first
    that cell's prompt leaving [ ]: (the run has started: a click that landed before the notebook
    was ready shows nothing and is made again), then every cell settled."""
    prompt = page.locator(f"{SHOWN} .jp-CodeCell .jp-InputPrompt").nth(cell)
    started = f"() => ({PROMPTS})()[{cell}] !== '[ ]:'"
    deadline = time.monotonic() + OPEN_TIMEOUT
    while True:
        prompt.scroll_into_view_if_needed()
        prompt.click(force=True)  # selects the cell and makes its notebook the active one
        page.get_by_role("menuitem", name="Run", exact=True).click()
        item = page.locator(f'li[data-command="{command}"]')
        if "lm-mod-disabled" not in (item.get_attribute("class") or ""):
            item.click()
            page.wait_for_function(started, timeout=RUN_TIMEOUT * 1000)
            return _settled(page)
        page.keyboard.press("Escape")  # the notebook is not the active widget yet: close the menu
        assert time.monotonic() < deadline, f"Run > {command} still disabled after {OPEN_TIMEOUT} s"


def run_everything(page):
    """Run All Cells; after an error stops the run, go on from the first cell that did not run."""
    prompts = _run_from(page, 0, "runmenu:run-all")
    for _ in range(len(prompts)):
        if "[ ]:" not in prompts:
            break
        prompts = _run_from(page, prompts.index("[ ]:"), "notebook:run-all-below")
    assert "[ ]:" not in prompts, f"cells never ran: {prompts}"


def validate(page):
    """Click nbgrader's Validate button; (dialog title, dialog text)."""
    page.get_by_role("button", name="Validate").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=VALIDATE_TIMEOUT * 1000)
    title = dialog.locator(".jp-Dialog-header").inner_text().strip()
    return title, dialog.inner_text()


def open_notebook(page, url):
    """Open the notebook at `url` (a /lab/workspaces/NAME/tree/PATH URL) on its own: `reset`
    empties that workspace, so no tab restored from earlier shares the page or takes the focus.
    Waits until its cells show and its kernel is idle."""
    page.goto(url + ("&" if "?" in url else "?") + "reset")
    page.locator(f"{SHOWN} .jp-CodeCell").first.wait_for(timeout=OPEN_TIMEOUT * 1000)
    page.locator(IDLE).wait_for(timeout=OPEN_TIMEOUT * 1000)  # the kernel has started


def lab_url(server, workspace, relative):
    return f"{server.url}/lab/workspaces/{workspace}/tree/{relative}?token={server.token}"


def _outputs(cell):
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    errors = [o.ename for o in cell.outputs if o.output_type == "error"]
    return text, errors


def test_a_student_runs_and_validates_the_release_in_chromium(student_lab, browser, tmp_path):
    server, folder = student_lab
    _first_hour(server, folder, browser, tmp_path)


def _first_hour(server, folder, browser, tmp_path):
    """The student's first hour on the notebooks handed out in `folder`."""
    shots = tmp_path / "screenshots"
    shots.mkdir(parents=True)
    print(f"\nscreenshots: {shots}")
    steps = [s.name for s in steps_of(A01)]
    started = time.monotonic()
    timings = {}
    page = browser.new_page()

    @contextmanager
    def stage(name):
        """One stage of the test: timed, and on failure a screenshot and the stage's name."""
        try:
            yield
        except BaseException as error:
            with suppress(Exception):
                page.screenshot(path=str(shots / f"failed-{name.replace(' ', '-')}.png"))
            error.add_note(f"while: {name} ({time.monotonic() - started:.1f} s in); screenshots in {shots}")
            with suppress(Exception):  # a dialog in front of the page takes every click
                for dialog in page.locator(".jp-Dialog").all_inner_texts():
                    error.add_note(f"a dialog was open: {dialog[:300]!r}")
                error.add_note(f"prompts of the notebook on show: {page.evaluate(PROMPTS)}")
            raise
        timings[name] = round(time.monotonic() - started, 1)

    # --- the untouched release ---------------------------------------------------------------
    with stage("open untouched"):
        open_notebook(page, lab_url(server, "untouched", f"untouched/{NOTEBOOK.name}"))
    with stage("run untouched"):
        run_everything(page)
        page.screenshot(path=str(shots / "untouched-run.png"))
        page.locator(f"{SHOWN} .jp-OutputArea-output[data-mime-type*='stderr']").first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "untouched-first-error.png"))
        # what the browser shows: a NotImplementedError in the page for every step, and the hints
        shown = page.locator(SHOWN).inner_text()
        assert shown.count("NotImplementedError") >= len(steps)
        assert HINT in shown
    with stage("validate untouched"):
        title, verdict = validate(page)
        page.screenshot(path=str(shots / "untouched-validate.png"))
        assert "Success" not in title + verdict, verdict[:2000]
        named = set(re.findall(r"# Graded cell of `(\w+)`", verdict))
        assert named == set(steps), f"Validate named {sorted(named)}, the steps are {steps}"
        page.locator(".jp-Dialog .jp-mod-accept").click()
    # What ran in the browser, as Validate saved it: every graded cell raised NotImplementedError
    # (its stub's), every demo printed its hint instead of a traceback.
    ran = samples.read(folder / "untouched" / NOTEBOOK.name)
    for cell in ran.cells:
        if cell.cell_type != "code":
            continue
        text, errors = _outputs(cell)
        if graded_step(cell):
            assert errors == ["NotImplementedError"], (graded_step(cell), errors)
        elif DEMO.search(cell.source):
            assert HINT in text and not errors, (cell.source[:200], text, errors)

    # --- the completed notebook ----------------------------------------------------------------
    with stage("open completed"):
        open_notebook(page, lab_url(server, "completed", f"completed/{NOTEBOOK.name}"))
    with stage("run completed"):
        run_everything(page)
        page.screenshot(path=str(shots / "completed-run.png"))
    with stage("validate completed"):
        title, verdict = validate(page)
        page.screenshot(path=str(shots / "completed-validate.png"))
        assert "Success" in verdict and "failed" not in verdict.lower(), verdict[:2000]
        page.locator(".jp-Dialog .jp-mod-accept").click()
    ran = samples.read(folder / "completed" / NOTEBOOK.name)
    for cell in ran.cells:
        if cell.cell_type == "code":
            text, errors = _outputs(cell)
            assert not errors and HINT not in text, (cell.source[:200], text, errors)
            if graded_step(cell):
                assert "passed" in text, (graded_step(cell), text)
    print(f"seconds since start: {timings}")
