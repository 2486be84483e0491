"""The learner's side of the workbook: what a notebook calls through ``import workbook as wb``.

Checking answers, hints, solutions and variants (``checking``), the cards (``widgets``),
prediction locks and the design ledger (``prediction_page``), the learner's own numbers
(``personal_numbers``), and the progress log with its commands (``progress_log``,
``progress_commands``, ``write_behind``). :mod:`workbook` re-exports the public names.
"""
