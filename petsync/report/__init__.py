"""The history's report: one self-contained HTML file of charts and their numbers.

- :mod:`petsync.report.data`: the numbers behind each chart, from the history.
- :mod:`petsync.report.charts`: the charts, as Vega-Lite specs made with Altair.
- :mod:`petsync.report.page`: the page, with Vega's JavaScript inlined and no request allowed.
- :mod:`petsync.report.write`: :func:`write_report`.
"""
