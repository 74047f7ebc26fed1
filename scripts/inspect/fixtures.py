#!/usr/bin/env python3
"""Real Spark checkpoints in state checkpoint format v2 for `dedupsim inspect`.

Runs one small dedup query per case on pyspark (4.1 or later; the cases
marked realtime need 4.3) and keeps its checkpoint and what Spark's own
readers say about it:

  checkpoint/       the query's checkpoint: RocksDB state store with
                    changelog checkpointing and
                    spark.sql.streaming.stateStore.checkpointFormatVersion=2
                    (commits/N "v2" with stateUniqueIds, <V>_<uuid>.changelog
                    and <V>_<uuid>.zip state files, SSTs/)
  spark-state.json  spark.read.format("statestore") per partition (keys, the
                    event-time or expiry range), the state-metadata source,
                    the last committed batch and watermark, Spark's version

    fixtures.py OUT_DIR CASE

Cases:
  v2-dedup    dropDuplicates(id, ts) with a 10 s watermark, 12 batches, a
              snapshot every 3 versions; after batch 6 the query stops, its
              last commit is deleted (a crash between the state commit and
              the commit log) and the restarted query runs batch 6 again:
              two <V>_<uuid> files of the same version, one orphaned.
  v2-within   dropDuplicatesWithinWatermark(id), 10 s delay, 12 batches, a
              plain restart after batch 7.
  realtime    dropDuplicates(id, ts) in real-time mode
              (trigger(realTime="5 seconds"), Spark 4.3), whose source is
              LowLatencyMemoryStream (reached through py4j: pyspark has no
              wrapper) and whose sink is the console; real-time mode turns
              on RocksDB and format v2 by itself; it takes only the update
              output mode.
"""

import importlib.util
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
BATCHES = 12
ROWS = 12


def diagnose_fixtures():
    """scripts/diagnose/fixtures.py, for its state_report."""
    spec = importlib.util.spec_from_file_location("dfix", os.path.join(HERE, "..", "diagnose", "fixtures.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


CASES = {
    "v2-dedup": dict(api="dropDuplicates", keys=["id", "ts"], watermark="10 seconds", crash_at=6),
    "v2-within": dict(api="dropDuplicatesWithinWatermark", keys=["id"], watermark="10 seconds", restart_at=7),
    "realtime": dict(api="dropDuplicates", keys=["id", "ts"], watermark="10 seconds", realtime=True),
}


def rows(batch, base):
    """One batch: fresh ids, and retries of the previous batch's first
    three (same event time: true duplicates)."""
    et = base + batch * 5
    out = [(f"k{batch}-{i}", et + i % 4) for i in range(ROWS)]
    if batch > 0:
        out += [(f"k{batch - 1}-{i}", et - 5 + i % 4) for i in range(3)]
    return out


def session(case, c):
    from pyspark.sql import SparkSession
    b = (
        SparkSession.builder.master("local[3]" if c.get("realtime") else "local[1]")
        .appName(f"dedupsim-inspect-fixture-{case}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "512m")
        .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "3")
        .config("spark.sql.streaming.stateStore.maintenanceInterval", "1s")
    )
    if not c.get("realtime"):
        # Real-time mode sets these itself.
        b = (b.config("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
             .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
             .config("spark.sql.streaming.stateStore.checkpointFormatVersion", "2"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def dedup(df, c):
    df = df.withWatermark("ts", c["watermark"])
    if c["api"] == "dropDuplicatesWithinWatermark":
        return df.dropDuplicatesWithinWatermark(c["keys"])
    return df.dropDuplicates(c["keys"])


def last_commit(ckpt):
    d = os.path.join(ckpt, "commits")
    ids = [int(n) for n in os.listdir(d) if n.isdigit()] if os.path.isdir(d) else []
    return max(ids) if ids else -1


def run_files(spark, c, d, work):
    from pyspark.sql import functions as F, types as T
    src = os.path.join(work, "src")
    os.makedirs(src)
    ckpt = os.path.join(d, "checkpoint")
    schema = T.StructType([T.StructField("id", T.StringType()), T.StructField("ts", T.LongType())])

    def start():
        df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(src)
        df = dedup(df.withColumn("ts", F.timestamp_seconds("ts")), c)
        return df.writeStream.format("noop").option("checkpointLocation", ckpt).start()

    base = int(time.time()) - 600
    q = start()
    for batch in range(BATCHES):
        if batch in (c.get("restart_at"), c.get("crash_at")):
            q.processAllAvailable()
            q.stop()
            if c.get("crash_at") == batch:
                # A crash after the state files of the last batch were
                # written and before its commit: the batch runs again.
                n = last_commit(ckpt)
                for name in (str(n), f".{n}.crc"):
                    p = os.path.join(ckpt, "commits", name)
                    if os.path.exists(p):
                        os.remove(p)
            q = start()
        tmp = os.path.join(work, f".part-{batch:04d}.json")
        with open(tmp, "w") as f:
            for i, ts in rows(batch, base):
                f.write(json.dumps({"id": i, "ts": ts}) + "\n")
        os.rename(tmp, os.path.join(src, f"part-{batch:04d}.json"))
        for _ in range(200):
            q.processAllAvailable()
            if last_commit(ckpt) >= batch:
                break
            time.sleep(0.05)
        # Let the maintenance task upload snapshots now and then.
        time.sleep(1.2)
    q.processAllAvailable()
    q.stop()
    return ckpt


def run_realtime(spark, c, d, work):
    from pyspark.sql import DataFrame, functions as F
    jvm = spark._jvm
    ckpt = os.path.join(d, "checkpoint")
    enc = jvm.org.apache.spark.sql.Encoders.tuple(jvm.org.apache.spark.sql.Encoders.STRING(), jvm.org.apache.spark.sql.Encoders.LONG())
    stream = jvm.org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream.apply(spark._jsparkSession, 1, enc)
    df = DataFrame(stream.toDF(), spark).select(F.col("_1").alias("id"), F.timestamp_millis("_2").alias("ts"))
    q = dedup(df, c).writeStream.format("console").outputMode("update").option("checkpointLocation", ckpt).trigger(realTime="5 seconds").start()
    base = int(time.time()) - 600
    for batch in range(6):
        data = jvm.java.util.ArrayList()
        for i, ts in rows(batch, base):
            data.add(jvm.scala.Tuple2(i, jvm.java.lang.Long.valueOf(str(ts * 1000))))
        stream.addData(jvm.scala.jdk.javaapi.CollectionConverters.asScala(data))
        time.sleep(5.5)
    # A real-time batch lasts the trigger's 5 s: wait for one more commit
    # after the last rows went in.
    seen = last_commit(ckpt)
    for _ in range(300):
        if last_commit(ckpt) > seen:
            break
        time.sleep(0.2)
    q.stop()
    # Spark's state reader takes the checkpoint format from the session,
    # not from the checkpoint: without this it lists the <V>_<uuid> files
    # as format v1 and fails (NumberFormatException on "3_<uuid>").
    spark.conf.set("spark.sql.streaming.stateStore.checkpointFormatVersion", "2")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB)
    return ckpt


def main():
    out, case = os.path.abspath(sys.argv[1]), sys.argv[2]
    c = CASES[case]
    d = os.path.join(out, case)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    work = os.path.join(out, ".work", case)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    spark = session(case, c)
    ckpt = (run_realtime if c.get("realtime") else run_files)(spark, c, d, work)
    diagnose_fixtures().state_report(spark, ckpt, c, d)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
