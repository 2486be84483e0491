"""The instructor's side of the workbook: a term.

One module per concept: the class list (``roster``), the LMS layouts (``lms_canvas``,
``lms_moodle``), the assignment a grading run is bound to (``assignment``), the term's
policies (``policies``: overrides, late rules, extensions, partial credit; applied to a
graded batch by ``adjust``) and the class
report (``class_report``). The learner's API and the notebook build live elsewhere in
:mod:`workbook`; nothing here is imported by a learner's notebook.
"""
