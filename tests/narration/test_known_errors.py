"""Statements an expert review found wrong must not come back, in any wording.

Each class is a pattern over sentences: a sentence that makes the claim without the
qualifier that makes it true fails. The texts checked are every narration script of
chapters 0-8, the chapter sources they narrate, and every rendered text of the chapter 0-8
records (prompts, notes, options, hints, explanations), printed and for a few variants.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from workbook.records import all_challenges, all_exercises

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = range(9)


def _sentences(text: str) -> Iterator[str]:
    for block in re.split(r"\n\s*\n", text):
        yield from re.split(r"(?<=[.!?])\s+(?=[A-Z*])", " ".join(block.split()))


def _has(sentence: str, *words: str) -> bool:
    low = sentence.lower()
    return any(w in low for w in words)


# (name, the claim, qualifiers any one of which makes the sentence true)
CLASSES: list[tuple[str, Callable[[str], bool], tuple[str, ...]]] = [
    ("column-parallel needs no communication",
     lambda s: _has(s, "column-parallel", "column parallel", "column split")
     and _has(s, "no communication", "without talking", "without communicat",
              "needs nothing", "no all-reduce", "no allreduce"),
     ("forward", "backward")),
    ("a deferred weight-gradient pass is free",
     lambda s: bool(re.search(r"w (keeps|holds|needs) only (its )?small|w'?s? (stash|inputs?) "
                              r"(is|are) (negligible|free|not counted)", s.lower())),
     ()),
    ("ZB-H1 keeps 1F1B's memory by fiat",
     lambda s: _has(s, "zb-h1", "z b h one", "zero-bubble", "zero bubble")
     and _has(s, "same memory", "same peak memory", "keeps 1f1b's memory",
              "1f1b's order and memory", "with the same memory"),
     ("in flight", "at most p", "counting", "counted", "delay", "micro-batches in")),
    ("interleaving needs m to be a multiple of p",
     lambda s: _has(s, "multiple of p", "multiple of the stages", "multiple of pp",
                    "multiple of the pipeline", "multiple of $p$", "divisible by the pipeline",
                    "divisible by p")
     and _has(s, "interleav", "megatron"),
     ("older", "history", "default", "used to", "earlier release")),
    ("TP stops at eight GPUs as a law",
     lambda s: _has(s, "stays inside", "stay inside", "kept within", "kept inside", "stop at",
                    "stops at", "past eight", "leaves the nvlink", "within the nvlink",
                    "inside the nvlink", "inside one nvlink", "t \\le 8", "t <= 8")
     and _has(s, "eight gpu", "8 gpu", "8-gpu", "server", "t \\le 8", "t <= 8", "past eight"),
     ("h100", "hgx", "dgx", "72", "seventy-two", "a100")),
    ("K/V heads are replicated by the tensor-parallel split itself",
     lambda s: _has(s, "k/v head", "kv head", "key/value head", "key-value head")
     and _has(s, "replicat", "copied", "copies", "copy"),
     ("inference", "vllm", "engine", "count the copy")),
    ("E5M2 gradients as today's usual FP8 recipe",
     lambda s: _has(s, "e5m2", "e five m two") and _has(s, "usual recipe", "standard recipe",
                                                      "the usual", "is the recipe"),
     ("hopper", "h100", "2022", "first recipe")),
]


def _texts() -> Iterator[tuple[str, str]]:
    for c in CHAPTERS:
        yield f"narration ch0{c}", (ROOT / "narration" / "scripts" / f"ch0{c}.md").read_text()
        for path in sorted((ROOT / "workbook" / "chapters").glob(f"ch0{c}_*.md")):
            yield path.name, path.read_text()
    for record in (*all_exercises(), *all_challenges()):
        if record.chapter not in CHAPTERS:
            continue
        draws = [record.params] + [record.variant(seed) for seed in range(6)]
        for params in draws:
            parts = [record.render_prompt(params), record.render_notes(params),
                     record.render_explanation(params), *record.render_extras(params),
                     *(record.render_hint(i, params) for i in range(len(record.hints)))]
            options = getattr(record.answer_kind, "options_for", None)
            if options is not None:
                parts += [o.feedback for o in options(params)]
            yield f"record {record.id}", "\n\n".join(parts)


TEXTS = list(_texts())


@pytest.mark.parametrize(("name", "claim", "qualifiers"), CLASSES, ids=[c[0] for c in CLASSES])
def test_known_wrong_statement_does_not_come_back(
        name: str, claim: Callable[[str], bool], qualifiers: tuple[str, ...]) -> None:
    offending = [f"{where}: {sentence}" for where, text in TEXTS for sentence in _sentences(text)
                 if claim(sentence) and not _has(sentence, *qualifiers)]
    assert not offending, f"{name}:\n" + "\n".join(offending)


@pytest.mark.parametrize(("sentence", "caught"), [
    ("A column-parallel layer needs no communication.", True),
    ("It takes the full input and produces its own slice, with no communication at all, "
     "in a column-parallel layer.", True),
    ("A column-parallel layer needs no communication in the forward pass.", False),
    ("ZB-H1 keeps 1F1B's order and memory (activations are released by B; W keeps only small "
     "inputs).", True),
    ("The weight part fills the gaps, so the zero-bubble bubble shrinks with the same memory.",
     True),
    ("Megatron-LM also requires m to be a multiple of p when interleaving.", True),
    ("Older Megatron-LM releases required m to be a multiple of p when interleaving.", False),
    ("That is why tensor parallelism is normally kept within the eight GPUs of one server.",
     True),
    ("Keep TP inside one NVLink domain: 8 GPUs on H100, 72 on GB200 NVL72.", False),
    ("When t > n_kv every GPU holds one K/V head and each K/V head is copied on t/n_kv GPUs.",
     True),
    ("The usual recipe stores gradients in E5M2.", True),
])
def test_the_patterns_catch_the_class(sentence: str, caught: bool) -> None:
    hits = [name for name, claim, qualifiers in CLASSES
            if claim(sentence) and not _has(sentence, *qualifiers)]
    assert bool(hits) is caught, hits
