#!/usr/bin/env bash
# The README's fleet demo: several captures from several hosts -> `export`
# into one Parquet dataset -> one Spark SQL query over the whole dataset ->
# a table on the terminal (per host and procedure: calls, p50 and p99
# latency, anomalies).
#
#   scripts/fleet-demo.sh [DATASET_DIR]       (default target/fleet-demo)
#
# The bundled lab captures stand in for a fleet: the NFSv3 ones as host
# client-v3, the NFSv4.x ones as client-v4. Spark runs in local mode (Java
# and PySpark from scripts/setup-fleet.sh); its start-up takes a few
# seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/setup-fleet.sh
cargo build --release --quiet -p rdma-analyzer
bin=target/release/rdma-analyzer
out=${1:-target/fleet-demo}
rm -rf "$out"

"$bin" export --out "$out" --host client-v3 captures/v3-*.pcap captures/parallel.pcap
"$bin" export --out "$out" --host client-v4 captures/v4*.pcap
find "$out" -name '*.parquet' | sort | sed 's/^/  /'

target/fleet-venv/bin/python - "$out" <<'EOF'
import sys

from pyspark.sql import SparkSession

root = sys.argv[1]
spark = (
    SparkSession.builder.master("local[2]")
    .appName("rdma-analyzer fleet demo")
    # Parquet TIMESTAMP(NANOS) is read as the integer nanoseconds the JSON has.
    .config("spark.sql.legacy.parquet.nanosAsLong", "true")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "4")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
spark.read.parquet(f"{root}/transactions").createOrReplaceTempView("transactions")
spark.read.parquet(f"{root}/anomalies").createOrReplaceTempView("anomalies")
spark.sql("""
    SELECT t.host,
           concat_ws(' ', t.program_name, t.procedure) AS procedure,
           count(*) AS calls,
           round(percentile(t.latency_us, 0.5), 1) AS p50_us,
           round(percentile(t.latency_us, 0.99), 1) AS p99_us,
           sum(size(t.anomalies)) AS anomalies,
           count(DISTINCT t.capture) AS captures
    FROM transactions t
    GROUP BY t.host, t.program_name, t.procedure
    ORDER BY calls DESC, procedure
""").show(25, truncate=48)
spark.sql("""
    SELECT host, kind, severity, count(*) AS found,
           timestamp_micros(min(ts_ns) DIV 1000) AS first_seen
    FROM anomalies GROUP BY host, kind, severity ORDER BY found DESC
""").show(truncate=False)
spark.stop()
EOF
