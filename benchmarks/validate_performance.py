"""How well the step-time model predicts published training runs, fitted and held out.

    .venv/bin/python benchmarks/validate_performance.py          # summary and per source
    .venv/bin/python benchmarks/validate_performance.py --runs   # and every run
    .venv/bin/python benchmarks/validate_performance.py --fit    # and repeat the fit
    .venv/bin/python benchmarks/validate_performance.py --write-doc  # refresh the page

Reads ``solutions/data/published_runs.json``, predicts each run in its source's convention
and prints, for the rows the constants were fitted on and for the held-out rest separately:
the median |error|, the share within 15 % and the worst run, beside a baseline that predicts
every run at one constant share of peak (the best such constant on the fit rows), then the
model's error per source. It also cross-validates by source: for each source the constants
are fitted on every run of the other sources and that source's runs are predicted with
them (``solutions.performance.validation.leave_one_source_out``; about ten fits, under a
minute).
It then holds out whole software families (each predicted with constants fitted on the
other families' fit rows, beside the constant baseline fitted on the same rows), ranks the
layouts of each published sweep (Kendall's tau) and compares the planner's memory with the
measured peaks (:mod:`solutions.performance.families`); ``--write-doc`` writes that into
the second marked block. ``--fit`` repeats the fit of :mod:`solutions.performance.fit` on
the fit rows and prints it beside the constants in use. The block between the markers of
``docs/validation.md`` is this script's ``--runs`` output
(``tests/solutions/test_performance_validation.py`` checks it); ``--write-doc`` rewrites
that block after the data file or the model changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from solutions.performance import fit
from solutions.performance.families import families_markdown
from solutions.performance.validation import PUBLISHED_RUNS, validation_table_markdown

DOC = Path(__file__).resolve().parents[1] / "docs" / "validation.md"
START, END = "<!-- validation-table:start -->", "<!-- validation-table:end -->"
FAMILIES_START = "<!-- validation-families:start -->"
FAMILIES_END = "<!-- validation-families:end -->"


def write_doc(table: str, start: str = START, end: str = END) -> None:
    """Replace the block between the markers ``start`` and ``end`` of docs/validation.md
    with ``table``."""
    text = DOC.read_text(encoding="utf-8")
    head, rest = text.split(start, 1)
    DOC.write_text(f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}", encoding="utf-8")


def main(argv: list[str]) -> None:
    text = validation_table_markdown(PUBLISHED_RUNS)
    families = families_markdown(PUBLISHED_RUNS)
    if "--write-doc" in argv:
        write_doc(text)
        write_doc(families, FAMILIES_START, FAMILIES_END)
    if "--runs" not in argv:
        text = text[text.index("| Part |"):]
    print(text)
    print("\n" + families)
    if "--fit" in argv:
        fitted = fit.fit(PUBLISHED_RUNS)
        print("\nConstant | fitted now | in use")
        for name, value in fit.current().items():
            print(f"{name} | {fitted[name]:g} | {value:g}")


if __name__ == "__main__":
    main(sys.argv[1:])
