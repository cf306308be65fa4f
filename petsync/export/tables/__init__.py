"""Table formats a snapshot can be committed to instead of dated folders: Delta Lake
(:mod:`.delta`) and Apache Iceberg (:mod:`.iceberg`). Each commits one night through what
:class:`.night.Night` gives it, and reads its nights back for :mod:`petsync.export.snapshot`.
"""
