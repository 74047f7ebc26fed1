#!/usr/bin/env python3
"""Real Delta Lake tables for `dedupsim inspect` (docs/delta.md), written by
pyspark with the Delta jars on spark.jars (no delta-spark wheel: only
DataFrameWriter options and SQL), each with Spark's own read as the truth.

    python fixtures.py OUT_DIR JARS [NAME ...]

Each table is OUT_DIR/NAME/table (a Delta table folder) and
OUT_DIR/NAME/truth.json: what Spark reads from it (its row count; for the
key columns, the keys held more than once with their counts, from
groupBy(keys).count() where count > 1, nulls grouped as Spark groups them;
DESCRIBE HISTORY's operation per version) and what the writer did (the
txnAppId/txnVersion of each write, in order). The writes stand for a
foreachBatch sink's batches: a replayed batch is the same write again.
"""

import json
import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

SCHEMA = "id string, n bigint, ts timestamp, amount double"


def session(jars, work):
    return (
        SparkSession.builder.master("local[1]")
        .appName("dedupsim-delta-fixtures")
        .config("spark.jars", jars)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .config("spark.hadoop.fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        .config("spark.sql.warehouse.dir", os.path.join(work, "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work}")
        .getOrCreate()
    )


def rows(spark, data):
    """A batch DataFrame: data is (id, n, ts_seconds, amount) tuples."""
    df = spark.createDataFrame(data, "id string, n bigint, ts_s bigint, amount double")
    return df.select("id", "n", F.timestamp_seconds("ts_s").alias("ts"), "amount")


class Table:
    def __init__(self, spark, out, name, keys):
        self.spark = spark
        self.dir = os.path.join(out, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.path = os.path.join(self.dir, "table")
        self.keys = keys
        self.writes = []  # what the writer did: {"appId", "version"} or {"append"}
        self.extra = {}

    def append(self, data, app=None, version=None, partition=None, props=None):
        w = rows(self.spark, data).write.format("delta").mode("append")
        if partition:
            w = w.partitionBy(partition)
        for k, v in (props or {}).items():
            w = w.option(k, v)
        if app is not None:
            w = w.option("txnAppId", app).option("txnVersion", version)
            self.writes.append({"appId": app, "version": version})
        w.save(self.path)

    def merge(self, data, keys):
        rows(self.spark, data).createOrReplaceTempView("src")
        cond = " AND ".join(f"t.{k} = s.{k}" for k in keys)
        self.spark.sql(f"MERGE INTO delta.`{self.path}` t USING src s ON {cond} WHEN NOT MATCHED THEN INSERT *")

    def sql(self, stmt):
        self.spark.sql(stmt.replace("{t}", f"delta.`{self.path}`"))

    def truth(self):
        df = self.spark.read.format("delta").load(self.path)
        dups = df.groupBy(*self.keys).count().where("count > 1").collect()
        def val(v):
            if v is None or isinstance(v, (str, int, float, bool)):
                return v
            return v.isoformat() if hasattr(v, "isoformat") else str(v)
        dup_list = sorted(([val(r[k]) for k in self.keys], r["count"]) for r in dups)
        hist = self.spark.sql(f"DESCRIBE HISTORY delta.`{self.path}`").select("version", "operation").collect()
        t = {
            "rows": df.count(),
            "keys": self.keys,
            "duplicateKeys": len(dups),
            "extraRows": sum(r["count"] - 1 for r in dups),
            "duplicates": [{"key": k, "count": c} for k, c in dup_list],
            "operations": {str(r["version"]): r["operation"] for r in sorted(hist)},
            "writes": self.writes,
        }
        t.update(self.extra)
        with open(os.path.join(self.dir, "truth.json"), "w") as f:
            json.dump(t, f, indent=1, sort_keys=True)
            f.write("\n")
        # Spark's crc sidecars of the Hadoop checksum file system are not
        # written (RawLocalFileSystem); Delta's own NNN.crc files are kept.


def table_clean(spark, out):
    """Idempotent appends: a stable txnAppId, batch 1 replayed after a crash
    past the write: the replay writes nothing."""
    t = Table(spark, out, "table-clean", ["id"])
    t.append([("a", 1, 10, 1.5), ("b", 2, 11, None)], "payments-dedup-v1", 0)
    t.append([("c", 3, 12, 2.0)], "payments-dedup-v1", 1)
    t.append([("c", 3, 12, 2.0)], "payments-dedup-v1", 1)  # replay: skipped by Delta
    t.append([], "payments-dedup-v1", 2)  # a no-data batch: a commit with no file
    t.append([("d", 4, 13, -0.0)], "payments-dedup-v1", 3)
    t.truth()


def table_new_app_id(spark, out):
    """Seed 000's mistake: the txnAppId generated at start-up, so the restart
    after a crash past batch 1's write replays it under a new id."""
    t = Table(spark, out, "table-new-app-id", ["id"])
    t.append([("a", 1, 10, 1.0), ("b", 2, 11, 2.0)], "run-1f0c", 0)
    t.append([("c", 3, 12, 3.0), ("d", 4, 12, 4.0)], "run-1f0c", 1)
    # crash after the sink write of batch 1; restart with a new app id
    t.append([("c", 3, 12, 3.0), ("d", 4, 12, 4.0)], "run-7a2e", 1)
    t.append([("e", 5, 14, 5.0)], "run-7a2e", 2)
    t.append([("f", 6, 15, 6.0)], "run-7a2e", 4)  # batch 3 wrote elsewhere: a gap
    t.truth()


def merge(spark, out):
    """MERGE ... WHEN NOT MATCHED THEN INSERT *: a replayed batch matches;
    null keys never match (SQL's =), so each null-key copy is inserted."""
    t = Table(spark, out, "merge", ["id"])
    t.append([("a", 1, 10, 1.0)])
    t.merge([("a", 1, 10, 1.0), ("b", 2, 11, 2.0)], ["id"])
    t.merge([("b", 2, 11, 2.0), (None, 3, 12, 3.0)], ["id"])
    t.merge([(None, 3, 12, 3.0), ("c", 4, 13, 4.0)], ["id"])
    t.truth()


def append_replay(spark, out):
    """A plain append: the replayed batch is there twice; keys over two
    columns, one a timestamp."""
    t = Table(spark, out, "append-replay", ["id", "ts"])
    t.append([("a", 1, 10, 1.0), ("b", 2, 10, 2.0)])
    t.append([("a", 3, 11, 1.0), ("c", 4, 12, 2.0)])
    t.append([("a", 3, 11, 1.0), ("c", 4, 12, 2.0)])  # replay
    t.truth()


def checkpointed(spark, out):
    """Twelve commits with a checkpoint every five (a Parquet checkpoint at
    versions 5 and 10, _last_checkpoint), a partitioned table (the key's
    second column is the partition column), and a DELETE that removes a
    file: the live files are the checkpoint's plus what came after."""
    t = Table(spark, out, "checkpointed", ["id", "day"])
    props = {"delta.checkpointInterval": "5"}
    for v in range(12):
        data = [(f"k{v}", v, 100 + v, float(v)), (f"k{v % 3}", v, 200 + v, None)]
        df = rows(spark, data).withColumn("day", F.lit(f"2026-12-0{1 + v % 2}"))
        w = df.write.format("delta").mode("append").partitionBy("day").option("txnAppId", "app").option("txnVersion", v)
        if v == 0:
            w = w.option("delta.checkpointInterval", "5")
        t.writes.append({"appId": "app", "version": v})
        w.save(t.path)
    t.sql("DELETE FROM {t} WHERE id = 'k5'")
    t.truth()


def deletion_vectors(spark, out):
    """A DELETE on a table with deletion vectors: the file stays, with a
    vector of deleted rows. inspect refuses it by name."""
    t = Table(spark, out, "deletion-vectors", ["id"])
    rows(spark, [("a", 1, 10, 1.0), ("b", 2, 11, 2.0), ("a", 3, 12, 3.0)]).write.format("delta") \
        .option("delta.enableDeletionVectors", "true").save(t.path)
    t.sql("DELETE FROM {t} WHERE n = 3")
    t.truth()


def column_mapping(spark, out):
    """Column mapping by name, a renamed key column: the Parquet files hold
    physical names (col-<uuid>), the schema the logical ones."""
    t = Table(spark, out, "column-mapping", ["event_id"])
    rows(spark, [("a", 1, 10, 1.0), ("b", 2, 11, 2.0)]).write.format("delta") \
        .option("delta.columnMapping.mode", "name").option("delta.minReaderVersion", "2") \
        .option("delta.minWriterVersion", "5").save(t.path)
    t.sql("ALTER TABLE {t} RENAME COLUMN id TO event_id")
    rows(spark, [("b", 3, 12, 3.0)]).withColumnRenamed("id", "event_id").write.format("delta").mode("append").save(t.path)
    t.truth()


CASES = {f.__name__.replace("_", "-"): f for f in
         (table_clean, table_new_app_id, merge, append_replay, checkpointed, deletion_vectors, column_mapping)}


def main():
    out, jars = os.path.abspath(sys.argv[1]), sys.argv[2]
    names = sys.argv[3:] or list(CASES)
    work = tempfile.mkdtemp(prefix="delta-fixtures-")
    try:
        spark = session(jars, work)
        spark.sparkContext.setLogLevel("ERROR")
        for n in names:
            print(f"fixtures: {n}", file=sys.stderr, flush=True)
            CASES[n](spark, out)
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
