"""The ways petsync keeps its nights: dated Parquet/CSV folders (:mod:`.folders`), a Delta
Lake table (:mod:`.delta`) or an Apache Iceberg table (:mod:`.iceberg`).

Each implements the one small interface of :mod:`.protocol` and is chosen by name, by the
place that holds it, or by a night's manifest from :mod:`.registry`; the two tables share
their commit's steps (:mod:`.table_steps`). An export commits a :class:`.night.Night`; readers
(:mod:`.snapshots`) list and load nights whatever format wrote them, in the snapshot's one
schema (:mod:`.schema`). This package sits below the export and the history and imports
neither.
"""
