"""Building the chapter notebooks from their text sources.

``source`` reads a chapter source into blocks, ``cells`` turns an exercise record into its
cells, and ``notebooks`` writes the learner and instructor notebooks (``workbook build``).
"""
