"""A learner's first exercise, in real JupyterLab and Notebook 7, in a real browser.

Opens chapter 0 in headless Chromium, runs every cell from the Run menu, and uses
exercise 0.1's card the way a learner would: a right answer shows "Correct", a known
wrong answer shows "Not yet" with the feedback written for that misconception, and a
fresh variant solved a day after the printed numbers raises the dashboard's mastered
count by one. Notebook 7 is built from JupyterLab's components, so the same moves drive
both. Screenshots of every step go to test-artifacts/e2e/.
"""

from __future__ import annotations

import re
import string
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import workbook
from autograder.progress.events import Event
from autograder.progress.location import FILE_NAME
from autograder.progress.mastery import exercise_level
from autograder.progress.store import ProgressStore

NOTEBOOK = "ch00_ring_allreduce.ipynb"
EXERCISE = "0.1"
KERNEL_MS = 180_000  # first kernel start and Run All on a busy two-core machine
WIDGET_MS = 60_000
VIEWPORT = {"width": 1400, "height": 1000}
# A number as the workbook prints it: 8, 0.5, 16,384, 1.5e-05.
NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
MASTERED = re.compile(r"Mastered (\d+) / (\d+)")
MARKUP = re.compile(r"(\*\*|\*|`|\s+)")  # Markdown marks, and white space


# -- reading numbers back out of a prompt -------------------------------------------


def template_regex(template: str) -> re.Pattern[str]:
    """The prompt template as a regex: each {field} a number group, the text literal.

    Markdown emphasis and code marks may be rendered away (``**send**`` shows as bold
    "send"), so they are optional, and any run of white space matches any other.
    """
    parts: list[str] = []
    seen: set[str] = set()
    for literal, field, _spec, _conversion in string.Formatter().parse(template):
        parts.extend(_literal_pattern(piece) for piece in MARKUP.split(literal) if piece)
        if field is None:
            continue
        parts.append(f"(?P={field})" if field in seen else f"(?P<{field}>{NUMBER})")
        seen.add(field)
    return re.compile("".join(parts))


def _literal_pattern(piece: str) -> str:
    if piece.isspace():
        return r"\s+"
    if MARKUP.fullmatch(piece):
        return f"(?:{re.escape(piece)})?"
    return re.escape(piece)


def parse_number(text: str) -> int | float:
    plain = text.replace(",", "")
    return int(plain) if re.fullmatch(r"-?\d+", plain) else float(plain)


def read_params(template: str, text: str) -> dict[str, int | float]:
    """The parameters shown in ``text``, a rendering of ``template``."""
    match = template_regex(template).search(text)
    assert match is not None, f"the prompt does not follow its template:\n{text}"
    return {name: parse_number(value) for name, value in match.groupdict().items()}


def test_prompt_numbers_are_read_back() -> None:
    template = "{n} GPUs **send** {m} GB each; {n} of them at {bw} GB/s"
    raw = "Prompt: 16,384 GPUs **send** 0.5 GB each; 16,384 of them at 1.5e-05 GB/s"
    rendered = "16,384 GPUs send 0.5 GB each;\n16,384 of them at 1.5e-05 GB/s"
    for text in (raw, rendered):
        assert read_params(template, text) == {"n": 16384, "m": 0.5, "bw": 1.5e-05}
    assert template_regex(template).search("16,384 GPUs send 0.5 GB each; 8 of them") is None


# -- the progress log ---------------------------------------------------------------


def seed_proficient_yesterday(home: Path, answer: str) -> ProgressStore:
    """Log a correct check of the printed numbers made 24 hours ago (a local day earlier)."""
    yesterday = datetime.now(timezone.utc) - timedelta(days=1)
    store = ProgressStore(home / FILE_NAME)
    store.append(Event.now("check", EXERCISE, answer=repr(answer), status="correct",
                           score=1.0, clock=lambda: yesterday))
    assert exercise_level(store.events(), EXERCISE) == "proficient"
    return store


# -- driving JupyterLab ---------------------------------------------------------------


class Lab:
    """A JupyterLab or Notebook 7 page, with the few moves this test makes."""

    def __init__(self, page: Any, artifacts: Path) -> None:
        self.page = page
        self.artifacts = artifacts
        self.shots = 0

    def snap(self, name: str, focus: Any = None) -> None:
        if focus is not None:
            focus.scroll_into_view_if_needed()
        self.shots += 1
        self.page.screenshot(path=str(self.artifacts / f"{self.shots:02d}-{name}.png"))

    def open_notebook(self, url: str, kernel_idle: Callable[[], bool]) -> None:
        """Open the notebook and wait until its kernel is started, connected and idle.

        The toolbar's execution indicator reads "idle" even before a kernel exists (Run
        All would then ask which kernel to start), so the server is asked as well.
        """
        self.page.goto(url)
        deadline = time.monotonic() + KERNEL_MS / 1000
        while not kernel_idle():
            assert time.monotonic() < deadline, "the notebook's kernel never became idle"
            time.sleep(0.5)
        panel = ".jp-NotebookPanel"
        self.page.locator(f"{panel} .jp-Toolbar-kernelName", has_text="Python 3").wait_for(
            timeout=KERNEL_MS)
        self.page.locator(f"{panel} .jp-Notebook-ExecutionIndicator[data-status='idle']"
                          ).wait_for(timeout=KERNEL_MS)

    def run_all(self, code_cells: int) -> None:
        """Run > Run All Cells, then wait until every code cell shows an execution count."""
        self.page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        self.page.wait_for_function(
            """n => { const p = [...document.querySelectorAll(
                   '.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')];
                   return p.length === n && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }""",
            arg=code_cells, timeout=KERNEL_MS)

    def card(self, exercise_id: str) -> Any:
        """The output holding an exercise's widget card (prompt, answer box, buttons; a card
        without numbers to vary has no "Try a variant")."""
        buttons = self.page.get_by_role("button", name="Show solution")
        return (self.page.locator(".jp-OutputArea-output").filter(has=buttons)
                .filter(has_text=f"Exercise {exercise_id}:"))

    def rerun_last_cell(self) -> Any:
        """Run the last code cell again; its output area once the new run has finished."""
        cell = self.page.locator(".jp-NotebookPanel .jp-CodeCell").last
        before = cell.locator(".jp-InputPrompt").text_content()
        cell.locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Control+Enter")
        self.page.wait_for_function(
            """([before]) => { const p = [...document.querySelectorAll(
                   '.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')].pop().textContent;
                   return p !== before && /\\[\\d+\\]/.test(p); }""",
            arg=[before], timeout=KERNEL_MS)
        return cell.locator(".jp-OutputArea")


class Card:
    """An exercise's card: type into "Answer:", press a button, read the output."""

    def __init__(self, lab: Lab, exercise_id: str) -> None:
        self.lab = lab
        self.root = lab.card(exercise_id)
        self.root.wait_for(timeout=WIDGET_MS)
        self.answer_box = self.root.locator(".widget-text").filter(has_text="Answer:")
        self.output = self.root.locator(".dtw-card-output")
        self.prompt = self.root.locator(".widget-html").first

    def press(self, button: str, until: str) -> str:
        """Click a button; wait for ``until`` in the card's output and return that text."""
        from playwright.sync_api import expect

        self.root.get_by_role("button", name=button, exact=True).click()
        expect(self.output).to_contain_text(until, timeout=WIDGET_MS)
        return str(self.output.text_content())

    def check(self, answer: str, until: str) -> str:
        self.answer_box.locator("input").fill(answer)
        return self.press("Check", until)



def mastered_count(progress_output: Any) -> tuple[int, int]:
    match = MASTERED.search(str(progress_output.text_content()))
    assert match is not None, "the progress cell shows no 'Mastered N / M' line"
    return int(match.group(1)), int(match.group(2))


def feedback_for(record: Any, wrong_value: float) -> str:
    """The record's feedback for the misconception that gives ``wrong_value``."""
    texts = [text for value, text in record.wrong_answers() if value == pytest.approx(wrong_value)]
    assert len(texts) == 1, f"expected one misconception giving {wrong_value}, found {texts}"
    return texts[0]


# -- the test -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("front_end", ["lab/tree", "notebooks"], ids=["jupyterlab", "notebook7"])
def test_learner_checks_exercise_0_1(front_end: str, chromium: Any, lab_server: Any,
                                     workbook_home: Path, artifacts: Path) -> None:
    record = workbook.exercise(EXERCISE)
    # The printed numbers: 8 GPUs, 1 GB. Each GPU sends 2 x (8-1)/8 x 1 GB = 1.75 GB;
    # "2 GB" is the 2M large-N limit that forgets the (N-1)/N factor.
    assert dict(record.params) == {"n_gpus": 8, "message_gb": 1.0}
    right, wrong, wrong_value = "1.75 GB", "2 GB", 2.0
    store = seed_proficient_yesterday(workbook_home, right)

    page = chromium.new_page(viewport=VIEWPORT)
    console: list[str] = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    lab = Lab(page, artifacts)
    try:
        run_chapter(lab, lab_server, front_end)
        before = mastered_count(page.locator(".jp-NotebookPanel .jp-CodeCell").last)
        card = Card(lab, EXERCISE)
        check_right_and_wrong(lab, card, right, wrong, feedback_for(record, wrong_value))
        solve_a_variant(lab, card, record)
        progress = lab.rerun_last_cell()
        lab.snap("progress-after", progress)
        after = mastered_count(progress)
        if front_end == "lab/tree":  # the card's feedback went to the card, nowhere else
            assert_log_console_empty(page)
    except Exception:
        lab.snap("failure")
        raise
    finally:
        (artifacts / "console.log").write_text("\n".join(console))
    # Only 0.1 was in the log, proficient since yesterday: nothing was mastered before.
    assert before[0] == 0
    assert after == (before[0] + 1, before[1])
    assert exercise_level(store.events(), EXERCISE) == "mastered"
    store.close()


def assert_log_console_empty(page: Any) -> None:
    """JupyterLab's status bar shows a log item only once a message was logged."""
    item = page.locator(".jp-LogConsoleStatusItem")
    texts = [t.strip() for t in item.all_text_contents()]
    if any(texts):  # open the console so the failure says what was logged
        item.first.click()
        page.wait_for_timeout(500)
        logged = [t.strip() for t in page.locator(".jp-LogConsolePanel .jp-OutputArea-output")
                  .all_text_contents()]
        raise AssertionError(f"{texts} message(s) reached the log console: {logged}")


def run_chapter(lab: Lab, server: Any, front_end: str) -> None:
    import nbformat

    notebook = nbformat.read(server.root_dir / NOTEBOOK, as_version=4)
    code_cells = sum(1 for cell in notebook.cells if cell.cell_type == "code")
    lab.open_notebook(server.url(f"{front_end}/{NOTEBOOK}"), lambda: kernel_idle(server))
    lab.snap("opened")
    lab.run_all(code_cells)
    lab.snap("ran-all", lab.page.locator(".jp-NotebookPanel .jp-CodeCell").last)


def kernel_idle(server: Any) -> bool:
    """True once the server holds a session for the chapter whose kernel is idle."""
    return any(s["path"].endswith(NOTEBOOK) and s["kernel"]["execution_state"] == "idle"
               for s in server.request("api/sessions") if s.get("kernel"))


def check_right_and_wrong(lab: Lab, card: Card, right: str, wrong: str, feedback: str) -> None:
    lab.snap("card", card.root)
    shown = card.check(right, until="Correct")
    lab.snap("correct", card.root)
    assert "Not yet" not in shown
    shown = card.check(wrong, until="Not yet")
    lab.snap("misconception", card.root)
    assert "Correct" not in shown
    assert feedback in shown


def solve_a_variant(lab: Lab, card: Card, record: Any) -> None:
    """Draw a variant, read its numbers off the card's prompt, answer it right."""
    printed = dict(record.params)
    card.press("Try a variant", until="New numbers, in the question above")
    # The question is shown once, in the card's header, rendered: read the numbers there.
    deadline = time.monotonic() + WIDGET_MS / 1000
    while "Your variant" not in str(card.prompt.text_content()):
        assert time.monotonic() < deadline, "the card's header never showed the variant"
        lab.page.wait_for_timeout(200)
    header = str(card.prompt.text_content())
    params = read_params(record.prompt, header)
    assert params != printed and "**" not in header
    assert "Your variant" not in str(card.output.text_content())  # not a second copy
    lab.snap("variant", card.root)
    shown = card.check(f"{record.expected(params)!r} {record.answer_kind.unit}", until="Correct")
    lab.snap("variant-correct", card.root)
    assert "Your variant" in shown
    # Checked again, the card still grades the question it shows (not the printed one).
    card.output.locator(".widget-html-content > *").first.wait_for(timeout=WIDGET_MS)
    unit = record.answer_kind.unit
    shown = card.check(f"{record.expected(params)!r} {unit}", until="Your variant")
    assert "Correct" in shown and "Not yet" not in shown


# -- a lab, end to end ----------------------------------------------------------------

LAB_WRONG = '''import numpy as np

def ring_allreduce(rank):
    n, me = rank.size, rank.id
    x = np.array(rank.data, copy=True)
    parts = np.array_split(np.arange(len(x)), n)
    for s in range(n - 1):  # the reduce-scatter only: no all-gather yet
        rank.send((me + 1) % n, x[parts[(me - s) % n]])
        yield
        x[parts[(me - s - 1) % n]] += rank.recv((me - 1) % n)
    return x
'''
LAB_RIGHT = LAB_WRONG.replace("    return x\n", '''    for s in range(n - 1):
        rank.send((me + 1) % n, x[parts[(me + 1 - s) % n]])
        yield
        x[parts[(me - s) % n]] = rank.recv((me - 1) % n)
    return x
''')


def replace_and_run(lab: Lab, cell: Any, source: str) -> None:
    """Put ``source`` into a code cell as typed text and run the cell in place."""
    editor = cell.locator(".jp-InputArea-editor")
    editor.click()
    lab.page.keyboard.press("Control+A")
    lab.page.keyboard.press("Delete")
    lab.page.keyboard.insert_text(source)
    before = cell.locator(".jp-InputPrompt").text_content()
    lab.page.keyboard.press("Control+Enter")
    lab.page.wait_for_function(
        """([el, before]) => { const p = el.textContent;
               return p !== before && /\\[\\d+\\]/.test(p); }""",
        arg=[cell.locator(".jp-InputPrompt").element_handle(), before], timeout=KERNEL_MS)


@pytest.mark.slow
def test_learner_writes_the_ring_lab(chromium: Any, lab_server: Any, artifacts: Path) -> None:
    """0.7: a reduce-scatter without the all-gather gets "Not yet", the rank and element
    that are wrong, and the steps grid of the learner's own messages; the full ring passes."""
    from playwright.sync_api import expect

    page = chromium.new_page(viewport=VIEWPORT)
    lab = Lab(page, artifacts)
    try:
        run_chapter(lab, lab_server, "lab/tree")
        cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
        answer = cells.filter(has_text="def ring_allreduce(rank):")
        check = cells.filter(has_text='wb.check("0.7", ring_allreduce)')
        replace_and_run(lab, answer, LAB_WRONG)
        replace_and_run(lab, check, 'wb.check("0.7", ring_allreduce)')
        output = check.locator(".jp-OutputArea")
        expect(output).to_contain_text("Not yet", timeout=WIDGET_MS)
        lab.snap("lab-wrong", output)
        shown = str(output.text_content())
        assert "rank 0's sum of all ranks' vectors is wrong at element 0" in shown
        # the cases are drawn afresh for every check: the trace is of the case that failed
        case = re.search(r"Your trace, case N=(\d+), M=\d+, \w+:", shown)
        assert case, shown
        grid = output.locator("pre").first
        assert f"rank {int(case[1]) - 1}" in str(grid.text_content())
        replace_and_run(lab, answer, LAB_RIGHT)
        replace_and_run(lab, check, 'wb.check("0.7", ring_allreduce)')
        expect(output).to_contain_text("Correct", timeout=WIDGET_MS)
        lab.snap("lab-right", output)
        assert "passes all 6 cases" in str(output.text_content())
    except Exception:
        lab.snap("lab-failure")
        raise
