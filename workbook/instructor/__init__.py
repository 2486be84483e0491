"""The instructor's side of the workbook: a term.

One module per concept. The class list (``roster``, and ``roster_files`` for the LMSs'
own exports); the LMS layouts, taken from each LMS's source (``lms_canvas``,
``lms_moodle``), and what goes back to them (``handback``, ``lms_release``); the release
(``release``); the assignment a grading run is bound to (``assignment``); the term a run
is (``term``), its policies (``policies``, applied by ``adjust``), grading in each
student's numbers (``personal_grading``) with integrity evidence weighed by ``evidence``;
the ``workbook grade`` command (``grading``), a partial regrade (``regrade``), the
gradebook it writes (``gradebook``) and the class report (``class_report``,
``class_report_html``). The learner's API lives in :mod:`workbook.learner` and the
notebook build in :mod:`workbook.build`; nothing here is imported by a learner's notebook.
"""
