"""CheckResult: plain text and accessible, escaped HTML."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from autograder.kinds import Verdict
from autograder.result import CheckResult


def result(verdict: Verdict, hint: str = "", params: dict[str, object] | None = None,
           title: str = "8-GPU AllReduce volume") -> CheckResult:
    return CheckResult(exercise_id="0.1", title=title, verdict=verdict, hint=hint,
                       params=params, attempt_counted=verdict.counts_as_attempt)


RIGHT = Verdict("correct", "Correct.", yours="1750 MB = 1.75 GB", expected="1.75 GB", score=1.0)
WRONG = Verdict("wrong", "Not yet: your answer is 2 times too large.", yours="3.5 GB",
                details=("Check the number of phases.",))
BAD = Verdict("invalid", "Expected a size such as '1.75 GB'; got '<b>70 ms</b>'.",
              yours="'<b>70 ms</b>'")


class _Text(HTMLParser):
    """Collects the visible text and the tags, to check HTML structure."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Text:
    parser = _Text()
    parser.feed(html)
    return parser


@pytest.mark.parametrize(("verdict", "line"), [
    (RIGHT, "✔ Correct"), (WRONG, "✘ Not yet"), (BAD, "⚠ Could not read your answer"),
])
def test_status_is_a_symbol_and_a_word(verdict: Verdict, line: str) -> None:
    r = result(verdict)
    assert r.status_line == line
    assert str(r).startswith(f"{line} -- exercise 0.1: 8-GPU AllReduce volume")
    visible = "".join(parse(r._repr_html_()).text)
    word = line.split(" ", 1)[1]
    assert word in visible  # the word is in the text, not only in a colour


def test_plain_text_shows_yours_expected_details_and_hint() -> None:
    text = str(result(WRONG, hint="Hint 1 of 3: run hint('0.1').", params={"N": 16, "M_GB": 2.0}))
    assert text == ("✘ Not yet -- exercise 0.1: 8-GPU AllReduce volume\n"
                    "Your variant: N=16, M_GB=2\n"
                    "Yours:    3.5 GB\n"
                    "Not yet: your answer is 2 times too large.\n"
                    "  - Check the number of phases.\n"
                    "Hint 1 of 3: run hint('0.1').")
    assert repr(result(WRONG)) == str(result(WRONG))


def test_html_is_an_accessible_live_region() -> None:
    tags = parse(result(RIGHT)._repr_html_()).tags
    div = tags[0]
    assert div[0] == "div"
    assert div[1]["role"] == "status"
    assert div[1]["aria-live"] == "polite"
    assert ("span", {"aria-hidden": "true"}) in tags  # the symbol is decoration


def test_html_shows_yours_next_to_expected() -> None:
    visible = parse(result(RIGHT)._repr_html_()).text
    assert visible[visible.index("Yours") + 1] == "1750 MB = 1.75 GB"
    assert visible[visible.index("Expected") + 1] == "1.75 GB"
    wrong = parse(result(WRONG)._repr_html_()).text
    assert "Expected" not in wrong  # a wrong verdict without expected shows none


def test_html_lists_details_and_the_hint() -> None:
    html = result(WRONG, hint="Hint 1 of 3: run hint('0.1').")._repr_html_()
    assert "<li>Check the number of phases.</li>" in html
    assert "Hint 1 of 3: run hint(&#x27;0.1&#x27;)." in html


def test_learner_text_is_escaped() -> None:
    html = result(BAD, title="<script>x</script>")._repr_html_()
    assert "<b>" not in html and "<script>" not in html
    assert "&lt;b&gt;70 ms&lt;/b&gt;" in html
    assert "&lt;script&gt;" in html


def test_with_note() -> None:
    r = result(RIGHT).with_note("Progress not saved: read-only home.")
    assert r.note == "Progress not saved: read-only home."
    assert str(r).endswith("Note: Progress not saved: read-only home.")
    assert "Note: Progress not saved" in r._repr_html_()
    assert r.with_note("Again.").note == "Progress not saved: read-only home. Again."
