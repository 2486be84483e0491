"""Every chapter, before and after the prediction lock, in JupyterLab's light and dark
themes, at full width and at 800 px with the file browser open: nothing clipped, nothing
dark on dark.

Screenshots go to test-artifacts/e2e/. Each is read by a check as well as saved:

* figures: every plot image (its PNG, as the page received it) must be opaque with a light
  background: the figure sits on its own white card, so its dark labels never meet a dark
  page;
* text: every visible text element in the outputs has a contrast of at least 3:1 against
  the first opaque background behind it (WCAG's minimum for large text; body text is
  normally far above it);
* clipping: no label, button, readout or HTML block in the outputs is cut off (its text
  wider than its box) or reaches past the notebook's right edge.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
THEMES = ("JupyterLab Light", "JupyterLab Dark")
WIDTHS = (1400, 800)
THEME_PLUGIN = "@jupyterlab/apputils-extension:themes"

# For every visible text-bearing element of the outputs: its text colour, the first opaque
# background behind it, whether its text overflows its box, and its right edge.
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
    return getComputedStyle(document.body).backgroundColor;
  };
  const panel = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer, ' +
                                        '.jp-NotebookPanel .jp-Notebook');
  const right = panel ? panel.getBoundingClientRect().right : window.innerWidth;
  const found = [];
  const sel = '.jp-OutputArea-output :is(p, span, li, td, th, label, button, strong, em, ' +
              'small, .widget-label, .widget-readout, .widget-html-content, pre)';
  for (const el of document.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect();
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || r.width === 0 || r.height === 0) continue;
    const st = getComputedStyle(el);
    if (st.visibility === 'hidden' || st.display === 'none') continue;
    const fg = lum(st.color), bg = lum(opaque(el));
    const contrast = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    const clips = st.overflow !== 'visible' || st.textOverflow === 'ellipsis';
    // inside a box that scrolls sideways, text past the edge is reachable, not cut off
    let scrolls = false;
    for (let e = el.parentElement; e; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if (o === 'auto' || o === 'scroll') {
        scrolls = !e.classList.contains('jp-WindowedPanel-outer');
        break;
      }
    }
    found.push({text: el.textContent.trim().slice(0, 60), contrast: contrast,
                clipped: clips && el.scrollWidth > el.clientWidth + 1 && el.tagName !== 'PRE',
                past_edge: !scrolls && r.right > right + 1 && r.left < right});
  }
  return found;
}
"""


def _test_module(name: str, file: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BT = _test_module("browser_test", "test_jupyterlab_browser.py")
PAGES = _test_module("chapter_pages", "test_chapter_pages.py")  # its lock_a_guess


def put_setting(server: Any, plugin: str, values: dict[str, Any]) -> None:
    """A JupyterLab setting, through the settings REST API (read at page load)."""
    body = json.dumps({"raw": json.dumps(values)}).encode()
    request = urllib.request.Request(
        f"{server.base_url}/lab/api/settings/{plugin}", data=body, method="PUT",
        headers={"Authorization": f"token {server.token}", "Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10):
        pass


def set_theme(server: Any, theme: str) -> None:
    """The theme, and every cell laid out (no windowing), so that the checks see the whole
    notebook and not only the cells on screen."""
    put_setting(server, THEME_PLUGIN, {"theme": theme})
    put_setting(server, "@jupyterlab/notebook-extension:tracker", {"windowingMode": "none"})


def own_background(png: bytes) -> str:
    """"" when a figure sits on its own opaque, light background; else what is wrong."""
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    if "A" in image.getbands() and image.getchannel("A").getextrema()[0] < 250:
        return "has transparent pixels: the page shows through behind its text"
    rgb = image.convert("RGB")
    w, h = rgb.size
    corners = [rgb.getpixel((x, y)) for x in (1, w - 2) for y in (1, h - 2)]
    light = sum((0.2126 * r + 0.7152 * g + 0.0722 * b) / 255 > 0.7 for r, g, b in corners)
    return "" if light >= 3 else "has a dark background"


def read_page(lab: Any, label: str) -> list[str]:
    """Every problem on the page now, in words; a screenshot of each figure is saved.

    The figures are read in one step in the page (a widget may redraw its output between two
    steps, which would detach an element taken earlier); the screenshots are only artifacts
    for a reader, so a figure redrawn while being photographed is skipped there, not failed."""
    page = lab.page
    problems = []
    sources = page.eval_on_selector_all(
        ".jp-OutputArea-output img",
        "els => els.map(e => [e.getAttribute('src') || '', e.getClientRects().length > 0])")
    for k, (src, visible) in enumerate(sources):
        if not visible:
            continue
        if src.startswith("data:image/png;base64,"):
            wrong = own_background(base64.b64decode(src.split(",", 1)[1]))
            if wrong:
                problems.append(f"{label}: figure {k} {wrong}")
        save_figure(page.locator(".jp-OutputArea-output img").nth(k),
                    lab.artifacts / f"{label}-fig{k}.png")
    for item in page.evaluate(READ_PAGE):
        if item["contrast"] < 3.0:
            problems.append(f"{label}: low contrast {item['contrast']:.1f} for {item['text']!r}")
        if item["clipped"]:
            problems.append(f"{label}: clipped {item['text']!r}")
        if item["past_edge"]:
            problems.append(f"{label}: past the notebook's right edge {item['text']!r}")
    return problems


def save_figure(image: Any, path: Path) -> None:
    """A screenshot of one figure for the artifacts, skipped if the figure is redrawn meanwhile."""
    from playwright.sync_api import Error

    try:
        image.scroll_into_view_if_needed(timeout=5000)
        image.screenshot(path=str(path), timeout=5000)
    except Error:
        pass


def open_file_browser(page: Any) -> None:
    tab = page.locator(".jp-SideBar [data-id='filebrowser']").first
    if tab.count() and tab.get_attribute("aria-selected") != "true":
        tab.click()


@pytest.mark.slow
@pytest.mark.parametrize("theme", THEMES)
def test_every_chapter_reads_in_both_themes_and_widths(theme: str, chromium: Any,
                                                       lab_server: Any, artifacts: Path) -> None:
    import nbformat

    set_theme(lab_server, theme)
    page = chromium.new_page(viewport={"width": WIDTHS[0], "height": 1000})
    lab = BT.Lab(page, artifacts)
    names = sorted(p.name for p in lab_server.root_dir.glob("ch*.ipynb"))
    problems: list[str] = []
    try:
        for name in names:
            stem = name[:4]
            notebook = nbformat.read(lab_server.root_dir / name, as_version=4)
            BT.NOTEBOOK = name
            page.set_viewport_size({"width": WIDTHS[0], "height": 1000})
            lab.open_notebook(lab_server.url(f"lab/tree/{name}") + "&reset",
                              lambda: BT.kernel_idle(lab_server))
            lab.run_all(sum(1 for c in notebook.cells if c.cell_type == "code"))
            for state in ("before", "after"):
                if state == "after":
                    _lock(page)
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": 1000})
                    if width < WIDTHS[0]:
                        open_file_browser(page)
                    page.wait_for_timeout(400)
                    label = f"{theme.split()[-1].lower()}-{stem}-{state}-{width}"
                    lab.snap(label)
                    problems += read_page(lab, label)
            for session in lab_server.request("api/sessions"):
                lab_server.request(f"api/sessions/{session['id']}", method="DELETE")
    finally:
        page.close()
    assert not problems, "\n".join(dict.fromkeys(problems))  # each problem once


def _lock(page: Any) -> None:
    """Lock a guess as the chapter-page test does, and wait for the reveal."""
    PAGES.lock_a_guess(page)
    page.get_by_text("Your prediction, revealed.").first.wait_for(timeout=BT.WIDGET_MS)


def test_the_background_check_tells_a_card_from_a_see_through_figure() -> None:
    from PIL import Image

    def png(mode: str, colour: tuple[int, ...]) -> bytes:
        buffer = io.BytesIO()
        Image.new(mode, (40, 30), colour).save(buffer, format="PNG")
        return buffer.getvalue()

    assert own_background(png("RGB", (255, 255, 255))) == ""
    assert own_background(png("RGBA", (255, 255, 255, 255))) == ""
    assert "transparent" in own_background(png("RGBA", (255, 255, 255, 0)))
    assert "dark" in own_background(png("RGB", (17, 17, 17)))
