"""calibrate.py OUT.json [SHAPE/STORE/API ...]: measure Spark's state bytes
per key (issue 26).

For each key shape x state store x dedup API, one streaming query over a
file source in a local[1] Spark application (one application for all of
them, 2 shuffle partitions): BATCHES batches of PER_BATCH new keys each,
with a watermark delay long enough that nothing is evicted. After each
batch it records numRowsTotal, memoryUsedBytes, and for RocksDB
customMetrics.rocksdbSstFileSize (changelog checkpointing off, so each
commit flushes the memtable to SST files). The table goes to OUT.json;
sizing's TestCalibration checks size's layout against it. With
SHAPE/STORE/API arguments (e.g. uuid36/rocksdb/dropDuplicates) only those
cases run (the Spark suite's re-measurement, sizing's TestSparkCalibration).

Key values are random (a seeded random.Random, so a rerun makes the same
keys): random alphanumeric strings, random version-4 UUIDs, random 63-bit
longs. Sequential ids ("k0000001", ...) share long prefixes and compress
several times better in RocksDB's SST files than real ids do.

Run through the project's venv (scripts/sizing/calibrate.sh).
"""
import json
import random
import os
import shutil
import sys
import tempfile
import time
import uuid

BATCHES = 4
PER_BATCH = 5000

STORES = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}

# Key shapes: the dedup columns, and how to make the i-th key's values.
# The i-th key is drawn from a random.Random seeded with (shape, i), so each
# key is the same on every run and in any subset.
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def rng(shape, i):
    return random.Random(f"{shape}/{i}")


def rstr(r, n):
    return "".join(r.choice(ALNUM) for _ in range(n))


SHAPES = {
    "string8": (["id"], lambda i: {"id": rstr(rng("string8", i), 8)}),
    "uuid36": (["id"], lambda i: {"id": str(uuid.UUID(int=rng("uuid36", i).getrandbits(128), version=4))}),
    "bigint": (["n"], lambda i: {"n": rng("bigint", i).getrandbits(63)}),
    "string12+bigint": (["id", "n"], lambda i: (lambda r: {"id": rstr(r, 12), "n": r.getrandbits(63)})(rng("string12+bigint", i))),
}
APIS = ["dropDuplicates", "dropDuplicatesWithinWatermark"]


def main():
    out = sys.argv[1]
    only = set(sys.argv[2:])
    for c in only:
        parts = c.split("/")
        if len(parts) != 3 or parts[0] not in SHAPES or parts[1] not in STORES or parts[2] not in APIS:
            print(f"calibrate.py: case {c!r} is not SHAPE/STORE/API with SHAPE one of {sorted(SHAPES)}, "
                  f"STORE one of {sorted(STORES)}, API one of {APIS}", file=sys.stderr)
            sys.exit(2)
    from pyspark.sql import SparkSession, functions as F, types as T

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("dedupsim-sizing-calibration")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "1")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.stateStore.maintenanceInterval", "3600s")
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "false")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="dedupsim-calibrate-")
    rows = []
    base = int(time.time()) - 3600
    for shape, (keys, make) in SHAPES.items():
        for store, cls in STORES.items():
            for api in APIS:
                if only and f"{shape}/{store}/{api}" not in only:
                    continue
                spark.conf.set("spark.sql.streaming.stateStore.providerClass", cls)
                name = f"{shape}-{store}-{api}"
                src = os.path.join(work, name, "src")
                ckpt = os.path.join(work, name, "ckpt")
                os.makedirs(src)
                fields = [T.StructField(k, T.StringType() if k == "id" else T.LongType()) for k in keys]
                schema = T.StructType(fields + [T.StructField("ts", T.LongType())])
                df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(src)
                df = df.withColumn("ts", F.timestamp_seconds("ts")).withWatermark("ts", "10 days")
                if api == "dropDuplicates":
                    df = df.dropDuplicates(keys + ["ts"])
                else:
                    df = df.dropDuplicatesWithinWatermark(keys)
                q = df.writeStream.format("noop").option("checkpointLocation", ckpt).start()
                batches = []
                for b in range(BATCHES):
                    tmp = os.path.join(work, name, f".b{b}.json")
                    with open(tmp, "w") as f:
                        for i in range(b * PER_BATCH, (b + 1) * PER_BATCH):
                            r = make(i)
                            r["ts"] = base + b
                            f.write(json.dumps(r) + "\n")
                    os.rename(tmp, os.path.join(src, f"b{b:03d}.json"))
                    q.processAllAvailable()
                    p = q.lastProgress
                    op = p["stateOperators"][0]
                    batches.append({
                        "batchId": p["batchId"],
                        "numRowsTotal": op["numRowsTotal"],
                        "memoryUsedBytes": op["memoryUsedBytes"],
                        "sstFileSize": op.get("customMetrics", {}).get("rocksdbSstFileSize"),
                        "stateOnCurrentVersionSizeBytes": op.get("customMetrics", {}).get("stateOnCurrentVersionSizeBytes"),
                    })
                q.stop()
                rows.append({"shape": shape, "keys": keys, "store": store, "api": api,
                             "sample": make(1), "batches": batches})
                print(name, batches[-1], file=sys.stderr, flush=True)
    version = spark.version
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    with open(out, "w") as f:
        json.dump({"sparkVersion": version,
                   "partitions": 2, "batches": BATCHES, "keysPerBatch": PER_BATCH,
                   "command": " ".join(["scripts/sizing/calibrate.sh", "sizing/testdata/spark-calibration.json"] + sys.argv[2:]),
                   "results": rows}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
