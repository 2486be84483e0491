"""A status bar while grading: one line redrawn on a terminal, plain lines otherwise (logs, CI)."""

from __future__ import annotations

import time
from typing import TextIO

from autograder.grading.safe_text import visible

BAR_WIDTH = 28


class StatusBar:
    """Call :meth:`step` once per file, then :meth:`done`."""

    def __init__(self, total: int, stream: TextIO, *, tty: bool | None = None) -> None:
        self.total, self.stream, self.count = total, stream, 0
        self.tty = stream.isatty() if tty is None else tty
        self.started = time.monotonic()

    def step(self, label: str) -> None:
        """One file done; ``label`` (names from the submissions) is shown made visible."""
        label = visible(label)
        self.count += 1
        if self.tty:
            filled = BAR_WIDTH * self.count // max(self.total, 1)
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            text = f"\r[{bar}] {self.count}/{self.total}  {label[:40]:<40}"
        else:
            text = f"[{self.count}/{self.total}] {label}\n"
        self.stream.write(text)
        self.stream.flush()

    def done(self) -> None:
        seconds = time.monotonic() - self.started
        prefix = "\n" if self.tty and self.count else ""
        self.stream.write(f"{prefix}Graded {self.count} file(s) in {seconds:.1f} s.\n")
        self.stream.flush()
