"""The class report's page in a real Chromium, in the light and the dark colour scheme, at
800 px and at 1280 px: its figures render, their labels can be read, nothing overflows.

The class is made up (forty students over chapters 0 and 1, with blank, wrong, erroneous
and excused rows and known mistakes), and its report written as ``workbook grade`` writes
it. For every text of the page and of the figures the check computes the contrast of the
rendered text colour (an SVG text's fill) against the first opaque background behind it
and wants at least 4.5:1 (WCAG AA for body text); an SVG label must not sit on a bar, nor
reach outside its figure; a table cell must be wide enough for each of its words.
Screenshots go to test-artifacts/e2e/.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from autograder.grading.model import Batch, ExerciseResult, NotebookResult, Status
from workbook.instructor.class_report import class_report
from workbook.instructor.class_report_html import write_class_report
from workbook.records import lookup

SCHEMES = ("light", "dark")
WIDTHS = (800, 1280)
IDS = ("0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "1.1", "1.2", "1.3", "1.4", "1.5")
LONG_ID = "student-with-an-unbroken-identifier-" + "x" * 60

READ_PAGE = """
() => {
  const lum = (rgb) => {
    const c = rgb.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => v / 255)
      .map(v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const opaque = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const bg = getComputedStyle(e).backgroundColor;
      const a = bg.match(/[\\d.]+/g);
      if (a && (a.length < 4 || Number(a[3]) > 0.5)) return bg;
    }
    return 'rgb(255, 255, 255)';  // a browser's canvas with nothing set
  };
  const ratio = (a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  const texts = [];
  const sel = 'h1, h2, p, caption, figcaption, th, td, svg text';
  for (const el of document.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect();
    if (!el.textContent.trim() || r.width === 0) continue;
    const st = getComputedStyle(el);
    const fg = el.tagName === 'text' ? st.fill : st.color;
    texts.push({text: el.textContent.trim().slice(0, 50),
                contrast: ratio(lum(fg), lum(opaque(el)))});
  }
  const figures = [...document.querySelectorAll('svg')].map(svg => {
    const box = svg.getBoundingClientRect();
    const bars = [...svg.querySelectorAll('rect')].map(b => b.getBoundingClientRect())
      .filter(b => b.width > 0);
    const labels = [...svg.querySelectorAll('text')].map(t => {
      const r = t.getBoundingClientRect();
      return {text: t.textContent, inside: r.left >= box.left - 0.5 &&
              r.right <= box.right + 0.5 && r.top >= box.top - 0.5 &&
              r.bottom <= box.bottom + 0.5,
              on_bar: bars.some(b => r.left < b.right - 1 && r.right > b.left + 1 &&
                                r.top < b.bottom - 1 && r.bottom > b.top + 1)};
    });
    const title = svg.querySelector('title');
    return {width: box.width, height: box.height, bars: bars.length, labels: labels,
            title: title ? title.textContent : '',
            bar_contrast: bars.length ? ratio(
              lum(getComputedStyle(svg.querySelector('rect')).fill),
              lum(opaque(svg))) : 0};
  });
  // a table cell narrower than one of its words breaks the word apart
  const pen = document.createElement('canvas').getContext('2d');
  const broken = [];
  for (const cell of document.querySelectorAll('td, th')) {
    const st = getComputedStyle(cell);
    pen.font = st.font;
    const room = cell.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
    for (const word of cell.textContent.split(/[\\s\\-\\u2013\\/]+/)) {
      if (word && pen.measureText(word).width > room + 1) broken.push(word);
    }
  }
  const width = document.documentElement.clientWidth;
  const past = [...document.body.querySelectorAll('*')]
    .filter(el => el.getBoundingClientRect().right > width + 0.5)
    .map(el => el.tagName + ' ' + (el.textContent || '').trim().slice(0, 40));
  return {texts: texts, figures: figures, past_edge: past, broken: broken,
          scroll_width: document.documentElement.scrollWidth, width: width,
          page: lum(opaque(document.body))};
}
"""


def _row(exercise: str, rng: random.Random) -> ExerciseResult:
    record = lookup(exercise)
    status: Status = rng.choice(("correct", "correct", "wrong", "wrong", "unanswered",
                                 "error", "excused"))
    labels = [m.label for m in record.misconceptions]
    named = (rng.choice(labels),) if status == "wrong" and labels and rng.random() < 0.7 else ()
    points = record.points if status == "correct" else 0
    return ExerciseResult(exercise_id=exercise, title=record.title, category=record.category,
                          points=points, max_points=record.points, status=status,
                          message="", misconceptions=named)


def made_up_class() -> tuple[Batch, tuple[str, ...]]:
    rng = random.Random(29)
    roster = tuple(f"s{n:03d}" for n in range(40))
    notebooks = [NotebookResult(student=s, path=f"{s}/ch0{c}.ipynb", chapter=c, title="",
                                exercises=tuple(_row(i, rng) for i in IDS
                                                if i.startswith(f"{c}.")))
                 for s in roster[:-3] for c in (0, 1)]   # three hand in nothing
    notebooks.append(NotebookResult(student=LONG_ID, path="x.ipynb", chapter=0, title="",
                                    exercises=(_row("0.1", rng),)))
    return Batch(notebooks=tuple(notebooks)), roster


@pytest.fixture(scope="module")
def page_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    batch, roster = made_up_class()
    report = class_report(batch, roster, exercise_ids=IDS)
    assert report.unlisted == (LONG_ID,) and report.students == 40
    _, html = write_class_report(report, tmp_path_factory.mktemp("report"))
    return html.resolve().as_uri()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_figures_render_readably_in_both_schemes(chromium: Any, artifacts: Path,
                                                 page_url: str, scheme: str,
                                                 width: int) -> None:
    context = chromium.new_context(viewport={"width": width, "height": 900},
                                   color_scheme=scheme)
    try:
        page = context.new_page()
        requests: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(page_url)
        seen = page.evaluate(READ_PAGE)
        page.screenshot(path=str(artifacts / f"class-report-{scheme}-{width}.png"),
                        full_page=True)
    finally:
        context.close()
    assert requests == [page_url]  # the page alone: nothing else is fetched

    # the scheme took effect: a light page, or a dark one
    assert seen["page"] > 0.8 if scheme == "light" else seen["page"] < 0.05

    figures = seen["figures"]
    assert [f["title"] for f in figures] == [
        "Score distribution", "Per-exercise difficulty: share correct", "Known mistakes made"]
    for figure in figures:
        assert figure["width"] > 300 and figure["height"] > 100, figure["title"]
        assert figure["bars"] > 0 and figure["bar_contrast"] >= 3.0, figure["title"]
        assert figure["labels"], figure["title"]
        for label in figure["labels"]:
            assert label["inside"], f"{figure['title']}: {label['text']!r} cut off"
            assert not label["on_bar"], f"{figure['title']}: {label['text']!r} on a bar"
    assert figures[1]["bars"] == len(IDS)

    faint = [t for t in seen["texts"] if t["contrast"] < 4.5]
    assert not faint, f"text below 4.5:1 in the {scheme} scheme: {faint[:5]}"
    assert len(seen["texts"]) > 100

    assert seen["scroll_width"] <= seen["width"], "the page scrolls sideways"
    assert not seen["past_edge"], f"past the right edge: {seen['past_edge'][:5]}"
    assert not seen["broken"], f"words broken apart in a table: {seen['broken'][:5]}"
