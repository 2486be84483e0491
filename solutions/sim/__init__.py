"""The simulated cluster of the labs.

The trusted side (:mod:`.channel`, which runs a case, :mod:`.process`, which starts the
ranks' process, :mod:`.lab`, :mod:`.verify` and the labs: :mod:`.ring_lab`,
:mod:`.zero_lab`, :mod:`.tp_lab`, :mod:`.pipeline_lab`) runs the cluster, keeps the log and
judges it. The learner's ranks run in another process that receives copies of only
:mod:`.wire`, :mod:`.bundle`, :mod:`.host` and, where a lab allows them, :mod:`.collectives`;
so this file imports nothing.
"""
