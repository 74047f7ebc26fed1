#!/usr/bin/env python3
"""Drive real Apache Spark (pyspark 3.5.x / 4.x) through dedupsim's exec traces.

One long-lived SparkSession (local[2], UI off, quiet logs) runs many traces.
The requests arrive as JSON Lines on standard input (or --requests FILE):

    {"query": "q.json", "steps": "s.jsonl", "out": "out.jsonl"}
    {"query": ..., "steps": ..., "out": ..., "checkpoint": "DIR"}   (keep a checkpoint across requests)

`query` and `steps` are the runner's form of an exec query and steps file,
written by the Go package conform (conform/spark.go: SparkQuery, SparkSteps),
so that the exec files are parsed in one place, dedupsim's own parser. The
form is documented in docs/conformance.md ("The runner's input").

For each request the runner writes `out` (atomically) in the exec output
format (docs/exec-format.md, OUT.jsonl): one line per batch execution,
{"batchId": N, "rows": [ROW, ...], "progress": {...}} with "replay": true
and "crashed": POINT as exec writes them, the rows being the raw JSON text
each row had in the steps file. A failed execution (crash at or after the
sink write) has no "progress": Spark reports none for a failed batch. A
trace that cannot be expressed in Spark gets one line
{"unsupported": "why"}; a query Spark refuses or a run that fails ends with
{"error": "message", "errorClass": "CLASS"}. One status line per request
goes to standard output: {"out": ..., "status": "ok|unsupported|error",
"seconds": S, "jvmCpuSeconds": C, "profile": {...}} (the profile: wall
seconds of set-up, query start/stop and batches, and Spark's durationMs
summed over the trace's batches).

How a trace is driven (shared/spec/spark-oracle.md):
  * every source is a folder read by the text file source with
    maxFilesPerTrigger=1; each steps line becomes one file per named source,
    written elsewhere and renamed in (atomic appearance). The raw line is
    kept as a hidden column and parsed with from_json under the trace's
    schema (the query's `schema`, else Spark's own JSON inference over every
    row of the trace), so the sink receives the row's original text;
  * the event-time column becomes a derived timestamp column: numbers are
    seconds (read as decimal(38,12), truncated to the microsecond), strings
    go through to_timestamp; a TIMESTAMP column of a given schema is used as
    Spark's JSON reader parsed it;
  * one query with the default trigger runs until a restart line; after each
    line processAllAvailable() is called until the commit log covers the new
    file, then once more (no-data batches);
  * restart = stop + a new query on the same checkpoint;
  * crash points are query failures raised inside foreachBatch:
    after-offsets-write raises before reading; after-state-commit collects
    (the state commits) and raises; after-sink-write collects, records and
    raises; after-commit lets the batch commit, then fails the next planned
    batch before it reads and deletes its offsets file, or stops the query
    if no batch was due;
  * shuffle partitions, no-data batches, the watermark policy and
    spark.sql.caseSensitive are session
    confs set per trace; each worker thread has its own session
    (spark.newSession()) and runs traces concurrently with the others.
"""

import argparse
import json
import os
import queue
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
import uuid

RAW = "__dedupsim_raw"
ET = "__dedupsim_event_time"
CRASH_POINTS = ("after-offsets-write", "after-state-commit", "after-sink-write", "after-commit")
APIS = ("dropDuplicates", "dropDuplicatesWithinWatermark", "batchDropDuplicates")


class Unsupported(Exception):
    """The trace cannot be expressed in Spark this way."""


class BadRequest(Exception):
    """The request or its files are malformed."""


class Crash(Exception):
    """A crash the runner raised on purpose inside foreachBatch."""


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    dfd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


# ---------------------------------------------------------------------------
# Input


def load_query(path):
    with open(path, encoding="utf-8") as f:
        q = json.load(f)
    if not isinstance(q, dict):
        raise BadRequest(f"{path}: want a JSON object")
    known = {"api", "keys", "sources", "shufflePartitions", "watermarkPolicy", "noDataBatches", "sink", "schema", "name",
             "stateStore", "dropFutureEvents", "caseSensitive"} | DELTA_QUERY_FIELDS
    for k in q:
        if k not in known:
            raise BadRequest(f"{path}: unknown field {k!r}")
    if q.get("api") not in APIS:
        raise BadRequest(f"{path}: api: want one of {', '.join(APIS)}, got {q.get('api')!r}")
    if not isinstance(q.get("keys", []), list) or not all(isinstance(k, str) for k in q.get("keys", [])):
        raise BadRequest(f"{path}: keys: want a list of column names")
    srcs = q.get("sources")
    if not isinstance(srcs, list) or not srcs:
        raise BadRequest(f"{path}: sources: want a non-empty list")
    for i, s in enumerate(srcs):
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            raise BadRequest(f"{path}: sources[{i}]: want {{\"name\": ..., \"watermark\": ...}}")
        wm = s.get("watermark")
        if wm is not None:
            if not isinstance(wm.get("column"), str) or not isinstance(wm.get("delayMs"), int) or wm["delayMs"] < 0:
                raise BadRequest(f"{path}: sources[{i}].watermark: want {{\"column\": NAME, \"delayMs\": N >= 0}}")
    n = q.get("shufflePartitions", 4)
    if not isinstance(n, int) or not 1 <= n <= 10000:
        raise BadRequest(f"{path}: shufflePartitions: want a whole number in [1, 10000]")
    if q.get("watermarkPolicy", "min") not in ("min", "max"):
        raise BadRequest(f"{path}: watermarkPolicy: want min or max")
    schema = q.get("schema")
    if schema is not None and not isinstance(schema, (str, list)):
        raise BadRequest(f"{path}: schema: want a DDL string or a list")
    return q


def load_steps(path, source_names):
    steps = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                st = json.loads(line)
            except ValueError as e:
                raise BadRequest(f"{path}:{lineno}: {e}")
            if not isinstance(st, dict):
                raise BadRequest(f"{path}:{lineno}: want a JSON object")
            st["line"] = lineno
            if "rows" in st:
                rows = st["rows"]
                if not isinstance(rows, dict) or not all(k in source_names for k in rows):
                    raise BadRequest(f"{path}:{lineno}: rows: want {{SOURCE: [ROW TEXT, ...]}} over the query's sources")
                for name, texts in rows.items():
                    if not isinstance(texts, list) or not all(isinstance(t, str) and "\n" not in t and "\r" not in t for t in texts):
                        raise BadRequest(f"{path}:{lineno}: rows.{name}: want a list of one-line JSON texts")
            elif "crash" in st:
                if st["crash"] not in CRASH_POINTS:
                    raise BadRequest(f"{path}:{lineno}: crash: want one of {', '.join(CRASH_POINTS)}")
            elif not (st.get("restart") is True or st.get("tick") is True):
                raise BadRequest(f"{path}:{lineno}: want rows, restart, crash or tick")
            steps.append(st)
    return steps


# ---------------------------------------------------------------------------
# Spark


def ddl_of(schema):
    """The query's schema as a DDL string: a string as it is, or a list of
    "name TYPE" strings, {"name": TYPE} maps or {"name": N, "type": T} maps."""
    if isinstance(schema, str):
        return schema
    parts = []
    for item in schema:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict) and set(item) >= {"name", "type"}:
            parts.append(f"`{item['name']}` {item['type']}")
        elif isinstance(item, dict) and len(item) == 1:
            (name, typ), = item.items()
            parts.append(f"`{name}` {typ}")
        else:
            raise BadRequest(f"schema: cannot read list item {item!r}")
    return ", ".join(parts)


class Session:
    """One worker's SparkSession, with the per-trace confs."""

    def __init__(self, spark, work):
        self.spark = spark
        self.work = work


def make_spark(args, work):
    from pyspark.sql import SparkSession

    log4j = os.path.join(work, "log4j2.properties")
    with open(log4j, "w") as f:
        f.write(
            "rootLogger.level = error\n"
            "rootLogger.appenderRef.file.ref = file\n"
            "appender.file.type = File\n"
            "appender.file.name = file\n"
            f"appender.file.fileName = {os.path.join(work, 'spark.log')}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n\n"
        )
    b = (
        SparkSession.builder.master(args.master)
        .appName("dedupsim-conform")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j} -Dlog4j.configurationFile=file:{log4j} {args.java_options}")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.streaming.noDataProgressEventInterval", "3600000")
        .config("spark.sql.streaming.pollingDelay", f"{args.polling_ms}ms")
        .config("spark.sql.streaming.numRecentProgressUpdates", "10000")
        .config("spark.sql.streaming.fileSource.cleaner.numThreads", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.sql.ui.retainedExecutions", "1")
        .config("spark.sql.streaming.ui.enabled", "false")
        .config("spark.locality.wait", "0")
        # Speed only, no change of semantics: no checksum files beside the
        # checkpoint files (Hadoop's and Spark 4.1's own), no snapshot-lag
        # reports to the state store coordinator.
        .config("spark.hadoop.fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        .config("spark.hadoop.fs.AbstractFileSystem.file.impl", "org.apache.hadoop.fs.local.RawLocalFs")
        .config("spark.sql.streaming.checkpoint.fileChecksum.enabled", "false")
        .config("spark.sql.streaming.stateStore.coordinatorReportSnapshotUploadLag", "false")
        # Spark 4.2 and 4.3: forceSnapshotUploadOnLag defaults to true and
        # may only be true with the lag reports above on; otherwise every
        # state store task fails (IllegalArgumentException from
        # SQLConf.stateStoreForceSnapshotUploadOnLag, wrapped in
        # FOREACH_BATCH_USER_FUNCTION_ERROR by the runner's foreachBatch).
        # Earlier Spark lines ignore the unknown conf.
        .config("spark.sql.streaming.stateStore.forceSnapshotUploadOnLag", "false")
    )
    b = delta_builder(b, args)
    for kv in args.conf:
        k, sep, v = kv.partition("=")
        if not sep:
            raise SystemExit(f"runner: --conf {kv!r}: want KEY=VALUE")
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# Spark's checkpoint files through the FileSystem API instead of
# FileContext: on the local file system without Hadoop's native library,
# every FileContext rename runs two `readlink` processes (RawLocalFileSystem
# .getFileLinkStatus shells out), about 30 process starts per batch; the
# FileSystem rename is a plain java.io rename. Speed only: the same files,
# each written to a temporary file and renamed into place. The class moved
# package in 4.1.
CHECKPOINT_FILE_MANAGERS = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager",
)


def session_confs(spark):
    """The speed-only SQL confs of one worker's session."""
    for name in CHECKPOINT_FILE_MANAGERS:
        try:
            spark._jvm.java.lang.Class.forName(name)
        except Exception:
            continue
        spark.conf.set("spark.sql.streaming.checkpointFileManagerClass", name)
        return


def infer_ddl(spark, texts, tmpdir):
    """Spark's own JSON inference over every row of the trace. The rows go
    through a file, read in the JVM: an RDD of Python strings would start
    Python workers and pickle every row (seconds per trace on two cores)."""
    if not texts:
        return None
    path = os.path.join(tmpdir, "infer.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    try:
        return spark.read.json(path).schema
    finally:
        os.unlink(path)


def activate(spark):
    """Makes spark the JVM's active session on this thread: the analyzer
    reads its confs (spark.sql.caseSensitive among them) from the active
    session, not from the DataFrame's (SQLConf.get)."""
    from pyspark.sql import SparkSession

    get = getattr(SparkSession, "_get_j_spark_session_class", None)
    cls = get(spark._jvm) if get else spark._jvm.SparkSession
    cls.setActiveSession(spark._jsparkSession)


def version_tuple(v):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


# ---------------------------------------------------------------------------
# Delta Lake: the table, merge and append sinks (docs/conformance.md, "Delta
# Lake"). The sink kinds are dedupsim's models of foreachBatch code that
# writes a Delta table (engine/sink, spark-semantics.md §16); here each is
# that code, run on a real Delta table:
#   table   df.write.format("delta").mode("append")
#             .option("txnAppId", A).option("txnVersion", batchId)
#   merge   MERGE INTO t USING s ON t.k = s.k [AND t.et >= now - lookback]
#             WHEN NOT MATCHED THEN INSERT *
#   append  df.write.format("delta").mode("append")
# The table's columns: the raw row text (RAW, what is compared), the row's
# columns as read (when Delta takes their names), the merge's match columns
# (__dedupsim_k0, ...) and the event time (ET). A table lives for one
# request, as exec's in-memory sinks live for one invocation.

DELTA_QUERY_FIELDS = {"sinkKeys", "lookbackMs", "appId", "generateAppId"}
TABLE_KINDS = ("table", "merge", "append")
_delta = {"enabled": False}


def delta_builder(b, args):
    """The Delta confs of the session builder, when --delta-jars is given."""
    if not args.delta_jars:
        return b
    jars = [j for j in args.delta_jars.split(",") if j]
    for j in jars:
        if not os.path.isfile(j):
            raise SystemExit(f"runner: --delta-jars: {j}: no such file")
    _delta["enabled"] = True
    return (
        b.config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        # Speed only: one partition for the log's state (default 50) and no
        # checksum file per commit.
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .config("spark.databricks.delta.writeChecksumFile.enabled", "false")
    )


# Delta refuses these characters in column names without column mapping.
_DELTA_BAD_NAME = re.compile(r"[ ,;{}()\n\t=]")


def delta_names_ok(dtype):
    """Whether every column name, nested ones too, is one Delta takes
    (no ` ,;{}()\\n\\t=`, no two alike ignoring case)."""
    from pyspark.sql.types import StructType, ArrayType

    if isinstance(dtype, ArrayType):
        return delta_names_ok(dtype.elementType)
    if not isinstance(dtype, StructType):
        return True
    low = set()
    for f in dtype.fields:
        if _DELTA_BAD_NAME.search(f.name) or f.name.lower() in low:
            return False
        low.add(f.name.lower())
        if not delta_names_ok(f.dataType):
            return False
    return True


def render_table(table):
    text = '{"table":[' + ",".join(table["rows"]) + "]"
    if table.get("txn") is not None:
        text += ',"txn":' + json.dumps(table["txn"], separators=(",", ":"))
    return text + "}\n"


def delta_txns(path):
    """The txn actions of a Delta table's log, in commit order: every JSON
    commit file, whose names are the versions."""
    log = os.path.join(path, "_delta_log")
    try:
        names = sorted(n for n in os.listdir(log) if re.fullmatch(r"\d{20}\.json", n))
    except FileNotFoundError:
        return []
    out = []
    for n in names:
        with open(os.path.join(log, n), encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                a = json.loads(line)
                if "txn" in a:
                    out.append({"appId": a["txn"]["appId"], "version": a["txn"]["version"]})
    return out


class DeltaSink:
    """The table sinks of a Trace (a mixin: the Trace's state is its own)."""

    def table_init(self):
        self.table_kind = None
        self.batch_now = {}  # batch id -> exec's clock (ms) when it was planned
        self.now_ms = 0
        self.start_id = None
        self.table = None

    def table_check(self):
        kind = self.q.get("sink", "foreachBatch")
        if kind == "foreachBatch":
            return
        if kind not in TABLE_KINDS:
            raise BadRequest(f"sink: want foreachBatch, {', '.join(TABLE_KINDS)}, got {kind!r}")
        if not _delta["enabled"]:
            raise Unsupported(f"sink {kind} writes a Delta table: start the runner with --delta-jars (conform/sparkrunner/delta-fetch.sh)")
        self.table_kind = kind

    def table_start(self):
        if not self.table_kind:
            return
        self.table_path = os.path.join(self.base, "delta-table")
        # exec's sinks live for one invocation: so does the table.
        shutil.rmtree(self.table_path, ignore_errors=True)
        self.table_view = f"__dedupsim_batch_{uuid.uuid4().hex}"
        self.merge_keys = self.resolve_merge_keys() if self.table_kind == "merge" else []
        self.table_data = delta_names_ok(self.row_schema)

    def resolve_merge_keys(self):
        """The merge's match columns as indexes into the row's columns, or
        ET for the event-time column (exec matches it by its time)."""
        written = list(self.q.get("sinkKeys") or self.q.get("keys") or [])
        if not written:
            written = list(self.data_cols)
        out = []
        for k in written:
            if self.et_col is not None and self.resolves(self.et_col, k):
                out.append(ET)
            else:
                out.append(self.data_cols.index(self.resolve_column(k, self.row_schema)))
        return out

    def table_frame(self, batch_id, rows):
        """The batch as the table's rows: the raw texts re-read in the JVM
        under the trace's schema (the sink's DataFrame is not executed
        again: that would run the stateful plan twice)."""
        from pyspark.sql import functions as F

        path = os.path.join(self.tmpdir, f"batch-{batch_id}-{uuid.uuid4().hex}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(r + "\n" for r in rows))
        self.table_files.append(path)
        df = self.spark.read.text(path).select(F.col("value").alias(RAW))
        df = df.select(F.col(RAW), F.from_json(F.col(RAW), self.row_schema).alias("__dedupsim_d"))
        cols = [F.col(RAW), F.col("__dedupsim_d.*")]
        if self.et_col is not None:
            cols.append(self.event_time_expr(self.row_schema, self.et_col).alias(ET))
        df = df.select(*cols)
        # Positional names first: two columns may differ only in case.
        pos = [f"__dedupsim_c{i}" for i in range(len(self.data_cols))]
        df = df.toDF(RAW, *pos, *([ET] if self.et_col is not None else []))
        out = [F.col(RAW)]
        if self.table_data:
            out += [F.col(p).alias(c) for p, c in zip(pos, self.data_cols)]
        for i, k in enumerate(self.merge_keys):
            out.append(F.col(ET if k == ET else pos[k]).alias(f"__dedupsim_k{i}"))
        if self.et_col is not None:
            out.append(F.col(ET))
        return df.select(*out)

    def app_id(self):
        q = self.q
        if q.get("appId"):
            return q["appId"]
        if q.get("generateAppId"):
            return self.start_id
        # The query id, in the checkpoint's metadata: stable for the life
        # of the checkpoint, as exec's default.
        with open(os.path.join(self.ckpt, "metadata"), encoding="utf-8") as f:
            return json.loads(f.readline())["id"]

    def table_write(self, batch_id, rows):
        self.table_files = []
        activate(self.spark)
        try:
            df = self.table_frame(batch_id, rows)
            w = df.write.format("delta").mode("append")
            if self.table_kind == "table":
                w.option("txnAppId", self.app_id()).option("txnVersion", batch_id).save(self.table_path)
            elif self.table_kind == "append" or not os.path.isdir(os.path.join(self.table_path, "_delta_log")):
                # A MERGE into an empty table inserts every source row:
                # the first batch creates the table.
                w.save(self.table_path)
            else:
                self.merge(batch_id, df)
        finally:
            for p in self.table_files:
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass

    def merge(self, batch_id, df):
        cond = [f"t.`__dedupsim_k{i}` = s.`__dedupsim_k{i}`" for i in range(len(self.merge_keys))]
        lb = self.q.get("lookbackMs")
        if lb is not None:
            # exec's "now" is the batch's clock: the largest event time
            # appended when the batch was planned (exec-format.md), for
            # Spark's current_timestamp().
            cutoff = (self.batch_now.get(batch_id, self.now_ms) - lb) * 1000
            cond.append(f"t.`{ET}` >= timestamp_micros({cutoff}L)")
        df.createOrReplaceTempView(self.table_view)
        try:
            self.spark.sql(f"MERGE INTO delta.`{self.table_path}` t USING `{self.table_view}` s ON "
                           + " AND ".join(cond) + " WHEN NOT MATCHED THEN INSERT *")
        finally:
            self.spark.catalog.dropTempView(self.table_view)

    def table_result(self):
        """The table after the run (Spark's own read) and, for the table
        sink, the txn actions of its log."""
        if not self.table_kind:
            return None
        rows = []
        if os.path.isdir(os.path.join(self.table_path, "_delta_log")):
            activate(self.spark)
            rows = [r[0] for r in self.spark.read.format("delta").load(self.table_path).select(RAW).collect()]
        out = {"rows": rows}
        if self.table_kind == "table":
            out["txn"] = delta_txns(self.table_path)
        return out


class Trace(DeltaSink):
    """One request: a query and its steps, driven on Spark."""

    def __init__(self, sess, req, keep):
        self.sess = sess
        self.spark = sess.spark
        self.req = req
        self.keep = keep  # a kept checkpoint dir (reused across requests) or None
        self.records = []  # the output lines, as dicts (rows as raw text)
        self.batch_error = None  # the Java cause chain of a failure inside a batch
        self.table_init()
        self.lock = threading.Lock()
        # Wall seconds per phase, reported on the status line (where a
        # run's time goes: docs/conformance.md, "Speed").
        # Phases are exclusive: a restart inside a trigger (after a crash)
        # counts as startStop, not as batches.
        self.prof = {"setup": 0.0, "startStop": 0.0, "batches": 0.0}
        self._inner = []

    def timed(self, phase, fn, *args):
        t0 = time.time()
        self._inner.append(0.0)
        try:
            return fn(*args)
        finally:
            el = time.time() - t0
            self.prof[phase] += el - self._inner.pop()
            if self._inner:
                self._inner[-1] += el

    def profile(self):
        """The phases' wall seconds, and Spark's own durationMs summed over
        the batches it reported (queryPlanning, addBatch, walCommit, ...)."""
        out = {k: round(v, 3) for k, v in self.prof.items()}
        dur = {}
        n = 0
        for r in self.records:
            p = r.get("progress")
            if not p:
                continue
            n += 1
            for k, v in p.get("durationMs", {}).items():
                dur[k] = dur.get(k, 0) + v
        out["batchesReported"] = n
        out["sparkDurationMs"] = dur
        return out

    # -- setup -------------------------------------------------------------

    def prepare(self):
        q = self.q = load_query(self.req["query"])
        names = [s["name"] for s in q["sources"]]
        self.steps = load_steps(self.req["steps"], set(names))
        self.check_expressible()
        if self.keep:
            base = self.keep
            os.makedirs(base, exist_ok=True)
        else:
            base = tempfile.mkdtemp(prefix="trace-", dir=self.sess.work)
        self.base = base
        self.ckpt = os.path.join(base, "checkpoint")
        self.tmpdir = os.path.join(base, "tmp")
        os.makedirs(self.tmpdir, exist_ok=True)
        # Every steps line is one file in one folder, renamed in: each line
        # of the file is "<source index>\t<row text>". All sources read that
        # one file source and split it by the index, each branch with its own
        # watermark, then union. Spark lists several sources one after the
        # other, so with a folder per source a file could land between two
        # listings and one steps line become two batches; with one folder it
        # appears in one batch or not at all.
        self.src_dir = os.path.join(base, "source")
        os.makedirs(self.src_dir, exist_ok=True)
        self.src_index = {s["name"]: i for i, s in enumerate(q["sources"])}
        # Files already in a kept folder are history the checkpoint has seen:
        # the steps file repeats it (exec: the steps file is the source's
        # whole history), so that many rows lines are skipped.
        self.skip = len([f for f in os.listdir(self.src_dir) if f.startswith("f-")])
        self.files = self.skip

    def check_expressible(self):
        q = self.q
        self.table_check()
        if q.get("dropFutureEvents"):
            raise Unsupported("drop_future_events compares event time with processing time, which exec takes from the event times and Spark from its clock")
        for st in self.steps:
            if st.get("once"):
                raise Unsupported(f"line {st['line']}: a once step is one processing-time trigger; the runner drives Spark with processAllAvailable and has no control of its trigger clock")
            if st.get("tick"):
                raise Unsupported(f"line {st['line']}: a tick step is one processing-time trigger; the runner has no control of Spark's trigger clock")
        if len(q["sources"]) > 1:
            self.check_cross_source_copies()
        wm = [s for s in q["sources"] if s.get("watermark")]
        cols = {s["watermark"]["column"] for s in wm}
        if len(cols) > 1:
            raise Unsupported("sources watermark different columns; the runner derives one event-time column")

    def key_of(self, obj):
        """An approximation of the dedup key, for spotting copies only:
        numbers compare as numbers, the event-time column as its value."""
        keys = self.q.get("keys") or sorted(obj)
        low = {f.lower(): v for f, v in obj.items()}
        return json.dumps([obj.get(k, low.get(k.lower())) for k in keys], sort_keys=True)

    def check_cross_source_copies(self):
        # Copies of one key arriving in one batch from two sources: Spark's
        # order across the shuffle inputs is not deterministic, so which copy
        # is emitted is not either.
        for st in self.steps:
            rows = st.get("rows")
            if not rows:
                continue
            seen = {}
            for name, texts in rows.items():
                for t in texts:
                    try:
                        obj = json.loads(t)
                    except ValueError:
                        continue
                    k = self.key_of(obj) if isinstance(obj, dict) else t
                    prev = seen.get(k)
                    if prev is not None and prev[0] != name and prev[1] != t:
                        raise Unsupported(f"line {st['line']}: copies of one key from two sources in one batch ({prev[1]} from {prev[0]}, {t} from {name}); Spark's order across shuffle inputs is not deterministic")
                    seen.setdefault(k, (name, t))

    def schema(self):
        from pyspark.sql.types import StructType, StructField, StringType

        q = self.q
        if q.get("schema") is not None:
            return StructType.fromDDL(ddl_of(q["schema"])) if hasattr(StructType, "fromDDL") else self.spark.createDataFrame([], ddl_of(q["schema"])).schema
        texts = [t for st in self.steps for texts in st.get("rows", {}).values() for t in texts]
        inferred = infer_ddl(self.spark, texts, self.tmpdir)
        if inferred is None or not inferred.fields:
            cols = list(q.get("keys") or [])
            for s in q["sources"]:
                if s.get("watermark"):
                    cols.append(s["watermark"]["column"])
            return StructType([StructField(c, StringType(), True) for c in dict.fromkeys(cols)])
        if "_corrupt_record" in inferred.fieldNames():
            raise BadRequest("a row is not valid JSON for Spark's reader (_corrupt_record)")
        return inferred

    def build_df(self):
        from pyspark.sql import functions as F
        from pyspark.sql.types import TimestampType, StringType, DecimalType, StructType, StructField

        q = self.q
        schema = self.schema()
        self.row_schema = schema
        self.data_cols = schema.fieldNames()
        et_written = None
        for s in q["sources"]:
            if s.get("watermark"):
                et_written = s["watermark"]["column"]
        # The watermark column as Spark's analyzer resolves it (the query
        # may write it in another case); Spark's own error when it does not.
        et_col = self.resolve_column(et_written, schema) if et_written is not None else None
        self.et_col = et_col
        frames = []
        lines = (
            self.spark.readStream.format("text")
            .option("maxFilesPerTrigger", 1)
            .load(self.src_dir)
        )
        lines = lines.select(F.expr("substring(value, 1, instr(value, '\t') - 1)").alias("__dedupsim_src"),
                             F.expr("substring(value, instr(value, '\t') + 1)").alias("value"))
        for i, s in enumerate(q["sources"]):
            src = lines.where(F.col("__dedupsim_src") == str(i)).select("value")
            # The raw line is renamed first, so a data column named value
            # does not shadow it.
            df = src.select(F.col("value").alias(RAW))
            df = df.select(F.col(RAW), F.from_json(F.col(RAW), schema).alias("__dedupsim_d"))
            # The struct's fields by star expansion, not by name: getField
            # resolves a name with the resolver, and under
            # caseSensitive=false id matches both id and İd
            # (AMBIGUOUS_REFERENCE_TO_FIELDS), where a reader's columns
            # are simply there.
            cols = [F.col(RAW), F.col("__dedupsim_d.*")]
            if et_col is not None:
                cols.append(self.event_time_expr(schema, et_col).alias(ET))
            df = df.select(*cols)
            wm = s.get("watermark")
            if wm and q.get("schema") is not None:
                # withWatermark on the declared column itself, for Spark's
                # analysis checks (EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE); the
                # query runs on the derived column below.
                df.withWatermark(wm["column"], f"{wm['delayMs']} milliseconds")
            if wm:
                df = df.withWatermark(ET, f"{wm['delayMs']} milliseconds")
            frames.append(df)
        df = frames[0]
        for other in frames[1:]:
            df = df.union(other)
        self.keys = self.key_columns()
        if q["api"] == "dropDuplicates":
            df = df.dropDuplicates(self.keys)
        elif q["api"] == "dropDuplicatesWithinWatermark":
            df = df.dropDuplicatesWithinWatermark(self.keys)
        return df

    def event_time_expr(self, schema, col):
        from pyspark.sql import functions as F
        from pyspark.sql.types import TimestampType, StructType, StructField, StringType, DecimalType

        typ = schema[col].dataType if col in schema.fieldNames() else None
        if self.q.get("schema") is not None and isinstance(typ, TimestampType):
            return F.col("__dedupsim_d").getField(col)
        # exec's event time: a number is seconds since the epoch, read exactly
        # (decimal) and truncated to the microsecond; a string is a timestamp.
        num = F.from_json(F.col(RAW), StructType([StructField(col, DecimalType(38, 12), True)])).getField(col)
        txt = F.from_json(F.col(RAW), StructType([StructField(col, StringType(), True)])).getField(col)
        micros = (num * F.lit(1000000)).cast("long")
        return F.when(num.isNotNull(), F.timestamp_micros(micros)).otherwise(F.to_timestamp(txt))

    def resolves(self, name, written):
        """Spark's resolver under the trace's confs (equalsIgnoreCase unless
        spark.sql.caseSensitive)."""
        return bool(self.spark._jsparkSession.sessionState().analyzer().resolver().apply(name, written))

    def resolve_column(self, written, schema):
        """The column the analyzer resolves a name to (AttributeSeq: the
        names that lower-case alike, kept when the resolver matches); for
        none or several, Spark's own error from resolving it."""
        cands = [c for c in self.data_cols if c.lower() == written.lower() and self.resolves(c, written)]
        if len(cands) == 1:
            return cands[0]
        self.spark.createDataFrame([], schema).select(written)
        raise BadRequest(f"column {written!r}: {len(cands)} columns match, and Spark resolved it")

    def key_columns(self):
        keys = list(self.q.get("keys") or [])
        if not keys:
            keys = list(self.data_cols)
        out = []
        for k in keys:
            c = ET if (self.et_col is not None and self.resolves(self.et_col, k)) else k
            if c not in out:
                out.append(c)
        return out

    # -- driving -----------------------------------------------------------

    def conf(self):
        s = self.spark
        q = self.q
        s.conf.set("spark.sql.shuffle.partitions", str(q.get("shufflePartitions", 4)))
        s.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "true" if q.get("noDataBatches", True) else "false")
        s.conf.set("spark.sql.streaming.multipleWatermarkPolicy", q.get("watermarkPolicy", "min"))
        s.conf.set("spark.sql.caseSensitive", "true" if q.get("caseSensitive") else "false")
        activate(s)
        # exec's pebble store stands for Spark's RocksDB provider; results
        # must not depend on the store (spark-semantics.md §8.5).
        if q.get("stateStore") == "pebble":
            s.conf.set("spark.sql.streaming.stateStore.providerClass",
                       "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        else:
            s.conf.unset("spark.sql.streaming.stateStore.providerClass")

    def start_query(self):
        self.timed("startStop", self._start_query)

    def stop_query(self):
        self.timed("startStop", self.query.stop)

    def _start_query(self):
        # A batch planned by an earlier run and not committed is re-run
        # first: that execution is a replay (exec's "replay": true).
        offs, commits = self.log_ids("offsets"), self.log_ids("commits")
        self.pending = max(offs) if offs and max(offs) not in commits else None
        self.start_id = str(uuid.uuid4())  # a generated txnAppId changes at every start
        w = self.df.writeStream.foreachBatch(self.sink).option("checkpointLocation", self.ckpt)
        if self.q.get("name"):
            w = w.queryName(self.q["name"] + "-" + os.path.basename(self.base))
        self.query = w.start()

    def log_ids(self, kind):
        d = os.path.join(self.ckpt, kind)
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            return []
        return [int(n) for n in names if n.isdigit()]

    def drop_uncommitted_after(self, n):
        """after-commit: the process died before planning batch n+1, so no
        offsets file after n may survive."""
        d = os.path.join(self.ckpt, "offsets")
        commits = set(self.log_ids("commits"))
        for i in self.log_ids("offsets"):
            if i > n and i not in commits:
                for name in (str(i), f".{i}.crc"):
                    try:
                        os.unlink(os.path.join(d, name))
                    except FileNotFoundError:
                        pass

    def sink(self, df, batch_id):
        # Runs on a py4j callback thread for every batch, no-data ones too.
        with self.lock:
            self.batch_now.setdefault(batch_id, self.now_ms)
            replay = self.pending is not None and batch_id == self.pending
            if replay:
                self.pending = None
            if self.after_commit_of is not None:
                # The batch after an after-commit crash: it must never have
                # been planned.
                self.doomed = batch_id
                self.batch_now.pop(batch_id, None)  # planned again later, by a later clock
                self.drop_uncommitted_after(self.after_commit_of)
                raise Crash("after-commit")
            fire = None
            if self.armed is not None and (self.armed_batch is None or self.armed_batch == batch_id):
                # offsets/N is not rewritten for a re-run, so a re-run does not
                # pass after-offsets-write.
                if not (self.armed == "after-offsets-write" and replay):
                    fire, self.armed, self.armed_batch = self.armed, None, None
        if fire == "after-offsets-write":
            self.crashed = fire
            raise Crash(fire)
        if self.q["api"] == "batchDropDuplicates":
            df = self.batch_dedup(df)
        try:
            rows = [r[0] for r in df.select(RAW).collect()]
        except Exception as e:
            # Spark failed inside the batch (a task): the Python exception
            # that reaches Spark, and so the query's error, carries the
            # JVM's outermost message only; keep the whole Java cause chain.
            self.batch_error = java_chain(e)
            raise
        if fire == "after-state-commit":
            self.crashed = fire
            raise Crash(fire)
        if self.table_kind:
            self.table_write(batch_id, rows)
        rec = {"batchId": batch_id, "rows": rows}
        if replay:
            rec["replay"] = True
        if fire in ("after-sink-write", "after-commit"):
            rec["crashed"] = fire
        with self.lock:
            self.records.append(rec)
            self.executed.append(rec)
        if fire == "after-sink-write":
            self.crashed = fire
            raise Crash(fire)
        if fire == "after-commit":
            self.after_commit_of = batch_id

    def batch_dedup(self, df):
        """dropDuplicates on the micro-batch, the user's foreachBatch code.
        Spark's refusal of it (an AnalysisException, e.g. a map key:
        UNSUPPORTED_FEATURE.SET_OPERATION_ON_MAP_TYPE) is the query's error:
        it is kept here, because the query fails with it wrapped in
        FOREACH_BATCH_USER_FUNCTION_ERROR."""
        activate(self.spark)
        try:
            return df.dropDuplicates(self.keys)
        except Exception as e:
            self.user_error = e
            raise

    def progress_since(self):
        """Attach Spark's progress to the executions that completed, waiting
        for it: progress is reported just after the commit, so it may trail
        processAllAvailable by a moment."""
        want = [r for r in self.executed if r.get("crashed") != "after-sink-write" and "progress" not in r]
        if not want:
            return
        deadline = time.time() + 30
        while True:
            jprog = self.query._jsq.recentProgress()
            got = {}
            for i in range(self.seen_progress, len(jprog)):
                p = json.loads(jprog[i].json())
                k = len(self.q["sources"])
                if k > 1:
                    # The k sources are k branches over one file source: each
                    # branch's scan reads the whole file and Spark counts the
                    # rows once per scan. The rows that arrived are 1/k of that.
                    p["numInputRows"] = p.get("numInputRows", 0) // k
                    for sp in p.get("sources", []):
                        sp["numInputRows"] = sp.get("numInputRows", 0) // k
                if "addBatch" in p.get("durationMs", {}):
                    got.setdefault(p["batchId"], []).append((i, p))
            ok = True
            used = []
            for r in want:
                lst = got.get(r["batchId"])
                if not lst:
                    ok = False
                    break
                i, p = lst.pop(0)
                r["_p"] = p
                used.append(i)
            if ok:
                for r in want:
                    r["progress"] = r.pop("_p")
                self.seen_progress = max(used) + 1
                return
            for r in want:
                r.pop("_p", None)
            if time.time() > deadline:
                raise RuntimeError(f"no progress reported for batch(es) {[r['batchId'] for r in want]}")
            time.sleep(0.005)

    def covered(self):
        """The commit log covers every file written so far: the latest
        committed batch's offset reaches the last file (the file source
        numbers its log entries from 0, one per file here)."""
        if self.files == 0:
            return True
        commits = self.log_ids("commits")
        if not commits:
            return False
        try:
            with open(os.path.join(self.ckpt, "offsets", str(max(commits))), encoding="utf-8") as f:
                lines = f.read().split("\n")
            return json.loads(lines[2])["logOffset"] >= self.files - 1
        except (FileNotFoundError, IndexError, ValueError, KeyError, TypeError):
            return False

    def restart_after_failure(self):
        try:
            self.query.stop()
        except Exception:
            pass
        if self.after_commit_of is not None:
            self.drop_uncommitted_after(self.after_commit_of)
        self.after_commit_of = None
        self.crashed = None
        self.progress_after_stop()
        self.start_query()
        self.seen_progress = 0

    def progress_after_stop(self):
        self.progress_since()
        self.executed = []

    def trigger(self):
        """AddData + processAllAvailable, surviving the crashes it raised."""
        rounds = 0
        while True:
            rounds += 1
            if rounds > 200:
                raise RuntimeError("the trigger did not settle after 200 rounds")
            try:
                while not self.covered():
                    self.query.processAllAvailable()
                self.query.processAllAvailable()
            except Exception as e:
                if self.crashed is None and self.after_commit_of is None:
                    raise
                self.restart_after_failure()
                continue
            if self.after_commit_of is not None:
                # after-commit and no batch was due: the process dies here.
                self.restart_after_failure()
                continue
            self.progress_since()
            return

    def write_files(self, st):
        """Writes the line's file; False when the line has no rows. No rows,
        no new offset: what a Kafka topic does when nothing was produced,
        and what exec's sources do (an empty file would be a new offset, and
        so a batch, for Spark's file source)."""
        out = [f"{self.src_index[name]}\t{t}\n" for name, texts in st["rows"].items() for t in texts]
        if not out:
            return False
        tmp = os.path.join(self.tmpdir, f"f-{self.files:06d}.txt")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("".join(out))
        os.rename(tmp, os.path.join(self.src_dir, f"f-{self.files:06d}.txt"))
        self.files += 1
        return True

    def run(self):
        self.timed("setup", self.prepare)
        self.conf()
        self.df = self.timed("setup", self.build_df)
        self.armed = self.armed_batch = None
        self.crashed = None
        self.after_commit_of = None
        self.executed = []
        self.seen_progress = 0
        self.table_start()
        self.start_query()
        try:
            for st in self.steps:
                if "rows" in st:
                    self.now_ms = st.get("nowMs", self.now_ms)
                    if not any(st["rows"].values()):
                        pass
                    elif self.skip > 0:
                        self.skip -= 1
                        continue  # resuming: this input is already covered by the checkpoint
                    else:
                        self.write_files(st)
                    self.timed("batches", self.trigger)
                elif st.get("restart"):
                    self.stop_query()
                    self.progress_after_stop()
                    self.start_query()
                    self.seen_progress = 0
                elif "crash" in st:
                    self.armed = st["crash"]
                    self.armed_batch = st.get("batch")
        finally:
            try:
                self.stop_query()
            except Exception:
                pass
        self.progress_after_stop()
        self.check_spark_error()
        self.table = self.table_result()

    def check_spark_error(self):
        pass


def jvm_cpu(spark):
    """CPU seconds the JVM has used (from /proc): a figure for speed that
    the machine's other load inflates less than wall time."""
    try:
        pid = _jvm_pid.get("pid")
        if pid is None:
            pid = _jvm_pid["pid"] = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 3)
    except Exception:
        return None


_jvm_pid = {}


def error_class(msg):
    # A failed query's StreamingQueryException reads "[STREAM_FAILED] Query
    # [...] terminated with exception: [CAUSE] ..." on one line; the cause's
    # class is what exec reports (e.g. STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE).
    classes = re.findall(r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)?)\]", msg)
    inner = [c for c in classes if c != "STREAM_FAILED"]
    return (inner or classes or [""])[0]


# A Java exception in a cause chain, as the JVM prints it: "pkg.Class: message"
# at the start of a line, after ": " (Py4J's "An error occurred while calling
# o1.m.\n: org...") or after a task failure's "executor driver): ".
_JAVA_CAUSE = re.compile(r"(?:^|: |\): )((?:[a-z_$][\w$]*\.)+([A-Z][\w$]*)): (.*)$")

# Wrappers whose own class says nothing: the cause after them is the refusal.
_WRAPPERS = {"SparkException", "StreamingQueryException", "Py4JJavaError", "ExecutionException"}


def java_cause(text):
    """The innermost Java exception of a cause chain printed in text (a
    failed foreachBatch's Python traceback carries the JVM's message), as
    (simple class name, first line of its message), or None. Spark 3.5
    raises some refusals as plain exceptions without an error class, inside
    the task that opens the state store (StateSchemaNotCompatible from
    StateSchemaCompatibilityChecker.check)."""
    found = None
    for line in text.split("\n"):
        if line.startswith("\tat ") or line.startswith("Driver stacktrace"):
            if found:
                break
            continue
        pos = 0
        # A line can hold several: "...: org.a.SparkException: Job aborted ...
        # (executor driver): org.b.Inner: message"; the last one is innermost.
        best = None
        while True:
            m = _JAVA_CAUSE.search(line, pos)
            if not m:
                break
            best = m
            pos = m.start(1) + 1
        if best and best.group(2) not in _WRAPPERS:
            found = (best.group(2), best.group(3).strip())
    return found


def java_chain(e):
    """The Java cause chain of a py4j failure e (a Py4JJavaError's
    java_exception, or a captured exception's origin), outermost first, as
    [(simple class name, first line of its message)]; [] without one."""
    t = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
    chain = []
    try:
        while t is not None and len(chain) < 32:
            msg = t.getMessage()
            chain.append((str(t.getClass().getSimpleName()), str(msg).strip().split("\n")[0] if msg is not None else ""))
            t = t.getCause()
    except Exception:
        pass
    return chain


def chain_message(chain):
    """The refusal a Java cause chain stands for, as (message, class): the
    innermost cause whose message names an error class, else the innermost
    cause that is not a mere wrapper, as "Class: message" with its class
    standing for the error class (Spark 3.5's StateSchemaNotCompatible,
    InvalidUnsafeRowException); None when nothing in it says more."""
    for _, m in reversed(chain):
        cls = error_class(m)
        if cls and cls not in ("STREAM_FAILED", "FOREACH_BATCH_USER_FUNCTION_ERROR"):
            return m, cls
    for name, m in reversed(chain):
        if name not in _WRAPPERS:
            return f"{name}: {m}", name
    return None


def spark_message(e):
    """Spark's message and error class: the first line that names an error
    class other than STREAM_FAILED, without the Java stack; for a wrapped
    failure without one, the innermost Java cause as "Class: message", its
    class standing for the error class (Spark 3.5's StateSchemaNotCompatible)."""
    msg = str(e)
    desc = getattr(e, "desc", None) or getattr(e, "getMessage", lambda: None)()
    if desc:
        msg = str(desc)
    # A StreamingQueryException wraps the cause; the cause's class is what
    # the exec interface reports.
    lines = [l for l in msg.split("\n") if l.strip()]
    for l in lines:
        cls = error_class(l)
        if cls and cls != "STREAM_FAILED":
            return l.strip(), cls
    cause = java_cause(msg)
    if cause:
        return f"{cause[0]}: {cause[1]}", cause[0]
    for l in lines:
        if error_class(l):
            return l.strip(), error_class(l)
    return (lines[0].strip() if lines else type(e).__name__), ""


def render(records, tail=None, table=None):
    out = []
    for r in records:
        parts = [f'"batchId":{r["batchId"]}']
        if r.get("replay"):
            parts.append('"replay":true')
        if r.get("crashed"):
            parts.append(f'"crashed":{json.dumps(r["crashed"])}')
        parts.append('"rows":[' + ",".join(r["rows"]) + "]")
        if "progress" in r:
            parts.append('"progress":' + json.dumps(r["progress"], separators=(",", ":"), sort_keys=False))
        out.append("{" + ",".join(parts) + "}\n")
    if table is not None and tail is None:
        out.append(render_table(table))
    if tail is not None:
        out.append(json.dumps(tail, separators=(",", ":")) + "\n")
    return "".join(out)


def handle(sess, req):
    t0 = time.time()
    for k in ("query", "steps", "out"):
        if not isinstance(req.get(k), str):
            raise BadRequest(f"request: {k}: want a path")
    keep = req.get("checkpoint")
    tr = Trace(sess, req, keep)
    status = "ok"
    tail = None
    try:
        tr.run()
    except Unsupported as e:
        status, tail = "unsupported", {"unsupported": str(e)}
        tr.records = []
    except BadRequest as e:
        status, tail = "error", {"error": f"bad input: {e}", "errorClass": ""}
    except Exception as e:  # Spark refused the query or the run failed
        msg, cls = spark_message(getattr(tr, "user_error", None) or e)
        # A failure inside the batch: Spark 3.5 reports the Python side's
        # text, which keeps the JVM's first line only, and 4.x wraps it in
        # FOREACH_BATCH_USER_FUNCTION_ERROR: the refusal is the Java cause.
        chain = getattr(tr, "batch_error", None)
        if chain and not getattr(tr, "user_error", None) and (
                version_tuple(sess.spark.version) < (4, 0) or cls in ("", "FOREACH_BATCH_USER_FUNCTION_ERROR")):
            found = chain_message(chain)
            if found:
                msg, cls = found
        status, tail = "error", {"error": msg, "errorClass": cls}
        try:
            tr.progress_after_stop()
        except Exception:
            pass
    finally:
        if not keep and getattr(tr, "base", None):
            shutil.rmtree(tr.base, ignore_errors=True)
    for r in tr.records:
        r.pop("_p", None)
    write_atomic(req["out"], render(tr.records, tail, getattr(tr, "table", None)))
    return {"out": req["out"], "status": status, "seconds": round(time.time() - t0, 3), "profile": tr.profile()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", default="-", help="JSON Lines of requests (default: standard input)")
    ap.add_argument("--workers", type=int, default=2, help="traces run concurrently, each in its own session")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--work", default="", help="scratch folder (default: a temporary folder, on /dev/shm when there)")
    ap.add_argument("--polling-ms", type=int, default=10, help="spark.sql.streaming.pollingDelay: the idle trigger's sleep")
    ap.add_argument("--driver-memory", default="2g")
    # C1 only and the serial collector: about half the CPU of the defaults
    # for hundreds of tiny batches on two cores (measured: 44 vs 77 CPU-s for
    # the same ten traces).
    ap.add_argument("--java-options", default="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC", help="JVM options of the driver")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="an extra Spark conf (repeatable)")
    ap.add_argument("--delta-jars", default="", metavar="JAR,JAR", help="Delta Lake's jars (delta-fetch.sh): the table, merge and append sinks write real Delta tables")
    args = ap.parse_args()
    if args.workers < 1 or args.workers > 16:
        print("runner: --workers: want a number in [1, 16]", file=sys.stderr)
        return 2

    base = args.work or ("/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None)
    work = tempfile.mkdtemp(prefix="dedupsim-spark-", dir=base)
    try:
        t0 = time.time()
        spark = make_spark(args, work)
        import pyspark

        print(json.dumps({"status": "started", "sparkVersion": spark.version, "pyspark": pyspark.__version__,
                          "seconds": round(time.time() - t0, 3)}), flush=True)
        src = sys.stdin if args.requests == "-" else open(args.requests, encoding="utf-8")
        # Requests are served as they arrive, so one runner can serve a
        # caller that sends more work later (conform's shrinker). A group
        # (the requests that share a checkpoint) runs in order on one worker.
        work_q = queue.Queue()
        out_lock = threading.Lock()
        failures = []
        bad = []

        def reader():
            try:
                for lineno, line in enumerate(src, 1):
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        req = json.loads(line)
                        if not isinstance(req, dict):
                            raise ValueError("want a JSON object")
                    except ValueError as e:
                        bad.append(f"runner: requests line {lineno}: {e}")
                        break
                    work_q.put(req.get("group") if isinstance(req.get("group"), list) else [req])
            finally:
                for _ in range(args.workers):
                    work_q.put(None)

        def worker(n):
            sess = Session(spark.newSession(), work)
            session_confs(sess.spark)
            while True:
                group = work_q.get()
                if group is None:
                    return
                for req in group:
                    c0 = jvm_cpu(spark)
                    try:
                        st = handle(sess, req)
                        c1 = jvm_cpu(spark)
                        if c0 is not None and c1 is not None:
                            st["jvmCpuSeconds"] = round(c1 - c0, 3)
                    except Exception as e:
                        st = {"out": req.get("out"), "status": "error", "error": f"runner: {e}"}
                        failures.append(traceback.format_exc())
                    with out_lock:
                        print(json.dumps(st), flush=True)

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(args.workers)]
        for t in threads:
            t.start()
        reader()
        for t in threads:
            t.join()
        for b in bad:
            print(b, file=sys.stderr)
        print(json.dumps({"status": "done", "seconds": round(time.time() - t0, 3), "jvmCpuSeconds": jvm_cpu(spark)}), flush=True)
        for f in failures:
            print(f, file=sys.stderr)
        spark.stop()
        return 2 if bad else 1 if failures else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
