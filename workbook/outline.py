"""The chapters of the workbook: number, title and file stem, in order."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chapter:
    number: int
    title: str
    stem: str  # file stem of the chapter source and its notebooks


CHAPTERS: tuple[Chapter, ...] = (
    Chapter(0, "Ring AllReduce", "ch00_ring_allreduce"),
    Chapter(1, "ZeRO stages", "ch01_zero_stages"),
    Chapter(2, "Gradient accumulation", "ch02_gradient_accumulation"),
    Chapter(3, "Learning-rate scaling", "ch03_learning_rate_scaling"),
    Chapter(4, "Communication overhead and overlap", "ch04_communication_overlap"),
    Chapter(5, "Pipeline parallelism", "ch05_pipeline_parallelism"),
    Chapter(6, "Tensor parallelism", "ch06_tensor_parallelism"),
    Chapter(7, "Checkpoint and recovery", "ch07_checkpoint_recovery"),
    Chapter(8, "Mixed precision", "ch08_mixed_precision"),
    Chapter(9, "Capstone: rebuilding the Llama 3 405B run", "ch09_capstone_llama3_405b"),
)


def chapter(number: int) -> Chapter:
    """The chapter numbered ``number`` (0-9); ValueError naming the valid range otherwise."""
    if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < len(CHAPTERS):
        raise ValueError(f"chapter must be a whole number from 0 to {len(CHAPTERS) - 1}, "
                         f"got {number!r}")
    return CHAPTERS[number]
