"""Read a chapter source: markdown prose with fenced directives, into a list of blocks.

A chapter source is MyST-flavoured markdown. Prose becomes markdown cells (a line
``+++`` starts a new cell). Fenced blocks name a directive:

    ```{code-cell}            a code cell, as written
    ```{narration} ch05/intro a narration player for that key
    ```{exercise} 5.1         the generated cells of exercise 5.1 (prompt, answer, check, widget)
    ```{predict} ch05         the chapter's prediction lock
    ```{reveal} ch05          how far the prediction was from the computed value
    ```{reflect} ch05         the chapter's closing reflection question (design ledger)
    ```{progress} 5           chapter and overall mastery, streak
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DIRECTIVES = ("code-cell", "narration", "exercise", "predict", "reveal", "reflect",
              "progress")
_FENCE = re.compile(r"^```\{(?P<name>[a-z-]+)\}\s*(?P<arg>.*?)\s*$")


@dataclass(frozen=True)
class Block:
    """One piece of a chapter: ``markdown`` text, or a directive with its argument and body."""

    name: str  # "markdown" or one of DIRECTIVES
    arg: str = ""
    body: str = ""


class SourceError(ValueError):
    """A chapter source that cannot be read; the message names the file and line."""


def parse(text: str, origin: str = "<source>") -> list[Block]:
    blocks: list[Block] = []
    prose: list[str] = []
    lines = text.split("\n")
    i = 0

    def flush() -> None:
        content = "\n".join(prose).strip("\n")
        if content.strip():
            blocks.append(Block("markdown", body=content))
        prose.clear()

    while i < len(lines):
        line = lines[i]
        match = _FENCE.match(line)
        if line.strip() == "+++":
            flush()
        elif match:
            flush()
            name, arg = match["name"], match["arg"]
            if name not in DIRECTIVES:
                raise SourceError(f"{origin}:{i + 1}: unknown directive {{{name}}}; "
                                  f"expected one of {', '.join(DIRECTIVES)}")
            body, i = _fenced_body(lines, i + 1, origin)
            blocks.append(Block(name, arg, body))
        else:
            prose.append(line)
        i += 1
    flush()
    return blocks


def _fenced_body(lines: list[str], start: int, origin: str) -> tuple[str, int]:
    for j in range(start, len(lines)):
        if lines[j].strip() == "```":
            return "\n".join(lines[start:j]).strip("\n"), j
    raise SourceError(f"{origin}:{start}: a fenced block is never closed with ```")
