# JupyterLab settings for `make lab` (a learner's session; the Makefile sets the root to the
# learner notebooks' folder). nbgrader is not part of a learner's install, but after
# `make test` it is in the same environment; its server extensions are for instructors
# running a course and only log errors in a learner's session, so they are switched off.
c = get_config()  # noqa: F821  (provided by Jupyter when it loads this file)
c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.assignment_list": False,
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.validate_assignment": False,
}
# Containers and cloud VMs often run everything as root; Jupyter refuses that by default.
c.ServerApp.allow_root = True
