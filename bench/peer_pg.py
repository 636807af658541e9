#!/usr/bin/env python3
"""Peer (a): the design document's apply_batch MERGE procedure on a PostgreSQL 15 started here.

The server is a throwaway cluster: initdb in a temporary directory as the `postgres` user
(`runuser -u postgres`), listening on 127.0.0.1 only (port 55499 by default), default settings
(so fsync and synchronous_commit on, shared_buffers 128 MB), stopped and removed at the end. The
events are loaded into cdc_events first (COPY, not timed), then for each batch size the replica is
recreated, a CHECKPOINT is taken, and one psql session runs `CALL apply_batch(from, to)` for each
batch of N lines; the time between the first and the last CALL is the figure. The replica's final
state (items_current ORDER BY id, COPY CSV HEADER) must equal the expected CSV. Memory is the peak
RSS (VmHWM) of the backend that ran the CALLs; disk is pg_total_relation_size(items_replica).
With --shape S the table is gen.py's shape S (apply_batch.sql filled with its columns) and the
record is the shapes step's "shape-postgres"; the COPY's time and its backend's CPU time are kept
(load_seconds, load_cpu_seconds) for the figure that counts the load.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare_csv, count_lines, parse_stat_cpu, result  # noqa: E402
from gen import SHAPES  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def find_pg_bin():
    for d in ("/usr/lib/postgresql/15/bin",):
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    p = shutil.which("initdb")
    return os.path.dirname(os.path.realpath(p)) if p else None


class Cluster:
    def __init__(self, port, workdir):
        self.port = port
        self.bindir = find_pg_bin()
        if not self.bindir:
            raise RuntimeError("PostgreSQL 15 binaries (initdb) not found")
        self.dir = tempfile.mkdtemp(prefix="cdcbench-pg-", dir=workdir)
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        shutil.chown(self.dir, "postgres", "postgres")
        self.started = False

    def as_postgres(self, *cmd):
        return subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def start(self):
        self.as_postgres(os.path.join(self.bindir, "initdb"), "-D", self.data, "--auth=trust",
                         "-U", "postgres", "--encoding=UTF8", "--locale=C")
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        self.as_postgres(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-l", self.log,
                         "-o", opts, "-w", "start")
        self.started = True
        self.psql("postgres", "-c", "CREATE DATABASE bench")

    def stop(self):
        if self.started:
            try:
                self.as_postgres(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m",
                                 "fast", "-w", "stop")
            except subprocess.CalledProcessError as e:
                print(e.stdout, file=sys.stderr)
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def psql(self, db, *args, capture=True):
        cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
               str(self.port), "-U", "postgres", "-d", db, *args]
        r = subprocess.run(cmd, stdout=subprocess.PIPE if capture else None,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"psql failed ({' '.join(args)[:200]}): {r.stderr.strip()[:2000]}")
        return r.stdout


def apply_batch_sql(shape, tmp):
    """apply_batch.sql with its {{...}} filled for a gen.py shape's table; returns the file's path."""
    cols = shape.columns[1:]
    fill = {
        "table": shape.table,
        "column_defs": ", ".join(f"{c} {t}" for c, t in cols),
        "columns": ", ".join(c for c, _ in cols),
        "extracts": ",\n             ".join(
            f"value -> 'after' ->> '{c}' AS {c}" if t == "text"
            else f"(value -> 'after' ->> '{c}')::{t} AS {c}" for c, t in cols),
        "set_list": ", ".join(f"{c} = s.{c}" for c, _ in cols),
        "s_columns": ", ".join(f"s.{c}" for c, _ in cols),
    }
    with open(os.path.join(HERE, "apply_batch.sql")) as f:
        sql = f.read()
    for k, v in fill.items():
        sql = sql.replace("{{" + k + "}}", v)
    path = os.path.join(tmp, f"apply_batch-{shape.table}.sql")
    with open(path, "w") as f:
        f.write(sql)
    return path


def load_events(cluster, events, tmp, sql):
    """COPY the events into cdc_events(kafka_offset = line number, msg_key, value jsonb).

    Returns (lines, seconds of the COPY statement alone, CPU seconds of the backend that ran it)."""
    staged = os.path.join(tmp, "events.csv")
    n = 0
    with open(events, encoding="utf-8") as f, open(staged, "w", encoding="utf-8", newline="") as o:
        w = csv.writer(o, lineterminator="\n")
        for n, line in enumerate(f, 1):
            rec = json.loads(line)
            key = json.loads(rec["key"])["id"]
            w.writerow((n, key, rec["payload"] if rec["payload"] is not None else None))
    # csv.writer writes None as an empty unquoted field, which COPY CSV reads as NULL.
    cluster.psql("bench", "-c", "DROP TABLE IF EXISTS cdc_events")
    cluster.psql("bench", "-f", sql)
    script = os.path.join(tmp, "load.sql")
    with open(script, "w") as f:
        f.write("SELECT pg_backend_pid() AS bpid \\gset\n\\setenv BPID :bpid\n")
        f.write("\\! echo STAT0 $(cat /proc/$BPID/stat)\n")
        f.write(f"\\copy cdc_events FROM '{staged}' CSV\n")
        f.write("\\! echo STAT1 $(cat /proc/$BPID/stat)\n")
    t = time.monotonic()
    out = cluster.psql("bench", "-f", script)
    copy_s = time.monotonic() - t                 # JSON text to jsonb happens here
    stat = {l[:5]: parse_stat_cpu(l[6:]) for l in out.splitlines() if l.startswith("STAT")}
    copy_cpu = stat["STAT1"] - stat["STAT0"] if len(stat) == 2 else None
    cluster.psql("bench", "-c", "VACUUM ANALYZE cdc_events")
    os.unlink(staged)
    return n, copy_s, copy_cpu


def run_batch_size(cluster, n_events, batch, expected, tmp, sql, table):
    cluster.psql("bench", "-f", sql)
    cluster.psql("bench", "-c", "CHECKPOINT")
    script = os.path.join(tmp, f"calls-{batch}.sql")
    with open(script, "w") as f:
        f.write("SELECT pg_backend_pid() AS bpid \\gset\n\\setenv BPID :bpid\n")
        f.write("\\! echo STAT0 $(cat /proc/$BPID/stat)\n")
        f.write("SELECT 'T0 ' || extract(epoch from clock_timestamp());\n")
        for lo in range(0, n_events, batch):
            f.write(f"CALL apply_batch({lo}, {min(lo + batch, n_events)});\n")
        f.write("SELECT 'T1 ' || extract(epoch from clock_timestamp());\n")
        f.write("\\! echo STAT1 $(cat /proc/$BPID/stat)\n")
        f.write("\\! grep VmHWM /proc/$BPID/status\n")
    out = cluster.psql("bench", "-f", script)
    t0 = t1 = hwm = c0 = c1 = None
    for line in out.splitlines():
        if line.startswith("STAT0 "):
            c0 = parse_stat_cpu(line[6:])
        elif line.startswith("STAT1 "):
            c1 = parse_stat_cpu(line[6:])
        elif line.startswith("T0 "):
            t0 = float(line[3:])
        elif line.startswith("T1 "):
            t1 = float(line[3:])
        elif line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
    got = os.path.join(tmp, f"pg-{batch}.csv")
    cluster.psql("bench", "-c",
                 f"\\copy (SELECT * FROM {table}_current ORDER BY id) TO '{got}' CSV HEADER")
    verified = compare_csv(expected, got)
    disk = int(cluster.psql("bench", "-c",
                            f"SELECT pg_total_relation_size('{table}_replica')").strip())
    cpu = round(100 * (c1 - c0) / (t1 - t0)) if c0 is not None and c1 is not None else None
    return t1 - t0, hwm, disk, verified, cpu


SOURCE_DDL = """DROP TABLE IF EXISTS items;
CREATE TABLE items (id bigint PRIMARY KEY, customer_id int, status text, amount numeric(12, 2),
                    note text, updated_at text);"""

# Twenty differences: 10 changed rows, 5 rows only in the source, 5 only in the replica.
DIFF_SQL = """
UPDATE items SET status = status || '!' WHERE id IN (SELECT id FROM items ORDER BY id OFFSET 100 LIMIT 10);
DELETE FROM items WHERE id IN (SELECT id FROM items ORDER BY id DESC OFFSET 50 LIMIT 5);
INSERT INTO items (id, status) SELECT 9000000000000 + g, 'new' FROM generate_series(1, 5) g;
"""


def reconcile(cluster, a):
    """Time `cdcstore reconcile` of the kept replica against a source table holding the expected
    state: once equal, once with 20 differences."""
    from peer_cmd import timed
    cluster.psql("bench", "-c", SOURCE_DDL)
    cluster.psql("bench", "-c", f"\\copy items FROM '{a.expected}' CSV HEADER")
    cluster.psql("bench", "-c", "VACUUM ANALYZE items")
    rows = int(cluster.psql("bench", "-c", "SELECT count(*) FROM items").strip())
    conninfo = f"host=127.0.0.1 port={a.port} user=postgres dbname=bench"
    for case in ("equal", "20 differences"):
        if case != "equal":
            cluster.psql("bench", "-c", DIFF_SQL)
        cmd = [a.reconcile_bin, "reconcile", "--db", a.reconcile_db, "--table", "public.items",
               "--source", conninfo, "--recheck-wait", "50"]
        rc, out, err, wall, rss = timed(cmd)
        cpu = timed.cpu_percent
        lines = [l for l in out.splitlines() if l.strip()]
        want_rc, want_n = (0, 0) if case == "equal" else (1, 20)
        ok = rc == want_rc and len(lines) == want_n
        result(a.results, peer="cdcstore-reconcile", batch=-1, events=rows, seconds=wall,
               peak_rss_bytes=rss, cpu_percent=cpu, case=case,
               status="ok" if ok else "failed",
               verified="ok" if ok else f"exit {rc}, {len(lines)} lines (expected exit "
                                        f"{want_rc}, {want_n} lines): {(out + err)[-300:]}",
               note=f"rows per second = source rows / wall time; {' '.join(cmd[1:5])} ...")


def main():
    p = argparse.ArgumentParser(description="apply_batch MERGE on PostgreSQL 15")
    p.add_argument("--events", required=True)
    p.add_argument("--expected", required=True)
    p.add_argument("--batch", type=int, action="append", required=True)
    p.add_argument("--port", type=int, default=55499)
    p.add_argument("--workdir", default=tempfile.gettempdir())
    p.add_argument("--results")
    p.add_argument("--reconcile-bin", help="cdcstore binary: also time its reconcile")
    p.add_argument("--reconcile-db", help="a verified cdcstore replica of the same events")
    p.add_argument("--shape", choices=tuple(SHAPES),
                   help="the events are of this gen.py row shape (the shapes step's records, "
                        "\"shape-postgres\"); without it, public.items")
    a = p.parse_args()
    shape = SHAPES[a.shape or "medium"]
    peer = "shape-postgres" if a.shape else "postgres"
    extra = {"shape": a.shape} if a.shape else {}
    a.workdir = os.path.abspath(a.workdir)   # the server runs as postgres: no relative paths
    n_lines = count_lines(a.events)
    cluster = None
    tmp = tempfile.mkdtemp(prefix="cdcbench-pgwork-", dir=a.workdir)
    try:
        cluster = Cluster(a.port, a.workdir)
        cluster.start()
        version = cluster.psql("bench", "-c", "SHOW server_version").strip()
        sql = apply_batch_sql(shape, tmp)
        n, load_s, load_cpu = load_events(cluster, a.events, tmp, sql)
        assert n == n_lines, (n, n_lines)
        for batch in a.batch:
            secs, hwm, disk, verified, cpu = run_batch_size(cluster, n, batch, a.expected, tmp,
                                                            sql, shape.table)
            result(a.results, peer=peer, batch=batch, events=n, seconds=secs,
                   peak_rss_bytes=hwm, disk_bytes=disk, load_seconds=load_s, cpu_percent=cpu,
                   load_cpu_seconds=load_cpu, **extra,
                   status="ok" if verified == "ok" else "failed", verified=verified,
                   note=f"PostgreSQL {version}, default settings; COPY into cdc_events "
                        f"{load_s:.1f} s not timed; memory = VmHWM of the backend "
                        f"(includes shared_buffers pages it touched)")
        if a.reconcile_bin and a.reconcile_db and os.path.isdir(a.reconcile_db) and not a.shape:
            reconcile(cluster, a)
    except Exception as e:  # report, never hide: the driver records the reason
        for batch in a.batch:
            result(a.results, peer=peer, batch=batch, events=n_lines, status="failed",
                   verified="not run", note=f"{type(e).__name__}: {e}"[:500], **extra)
        return 1
    finally:
        if cluster:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
