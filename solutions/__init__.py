"""Reference calculations for distributed training, one module per concept.

Pure, typed functions with units in their names; decimal GB (1e9 bytes) unless a name
says GiB. Every docstring states the formula and cites its primary source. This
package imports nothing from ``autograder``, ``narration`` or ``workbook``.
"""
