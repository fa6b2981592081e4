"""Running the pipeline's SQL on engines other than DuckDB (``spark.py``: Apache Spark)."""
