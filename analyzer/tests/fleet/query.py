"""Per-procedure counts, p50 and p99 over an `rdma-analyzer export` dataset,
computed by DuckDB and by Spark (local mode, one session), printed as one
JSON document for analyzer/tests/fleet_dataset.rs to compare with `report`.

    query.py DATASET_DIR [duckdb|spark ...]

The quantiles are the report's definition, computed exactly: the value of
rank ceil(q * n) among a group's n latencies, q and n multiplied as doubles
(as the report does), so that the report's only difference is its
histogram's bucket error.
"""

import json
import sys

# version and minorversion: NFSv4.1 and 4.2 are separate rows in the report.
KEYS = "capture, program, program_name, version, minorversion, proc, procedure, call_transfer, reply_transfer"

RESPONSE_TIMES = f"""
WITH answered AS (
    SELECT {KEYS}, latency_us FROM transactions WHERE reply_ts_ns IS NOT NULL
), ranked AS (
    SELECT {KEYS}, latency_us,
           row_number() OVER (PARTITION BY {KEYS} ORDER BY latency_us) AS rn,
           count(*) OVER (PARTITION BY {KEYS}) AS n
    FROM answered
)
SELECT {KEYS}, max(n) AS count,
       max(CASE WHEN rn = CAST(ceil(CAST(0.5 AS DOUBLE) * n) AS BIGINT) THEN latency_us END) AS p50_us,
       max(CASE WHEN rn = CAST(ceil(CAST(0.99 AS DOUBLE) * n) AS BIGINT) THEN latency_us END) AS p99_us
FROM ranked
GROUP BY {KEYS}
"""

UNANSWERED = """
SELECT capture, program, program_name, version, minorversion, proc, procedure, count(*) AS count
FROM transactions WHERE reply_ts_ns IS NULL
GROUP BY capture, program, program_name, version, minorversion, proc, procedure
"""

ANOMALIES = """
SELECT capture, kind, count(*) AS count FROM anomalies GROUP BY capture, kind
"""

# Hosts and days are partitions only: they must come back as columns.
PARTITIONS = """
SELECT DISTINCT host, capture, CAST(date AS STRING) AS date FROM transactions
"""

QUERIES = {
    "response_times": RESPONSE_TIMES,
    "unanswered": UNANSWERED,
    "anomalies": ANOMALIES,
    "partitions": PARTITIONS,
}


def with_duckdb(root):
    import duckdb

    con = duckdb.connect()
    for table in ("transactions", "anomalies"):
        con.execute(
            f"CREATE VIEW {table} AS SELECT * FROM read_parquet("
            f"'{root}/{table}/*/*/*/*.parquet', hive_partitioning = true)"
        )
    out = {}
    for name, sql in QUERIES.items():
        rel = con.sql(sql)
        out[name] = [dict(zip(rel.columns, row)) for row in rel.fetchall()]
    return out


def with_spark(root):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rdma-analyzer fleet test")
        # Spark cannot read Parquet TIMESTAMP(NANOS) as a timestamp: this
        # reads it as the integer nanoseconds the JSON has.
        .config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for table in ("transactions", "anomalies"):
            spark.read.parquet(f"{root}/{table}").createOrReplaceTempView(table)
        return {
            name: [row.asDict() for row in spark.sql(sql).collect()]
            for name, sql in QUERIES.items()
        }
    finally:
        spark.stop()


def main():
    root = sys.argv[1]
    engines = sys.argv[2:] or ["duckdb", "spark"]
    run = {"duckdb": with_duckdb, "spark": with_spark}
    json.dump({e: run[e](root) for e in engines}, sys.stdout, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
