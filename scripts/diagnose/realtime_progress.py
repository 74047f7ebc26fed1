"""realtime_progress.py OUT: the progress records of a real Spark 4.3 query in
real-time mode, for diagnose's tests (diagnose/testdata/realtime/progress.jsonl).

dropDuplicates(id, ts) with a 10-second watermark, trigger(realTime="5 seconds"),
console sink, its source LowLatencyMemoryStream (reached through py4j: pyspark
has no wrapper). Eight rounds of 20 fresh ids plus 3 retries of the previous
round, one round every 5 s, then q.recentProgress one record per line.

  py=$(scripts/spark-env.sh 4.3.0 | tail -n 1)
  "$py" scripts/diagnose/realtime_progress.py diagnose/testdata/realtime/progress.jsonl
"""
import json, os, sys, tempfile, time, shutil
from pyspark.sql import SparkSession, DataFrame, functions as F
out = sys.argv[1]
ckpt = tempfile.mkdtemp(prefix="dedupsim-rtm-")
spark = (SparkSession.builder.master("local[4]").appName("rtm-progress")
   .config("spark.ui.enabled","false").config("spark.sql.shuffle.partitions","2")
   .config("spark.sql.session.timeZone","UTC").config("spark.driver.memory","512m").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
jvm = spark._jvm
enc = jvm.org.apache.spark.sql.Encoders.tuple(jvm.org.apache.spark.sql.Encoders.STRING(), jvm.org.apache.spark.sql.Encoders.LONG())
stream = jvm.org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream.apply(spark._jsparkSession, 1, enc)
df = DataFrame(stream.toDF(), spark).select(F.col("_1").alias("id"), F.timestamp_millis("_2").alias("ts")).withWatermark("ts","10 seconds")
q = df.dropDuplicates(["id","ts"]).writeStream.format("console").outputMode("update").option("checkpointLocation", ckpt).trigger(realTime="5 seconds").start()
base = int(time.time()*1000) - 60000
for r in range(8):
    data = jvm.java.util.ArrayList()
    for i in range(20):
        data.add(jvm.scala.Tuple2(f"k{r}-{i}", jvm.java.lang.Long.valueOf(str(base + r*5000 + i*100))))
    for i in range(3):  # retries of the previous round
        data.add(jvm.scala.Tuple2(f"k{max(r-1,0)}-{i}", jvm.java.lang.Long.valueOf(str(base + max(r-1,0)*5000 + i*100))))
    stream.addData(jvm.scala.jdk.javaapi.CollectionConverters.asScala(data))
    time.sleep(5)
time.sleep(6)
with open(out, "w") as f:
    for p in q.recentProgress:
        f.write(p.json.replace("\n", "") + "\n")
q.stop()
spark.stop()
shutil.rmtree(ckpt, ignore_errors=True)
