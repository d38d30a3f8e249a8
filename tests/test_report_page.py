"""The class report in a real browser: Debian's Chromium, driven by Playwright.

The page of a generated two-assignment class (`coursekit.report.synthetic`, nothing graded) is
opened from disk, with the network cut off: every chart must render (each inline SVG has a box
and drawn bars), the course sections must be there, and a screenshot of the whole page is
kept under pytest's temporary folder (the test prints where). Chromium must be installed, as for
tests/test_browser.py (whose `browser` fixture this uses); without it the test fails.
"""

import pytest
from test_browser import browser  # noqa: F401 - the fixture: Chromium as the other browser test launches it

from autograder.steps import A03, A04, steps_of
from coursekit import report
from coursekit.report import synthetic

# Each chart's box, and the drawn height of each of its bars (a bar for no student has none).
PLOTS = ("Array.from(document.querySelectorAll('svg')).map(s => { const r = s.getBoundingClientRect(); "
         "return [r.width, r.height, Array.from(s.querySelectorAll('rect'))"
         ".map(b => b.getBoundingClientRect().height)]; })")


@pytest.fixture
def page_file(tmp_path):
    course = tmp_path / "course"
    synthetic.generate(course, [f"student{i:02d}" for i in range(12)], (A03, A04), seed=5)
    html_path, _ = report.write(course)
    return html_path


def test_every_plot_of_the_report_renders(page_file, browser, tmp_path):  # noqa: F811 - the fixture
    page = browser.new_page()
    requests = []
    page.route("**/*", lambda route: (requests.append(route.request.url), route.continue_()
                                      if route.request.url.startswith("file://") else route.abort()))
    page.goto(page_file.as_uri())
    boxes = page.evaluate(PLOTS)
    assert len(boxes) == 2 + sum(len(steps_of(a)) for a in (A03, A04))
    for width, height, bars in boxes:
        # 11 bars (10 below full marks, 1 for them), the tallest one drawn
        assert width > 100 and height > 40 and len(bars) == 11 and max(bars) > 10, (width, height, bars)
    assert [url for url in requests if not url.startswith("file://")] == []
    headings = page.locator("h3").all_inner_texts()
    assert "Steps that predict trouble later" in headings and "Late" in headings
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    print(f"\nscreenshot of the class report: {shot}")
