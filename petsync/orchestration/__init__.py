"""petsync under an orchestrator: a job file run as a child process, and Dagster definitions.

:mod:`petsync.orchestration.process` runs a job file the way cron does (a ``petsync run``
process, stopped with SIGTERM) and reads its one-line JSON summary; it needs nothing beyond
petsync. :mod:`petsync.orchestration.dagster` builds Dagster assets, checks, a schedule and
a sensor on it (the ``petsync[dagster]`` extra).
"""
