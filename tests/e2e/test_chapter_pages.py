"""Every chapter's page in JupyterLab, walked in Chromium as a learner walks it.

For each chapter: Run All, then before any prediction the reveal shows no answer and the
explorer's verdicts are covered; locking a guess updates both at once (no re-run); the
explorer's picture is saved to test-artifacts/e2e/; and nothing reached JupyterLab's log
console. Chapter 0 also checks the narration button (nothing speaks on load, a press
speaks the transcript) and a card checked twice on a variant; chapter 5 feeds its
explorer an impossible schedule (the plot is replaced by the reason); chapter 9 is laid
out at 800 px (no control runs off the page).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
WAITING = "the answer appears here the moment you do"
COVERED = "The verdicts appear once you lock in your prediction above."
REVEALED = "Your prediction, revealed."
NARROW = {"width": 800, "height": 1000}
# Counts every speech request and every media play() the page makes, from its first script.
SPY = """
window.__spoken = []; window.__played = 0;
window.__voices = null;  // set to [] or [{...}] to pretend the browser has no or some voice
if (window.speechSynthesis) {
  const speak = window.speechSynthesis.speak.bind(window.speechSynthesis);
  const voices = window.speechSynthesis.getVoices.bind(window.speechSynthesis);
  window.speechSynthesis.getVoices = () => window.__voices ?? voices();
  window.speechSynthesis.speak = (u) => {
    window.__spoken.push(u.text); try { speak(u); } catch (e) {} };
}
const play = HTMLMediaElement.prototype.play;
HTMLMediaElement.prototype.play = function () { window.__played += 1; return play.call(this); };
"""


def _browser_test() -> Any:
    path = HERE / "test_jupyterlab_browser.py"
    spec = importlib.util.spec_from_file_location("browser_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BT = _browser_test()


def output_with(page: Any, text: str) -> Any:
    return page.locator(".jp-OutputArea-output").filter(has_text=text).first


def open_chapter(lab: Any, server: Any, name: str) -> None:
    import nbformat

    notebook = nbformat.read(server.root_dir / name, as_version=4)
    code_cells = sum(1 for cell in notebook.cells if cell.cell_type == "code")
    BT.NOTEBOOK = name  # kernel_idle looks for this notebook's session
    # "reset": a fresh workspace, so the previous chapter is not reopened beside this one
    lab.open_notebook(server.url(f"lab/tree/{name}") + "&reset", lambda: BT.kernel_idle(server))
    lab.run_all(code_cells)


def lock_a_guess(page: Any) -> None:
    lock = output_with(page, "Predict first.")
    radios = lock.locator("input[type=radio]")
    if radios.count():
        radios.first.check()
    else:
        lock.locator("input[type=text]").fill("5")
    lock.get_by_role("button", name="Lock in my prediction").click()


def check_lock(lab: Any, stem: str) -> None:
    from playwright.sync_api import expect

    page = lab.page
    reveal = output_with(page, WAITING)
    expect(reveal).to_be_visible()
    assert REVEALED not in str(reveal.text_content())
    cover = page.get_by_text(COVERED).first
    expect(cover).to_be_visible()
    lab.snap(f"{stem}-before-lock", cover)
    lock_a_guess(page)
    expect(page.get_by_text(REVEALED).first).to_be_visible(timeout=BT.WIDGET_MS)
    for index in range(page.get_by_text(COVERED).count()):
        expect(page.get_by_text(COVERED).nth(index)).to_be_hidden()


def explorer_output(page: Any) -> Any:
    return (page.locator(".jp-OutputArea-output")
            .filter(has=page.locator(".widget-slider, .widget-dropdown")).first)


def check_narration(page: Any) -> None:
    assert page.evaluate("window.__spoken.length + window.__played") == 0  # nothing on load
    button = page.get_by_role("button", name=re.compile(r"^Listen to the narration")).first
    button.scroll_into_view_if_needed()
    note = button.locator("xpath=following-sibling::small[1]")
    # A browser without a voice: the note says so and points to the transcript.
    page.evaluate("window.__voices = []")
    button.click()
    page.wait_for_function("(n) => n.textContent.includes('no voice')", arg=note.element_handle(),
                           timeout=5000)
    assert "transcript" in note.inner_text() and page.evaluate("window.__spoken.length") == 0
    # A browser with a voice speaks the transcript.
    page.evaluate("window.__voices = [{name: 'test voice', lang: 'en-US'}]")
    button.click()
    spoken = page.evaluate("window.__spoken")
    assert len(spoken) == 1 and len(spoken[0].split()) > 20, spoken


def check_invalid_schedule(lab: Any, explorer: Any) -> None:
    """Interleaved 1F1B with m = 2 on 4 stages cannot be drawn (Megatron-Core needs m >= p;
    any m >= p runs, in groups): the plot gives way to why."""
    from playwright.sync_api import expect

    explorer.locator(".widget-dropdown select").first.select_option("Interleaved 1F1B")
    slider = explorer.locator(".widget-slider").filter(has_text="Microbatches").locator(
        ".noUi-handle, .ui-slider-handle").first
    slider.click()
    for _ in range(2):
        lab.page.keyboard.press("ArrowLeft")
    invalid = explorer.locator(".dtw-plot-invalid")
    expect(invalid).to_contain_text("at least as many microbatches", timeout=BT.WIDGET_MS)
    expect(explorer.locator(".dtw-plot img")).to_have_count(0)
    lab.snap("ch05-invalid-schedule", explorer)


def check_narrow_layout(lab: Any) -> None:
    """At 800 px every control of the planner and the 9.10 card stays on the page."""
    page = lab.page
    page.set_viewport_size(NARROW)
    page.wait_for_timeout(500)
    planner = (page.locator(".jp-OutputArea-output")
               .filter(has=page.get_by_role("button", name="Recommend a layout")).first)
    planner.scroll_into_view_if_needed()
    lab.snap("ch09-planner-800px", planner)
    card = BT.Card(lab, "9.10")
    card.root.scroll_into_view_if_needed()
    lab.snap("ch09-card-9.10-800px", card.root)
    for root in (planner, card.root):
        for control in root.locator("input, select, button").all():
            if not control.is_visible():
                continue
            box = control.bounding_box()
            assert box is not None and box["x"] + box["width"] <= NARROW["width"] + 1, box


@pytest.mark.slow
def test_every_chapter_page(chromium: Any, lab_server: Any, artifacts: Path) -> None:
    page = chromium.new_page(viewport=BT.VIEWPORT)
    page.add_init_script(SPY)
    lab = BT.Lab(page, artifacts)
    names = sorted(p.name for p in lab_server.root_dir.glob("ch*.ipynb"))
    assert len(names) == 10
    try:
        for name in names:
            stem = name[:4]
            open_chapter(lab, lab_server, name)
            if stem == "ch00":
                check_narration(page)
            check_lock(lab, stem)
            explorer = explorer_output(page)
            explorer.scroll_into_view_if_needed()
            page.wait_for_timeout(300)
            lab.snap(f"{stem}-explorer", explorer)
            if stem == "ch05":
                check_invalid_schedule(lab, explorer)
            if stem == "ch09":
                check_narrow_layout(lab)
            BT.assert_log_console_empty(page)
            for session in lab_server.request("api/sessions"):
                lab_server.request(f"api/sessions/{session['id']}", method="DELETE")
    except Exception:
        lab.snap("failure")
        raise
