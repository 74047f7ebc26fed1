#!/usr/bin/env python3
"""Real Spark test data for `dedupsim diagnose` and `dedupsim inspect`.

Runs one small dedup query per (case, state store) on pyspark (the venv of
conform/sparkrunner/env.sh), and keeps what a user of that query would have:

  progress.jsonl   a StreamingQueryListener's log: event.progress.json per
                   executed batch, and the started/idle/terminated events as
                   JSON of their attributes (PySpark events have no .json)
  progress.json    query.recentProgress of every run, as one JSON array
  driver.log       the driver's log4j2 file at INFO for the streaming
                   loggers, WARN otherwise, Spark's default pattern: the
                   "Streaming query made progress:" pretty JSON mixed with
                   other lines
  eventlog/        the Spark event log (rolling eventlog_v2_* folder or one
                   file, plain or lz4/snappy/zstd: the case says which)
  checkpoint/      the query's checkpoint (HDFS-backed or RocksDB store)
  spark-state.json what Spark's own readers say about that checkpoint: the
                   statestore source (keys per partition, the event-time or
                   expiry range) and the last committed watermark
  sink.json        what the foreachBatch sink received: rows, distinct ids

    fixtures.py OUT_DIR [CASE ...]

Event times are near the wall clock of the run (a few minutes in the past),
as a production query's are, so that a future timestamp is visibly ahead of
the batch's trigger time. Every run is small: local[1], 2 state partitions,
a few dozen rows per batch, about 12 batches.
"""

import json
import os
import shutil
import sys
import time

CASES = {
    # dropDuplicates(id) and no watermark over a fresh id per event: state
    # keeps every key forever.
    "unbounded": dict(api="dropDuplicates", keys=["id"], watermark=None, sources=1, restart_at=6),
    # Two watermarked inputs under the default min policy; input b goes
    # quiet after batch 2, so the global watermark stays at b's while a
    # keeps flowing, and nothing is evicted.
    "stalled-min": dict(api="dropDuplicates", keys=["id", "ts"], watermark="10 seconds", sources=2, b_until=3),
    # dropDuplicatesWithinWatermark(id) with a 10 s delay, event time
    # advancing 5 s per batch: state plateaus, some duplicates dropped.
    "healthy": dict(api="dropDuplicatesWithinWatermark", keys=["id"], watermark="10 seconds", sources=1, restart_at=7),
    # dropDuplicates(id, ts) with a watermark; one row a year ahead in batch
    # 4 drags the watermark forward and every later honest row is late.
    "future-jump": dict(api="dropDuplicates", keys=["id", "ts"], watermark="10 seconds", sources=1, future_at=4),
    # dropDuplicates(id, ts): each retry re-stamps the event time, so the
    # retries are distinct keys and pass.
    "restamped": dict(api="dropDuplicates", keys=["id", "ts"], watermark="30 seconds", sources=1, restamp=True),
    # The healthy query again with the maintenance task every 2 s: the
    # HDFS store writes .snapshot files, and RocksDB without changelog
    # checkpointing writes a <V>.zip per commit (SSTs that only RocksDB
    # reads; inspect reports the zip's numKeys).
    "snapshots": dict(api="dropDuplicatesWithinWatermark", keys=["id"], watermark="10 seconds", sources=1, snapshots=True),
}

STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}

# Event-log shape per (case, store): (compress codec or None, rolling).
# Spark 4.1's default is zstd, rolling; snappy compresses event logs poorly
# (about 1:2), so it is used once, and the plain one once. Event logs are
# the biggest files (a few hundred KB each: SQL plans, task metrics), so
# three RocksDB runs keep none (False): the shapes are all covered.
EVENTLOG = {
    ("unbounded", "hdfs"): ("zstd", True),
    ("unbounded", "rocksdb"): ("zstd", False),
    ("stalled-min", "hdfs"): ("lz4", False),
    ("stalled-min", "rocksdb"): False,
    ("healthy", "hdfs"): ("snappy", False),
    ("healthy", "rocksdb"): False,
    ("future-jump", "hdfs"): (None, False),
    ("future-jump", "rocksdb"): ("lz4", True),
    ("restamped", "hdfs"): ("zstd", True),
    ("restamped", "rocksdb"): False,
    ("snapshots", "hdfs"): False,
    ("snapshots", "rocksdb"): False,
}

BATCHES = 12
ROWS = 20


def rows_for(case, c, batch, base):
    """The rows of each source for one batch: lists of dicts."""
    a, b = [], []
    et = base + batch * 5
    if case == "unbounded":
        for i in range(ROWS):
            a.append({"id": f"u{batch}-{i}", "ts": et + i % 5})
        a.append({"id": f"u{batch}-0", "ts": et})  # one source duplicate
    elif case == "stalled-min":
        for i in range(ROWS):
            a.append({"id": f"a{batch}-{i}", "ts": et + i % 5})
        if batch < c["b_until"]:
            for i in range(5):
                b.append({"id": f"b{batch}-{i}", "ts": et + i})
    elif case in ("healthy", "snapshots"):
        for i in range(ROWS):
            a.append({"id": f"h{batch}-{i}", "ts": et + i % 5})
        if batch > 0:
            for i in range(3):  # retries of the previous batch, 2-4 s later
                a.append({"id": f"h{batch - 1}-{i}", "ts": et - 5 + i % 5 + 2})
    elif case == "future-jump":
        for i in range(ROWS):
            a.append({"id": f"f{batch}-{i}", "ts": et + i % 5})
        if batch == c["future_at"]:
            a.append({"id": "skewed-client", "ts": et + 365 * 86400})
    elif case == "restamped":
        for i in range(ROWS):
            a.append({"id": f"r{batch}-{i}", "ts": et + i % 5})
        if batch > 0:
            for i in range(4):  # the same events again, stamped anew
                a.append({"id": f"r{batch - 1}-{i}", "ts": et + 1})
            a.append({"id": f"r{batch - 1}-10", "ts": et - 5 + 10 % 5})  # a true duplicate
    return a, b


def log4j_conf(path, log):
    with open(path, "w") as f:
        f.write(
            "rootLogger.level = warn\n"
            "rootLogger.appenderRef.file.ref = file\n"
            "appender.file.type = File\n"
            "appender.file.name = file\n"
            f"appender.file.fileName = {log}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n"
            # The lines a user turns on to watch a query: progress, the
            # watermark's moves, commits and (re)starts.
            "logger.pr.name = org.apache.spark.sql.execution.streaming.runtime.ProgressReporter\n"
            "logger.pr.level = info\n"
            "logger.wt.name = org.apache.spark.sql.execution.streaming.runtime.WatermarkTracker\n"
            "logger.wt.level = info\n"
            "logger.mbe.name = org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution\n"
            "logger.mbe.level = info\n"
        )


def main():
    out = os.path.abspath(sys.argv[1])
    names = sys.argv[2:] or list(CASES)
    case, store = names[0].rsplit("/", 1) if "/" in names[0] else (names[0], "hdfs")
    run_case(out, case, store)


def run_case(out, case, store):
    from pyspark.sql import SparkSession, functions as F, types as T
    from pyspark.sql.streaming import StreamingQueryListener

    c = CASES[case]
    d = os.path.join(out, f"{case}-{store}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    work = os.path.join(out, ".work", f"{case}-{store}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log4j_conf(os.path.join(work, "log4j2.properties"), os.path.join(d, "driver.log"))
    evlog = EVENTLOG[(case, store)]
    codec, rolling = evlog or (None, False)
    evdir = os.path.join(d, "eventlog")
    if evlog:
        os.makedirs(evdir)
    lj = os.path.join(work, "log4j2.properties")
    b = (
        SparkSession.builder.master("local[1]")
        .appName(f"dedupsim-fixture-{case}-{store}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{lj} -Dlog4j.configurationFile=file:{lj}")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "1")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.numRecentProgressUpdates", "1000")
        .config("spark.sql.streaming.stateStore.providerClass", STORES[store])
        .config("spark.sql.streaming.stateStore.maintenanceInterval", "3600s")
        .config("spark.eventLog.enabled", "true" if evlog else "false")
        .config("spark.eventLog.dir", "file:" + evdir)
        .config("spark.eventLog.compress", "true" if codec else "false")
        .config("spark.eventLog.rolling.enabled", "true" if rolling else "false")
        .config("spark.driver.memory", "512m")
    )
    if codec:
        b = b.config("spark.eventLog.compression.codec", codec)
    if c.get("snapshots"):
        b = (b.config("spark.sql.streaming.stateStore.maintenanceInterval", "2s")
             .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "3"))
    elif store == "rocksdb":
        b = b.config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    spark = b.getOrCreate()

    plog = open(os.path.join(d, "progress.jsonl"), "w")
    events = {"started": 0, "terminated": 0}

    class Listener(StreamingQueryListener):
        def onQueryStarted(self, e):
            events["started"] += 1
            plog.write(json.dumps({"event": "QueryStartedEvent", "id": str(e.id), "runId": str(e.runId), "name": e.name, "timestamp": e.timestamp}) + "\n")
            plog.flush()

        def onQueryProgress(self, e):
            plog.write(e.progress.json + "\n")
            plog.flush()

        def onQueryIdle(self, e):
            plog.write(json.dumps({"event": "QueryIdleEvent", "id": str(e.id), "runId": str(e.runId), "timestamp": e.timestamp}) + "\n")
            plog.flush()

        def onQueryTerminated(self, e):
            plog.write(json.dumps({"event": "QueryTerminatedEvent", "id": str(e.id), "runId": str(e.runId), "exception": e.exception, "errorClassOnException": e.errorClassOnException}) + "\n")
            plog.flush()
            events["terminated"] += 1

    spark.streams.addListener(Listener())

    schema = T.StructType([T.StructField("id", T.StringType()), T.StructField("ts", T.LongType())])
    nsrc = c["sources"]
    srcdirs = [os.path.join(work, f"src{i}") for i in range(nsrc)]
    for s in srcdirs:
        os.makedirs(s)
    ckpt = os.path.join(d, "checkpoint")
    sink_rows = []

    def build():
        dfs = []
        for s in srcdirs:
            df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(s)
            df = df.withColumn("ts", F.timestamp_seconds("ts"))
            if c["watermark"]:
                df = df.withWatermark("ts", c["watermark"])
            dfs.append(df)
        df = dfs[0]
        for o in dfs[1:]:
            df = df.unionByName(o)
        if c["api"] == "dropDuplicatesWithinWatermark":
            return df.dropDuplicatesWithinWatermark(c["keys"])
        return df.dropDuplicates(c["keys"])

    def sink(bdf, bid):
        for r in bdf.collect():
            sink_rows.append({"batchId": bid, "id": r["id"], "ts": r["ts"].timestamp() if r["ts"] else None})

    def start():
        return build().writeStream.foreachBatch(sink).option("checkpointLocation", ckpt).queryName(f"{case}_{store}").start()

    files = [0] * nsrc

    def covered(q):
        commits = [int(n) for n in os.listdir(os.path.join(ckpt, "commits")) if n.isdigit()] if os.path.isdir(os.path.join(ckpt, "commits")) else []
        if not commits:
            return all(f == 0 for f in files)
        try:
            with open(os.path.join(ckpt, "offsets", str(max(commits)))) as f:
                lines = f.read().split("\n")
            for i in range(nsrc):
                if files[i] == 0:
                    continue
                if lines[2 + i] == "-" or json.loads(lines[2 + i])["logOffset"] < files[i] - 1:
                    return False
            return True
        except (FileNotFoundError, IndexError, ValueError, KeyError):
            return False

    base = int(time.time()) - 600
    q = start()
    progress = []
    for batch in range(BATCHES):
        if c.get("restart_at") == batch:
            progress += [json.loads(p.json) for p in q.recentProgress]
            q.stop()
            q = start()
        a, bb = rows_for(case, c, batch, base)
        for i, rows in enumerate([a, bb][:nsrc]):
            if not rows:
                continue
            tmp = os.path.join(work, f".part-{i}-{batch:04d}.json")
            with open(tmp, "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
            os.utime(tmp, (time.time(), time.time() + batch))
            os.rename(tmp, os.path.join(srcdirs[i], f"part-{batch:04d}.json"))
            files[i] += 1
        for _ in range(200):
            if covered(q):
                break
            q.processAllAvailable()
            time.sleep(0.05)
        q.processAllAvailable()
    progress += [json.loads(p.json) for p in q.recentProgress]
    q.stop()
    # The listener bus is asynchronous: the last progress and the
    # terminated event can trail stop() by seconds on a busy machine.
    for _ in range(600):
        if events["terminated"] >= events["started"]:
            break
        time.sleep(0.1)
    plog.close()
    with open(os.path.join(d, "progress.json"), "w") as f:
        json.dump(progress, f, indent=1)
        f.write("\n")
    with open(os.path.join(d, "sink.json"), "w") as f:
        ids = {}
        for r in sink_rows:
            ids[r["id"]] = ids.get(r["id"], 0) + 1
        json.dump({"rows": len(sink_rows), "distinctIds": len(ids), "idsMoreThanOnce": sum(1 for v in ids.values() if v > 1)}, f, indent=1, sort_keys=True)
        f.write("\n")
    state_report(spark, ckpt, c, d)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


def state_report(spark, ckpt, c, d):
    """What Spark's own readers say: per partition the keys and the range of
    the event time (dedupe) or of expiresAtMicros (dedupeWithinWatermark),
    at the last committed batch."""
    from pyspark.sql import functions as F

    commits = sorted(int(n) for n in os.listdir(os.path.join(ckpt, "commits")) if n.isdigit())
    last = commits[-1]
    with open(os.path.join(ckpt, "commits", str(last))) as f:
        wm = json.loads(f.read().split("\n")[1])["nextBatchWatermarkMs"]
    st = spark.read.format("statestore").load(ckpt)
    if c["api"] == "dropDuplicatesWithinWatermark":
        col = F.col("value.expiresAtMicros")
    elif "ts" in c["keys"]:
        col = F.unix_micros(F.col("key.ts"))
    else:
        col = F.lit(None).cast("long")
    parts = {}
    for r in st.groupBy("partition_id").agg(F.count("*").alias("n"), F.min(col).alias("lo"), F.max(col).alias("hi")).collect():
        parts[str(r["partition_id"])] = {"keys": r["n"], "minUs": r["lo"], "maxUs": r["hi"]}
    meta = [r.asDict() for r in spark.read.format("state-metadata").load(ckpt).collect()]
    with open(os.path.join(d, "spark-state.json"), "w") as f:
        json.dump({"lastCommittedBatch": last, "nextBatchWatermarkMs": wm, "partitions": parts, "stateMetadata": meta,
                   "sparkVersion": spark.version}, f, indent=1, sort_keys=True, default=str)
        f.write("\n")


if __name__ == "__main__":
    main()
