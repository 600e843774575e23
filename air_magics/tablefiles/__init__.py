"""Table files below the tables and the datasets: a table's Parquet or Delta folder resolved to its
files and row groups (:mod:`.resolve`, :mod:`.delta`), its row filter (:mod:`.filter`), which rows
go to which stream (:mod:`air_magics.datasets.row_plan`), and reading them as batches (:mod:`.scan`); table names
(:mod:`.names`). Nothing here talks to Spark.
"""

__all__: list[str] = []
