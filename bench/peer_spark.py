#!/usr/bin/env python3
"""Peer (c): Spark + Delta Lake, the design document's foreachBatch MERGE (Step 4), local mode.

Runs in the venv .cache/bench-venv (pyspark and delta-spark from PyPI; the Delta jars come from
Maven Central through spark.jars.packages on first use). Instead of Kafka, the events file is cut
into files of N lines, and a Structured Streaming file source with maxFilesPerTrigger=1 and
trigger(availableNow=True) feeds them to foreachBatch one file per micro-batch, so each micro-batch
is one batch of N events. apply_changes is the document's function adapted to items; the Delta table
is addressed by path. Settings: local[2], spark.sql.shuffle.partitions=2 (the default 200 would
multiply the per-batch cost on 2 cores), delta.snapshotPartitions=2 (the default 50 likewise),
driver memory 2g.

Timed: from the start of the streaming query to its end (session start-up, table creation and the
split are not timed). A budget (--budget seconds) stops applying when exceeded: the figure is then
the rate over the batches applied and the status "partial" (the final state cannot be checked).
Memory: VmHWM of the JVM plus this process's peak RSS. Disk: the Delta table directory (all
versions; no VACUUM). The final state (not is_deleted, ORDER BY id) must equal the expected CSV.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (COLUMNS, compare_csv, dir_bytes, pg_csv_line, proc_cpu_seconds,  # noqa: E402
                    result, self_maxrss, vm_hwm)


def delta_version():
    try:
        from importlib.metadata import version
        return version("delta-spark")
    except Exception:
        return "?"


def split_file(events, batch, dest):
    """Cut the events file into files of `batch` lines, in order (file mtimes increase)."""
    os.makedirs(dest)
    n = files = 0
    out = None
    base = time.time() - 1_000_000
    with open(events, "rb") as f:
        for line in f:
            if n % batch == 0:
                if out:
                    out.close()
                    os.utime(out.name, (base + files, base + files))
                files += 1
                out = open(os.path.join(dest, f"part-{files:07d}.jsonl"), "wb")
            out.write(line)
            n += 1
    if out:
        out.close()
        os.utime(out.name, (base + files, base + files))
    return n, files


def main():
    p = argparse.ArgumentParser(description="Spark + Delta foreachBatch MERGE peer")
    p.add_argument("--events", required=True)
    p.add_argument("--expected", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--workdir", required=True, help="scratch directory (removed first)")
    p.add_argument("--budget", type=float, default=900.0, help="seconds of applying at most")
    p.add_argument("--results")
    a = p.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    try:
        import pyspark
        from delta import configure_spark_with_delta_pip
        from delta.tables import DeltaTable
        from pyspark.sql import SparkSession, Window
        from pyspark.sql import functions as F
    except Exception as e:
        result(a.results, peer="spark-delta", batch=a.batch, status="missing",
               verified="not run", note=f"import failed: {e}"[:300])
        return 0

    n, nfiles = split_file(a.events, a.batch, os.path.join(a.workdir, "in"))
    table = os.path.join(a.workdir, "items_replica")
    builder = (SparkSession.builder.appName("cdcstore-bench").master("local[2]")
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog",
                       "org.apache.spark.sql.delta.catalog.DeltaCatalog")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.memory", "2g")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.databricks.delta.snapshotPartitions", "2")
               .config("spark.sql.warehouse.dir", os.path.join(a.workdir, "warehouse"))
               .config("spark.driver.extraJavaOptions",
                       f"-Dderby.system.home={a.workdir}"))
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()

    (spark.createDataFrame([], "id bigint, customer_id int, status string, amount decimal(12,2), "
                               "note string, updated_at string, source_lsn bigint, "
                               "is_deleted boolean")
     .write.format("delta").save(table))

    after = ("struct<id:bigint,customer_id:int,status:string,amount:decimal(12,2),note:string,"
             "updated_at:string>")
    event = f"struct<op:string,before:{after},after:{after},source:struct<lsn:bigint>>"
    record = "struct<offset:bigint,key:string,payload:string>"
    changes = (spark.readStream.format("text").option("maxFilesPerTrigger", 1)
               .load(os.path.join(a.workdir, "in"))
               .select(F.from_json("value", record).alias("k"))
               .where(F.col("k.payload").isNotNull())                 # skip tombstones
               .select(F.from_json("k.payload", event).alias("e"))
               .select(F.coalesce("e.after.id", "e.before.id").alias("id"), "e.op",
                       "e.after.customer_id", "e.after.status", "e.after.amount", "e.after.note",
                       "e.after.updated_at", F.col("e.source.lsn").alias("lsn")))

    state = {"batches": 0, "stopped_at": None, "t0": None}
    target = DeltaTable.forPath(spark, table)

    def apply_changes(batch_df, batch_id):
        if state["stopped_at"] is not None:
            return
        latest = (batch_df.withColumn("rn", F.row_number().over(
                      Window.partitionBy("id").orderBy(F.col("lsn").desc())))
                  .where("rn = 1").drop("rn"))
        (target.alias("t")
            .merge(latest.alias("s"), "t.id = s.id")
            .whenMatchedUpdate(condition="s.lsn > t.source_lsn AND s.op = 'd'",
                               set={"is_deleted": "true", "source_lsn": "s.lsn"})
            .whenMatchedUpdate(condition="s.lsn > t.source_lsn",
                               set={"customer_id": "s.customer_id", "status": "s.status",
                                    "amount": "s.amount", "note": "s.note",
                                    "updated_at": "s.updated_at",
                                    "source_lsn": "s.lsn", "is_deleted": "false"})
            .whenNotMatchedInsert(condition="s.op = 'd'",
                                  values={"id": "s.id", "source_lsn": "s.lsn",
                                          "is_deleted": "true"})
            .whenNotMatchedInsert(values={"id": "s.id", "customer_id": "s.customer_id",
                                          "status": "s.status", "amount": "s.amount",
                                          "note": "s.note", "updated_at": "s.updated_at",
                                          "source_lsn": "s.lsn", "is_deleted": "false"})
            .execute())
        state["batches"] += 1
        if time.monotonic() - state["t0"] > a.budget:
            state["stopped_at"] = time.monotonic()

    state["t0"] = time.monotonic()
    c0 = proc_cpu_seconds(jvm_pid)
    q = (changes.writeStream.foreachBatch(apply_changes)
         .option("checkpointLocation", os.path.join(a.workdir, "_checkpoint"))
         .trigger(availableNow=True).start())
    # Stop as soon as the budget is spent: skipping the remaining micro-batches one by one would
    # still cost the streaming overhead of each.
    while not q.awaitTermination(1):
        if state["stopped_at"] is not None:
            q.stop()
            break
    t1 = state["stopped_at"] or time.monotonic()
    secs = t1 - state["t0"]
    applied = min(state["batches"] * a.batch, n)
    jvm_rss = vm_hwm(jvm_pid) or 0
    c1 = proc_cpu_seconds(jvm_pid)
    cpu = round(100 * (c1 - c0) / (time.monotonic() - state["t0"])) if c0 and c1 else None

    if state["stopped_at"] is None:
        got = os.path.join(a.workdir, "final.csv")
        rows = (spark.read.format("delta").load(table).where("NOT is_deleted")
                .select(*COLUMNS).orderBy("id").collect())
        with open(got, "w", encoding="utf-8", newline="") as f:
            f.write(",".join(COLUMNS) + "\n")
            for r in rows:
                f.write(pg_csv_line(tuple(r)))
        verified = compare_csv(a.expected, got)
        status = "ok" if verified == "ok" else "failed"
    else:
        verified = "not checked (stopped at the time budget)"
        status = "partial"
    disk = dir_bytes(table)
    spark.stop()
    result(a.results, peer="spark-delta", batch=a.batch, events=applied, seconds=secs,
           peak_rss_bytes=jvm_rss + self_maxrss(), disk_bytes=disk, status=status,
           cpu_percent=cpu,
           verified=verified,
           note=f"pyspark {pyspark.__version__}, delta-spark {delta_version()}, local[2], "
                f"shuffle.partitions=2, delta.snapshotPartitions=2; "
                f"{state['batches']} of {nfiles} micro-batches applied"
                + (f"; stopped after the {a.budget:.0f} s budget" if status == "partial" else ""))
    shutil.rmtree(a.workdir, ignore_errors=True)
    return 0 if status in ("ok", "partial") else 1


if __name__ == "__main__":
    sys.exit(main())
