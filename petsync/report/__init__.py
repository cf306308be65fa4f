"""The history's report: one self-contained HTML file of charts and their numbers.

- :mod:`petsync.report.data`: the numbers behind the page, from the history alone.
- :mod:`petsync.report.catalogue`: the versions counted by night, category and status.
- :mod:`petsync.report.lookup`: the pets the page can look up, a bounded number of them.
- :mod:`petsync.report.charts`: the charts, as Vega-Lite specs, and the tables they read.
- :mod:`petsync.report.tables`: the numbers under each chart, with dates and labels.
- :mod:`petsync.report.page`: the page, with Vega's JavaScript inlined and no request allowed.
- :mod:`petsync.report.write`: :func:`write_report`.
"""
