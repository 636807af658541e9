#!/usr/bin/env python3
"""`cdcstore ingest` draining a Kafka backlog against `cdcstore apply` of the same file, side by side.

  peer_backlog.py --bin CDC --produce PRODUCE --brokers HOST:PORT --events F --expected E
                  --workdir W --results R [--partitions 4] [--batch 10000] [--repeat 2] [--broker-pid PID]
                  [--tables 1000 --table-rows 1000]

1. PRODUCE loads F into a new topic `backlogNNN.public.items` of --partitions partitions (keys and
   values as in the file, partitioned by key; bench/produce.c), every record acknowledged.
2. A warm-up, not timed and not recorded: one `cdcstore ingest` of the topic to its end and one
   `cdcstore apply` of the file. A broker started for the benchmark has served no consumer group yet: the
   first group's coordinator lookup creates its __consumer_offsets topic, and librdkafka asks again
   only a second later (the first timed ingest used to start its first batch 1.2-1.3 s late); its JIT
   has not compiled the fetch path either. A broker that serves Debezium (Kafka Connect's workers are a
   group) has done both long before.
3. --repeat times, interleaved: `cdcstore ingest` of that topic into a new replica (a group of its
   own, --from-beginning, --batch-max-events --batch), then `cdcstore apply --batch-size --batch F`
   into a new replica.
   - ingest: timed from its start to the moment its last record was applied. The ingest serves its
     per-batch figures at --metrics-addr (updated right after each batch's apply); they are read every
     100 ms, every 10 ms once fewer than two batches or 0.3 s at the rate so far are left, and the end
     is the first read whose
     cdcstore_events_total is the topic's record count (its consumer lag is then 0). The end is known
     to `resolution_s` (the time since the read before). CPU seconds are those of the process at that
     read (/proc/PID/stat); then it gets SIGTERM; peak RSS from wait4.
   - apply: the whole command, CPU seconds and peak RSS from wait4.
   Each replica is exported (`cdcstore export --format csv`) and compared with E byte for byte.
4. With --tables N (0: not run), a whole schema's backlog: bench/gen_tables.py writes N tables of
   --table-rows rows (snapshot, then 2 updates, a delete and its tombstone per table) on N topics of
   one partition each, named with a prefix of this run; PRODUCE --file-topics loads them; then, as
   above (a warm-up, then --repeat interleaved runs), `cdcstore ingest --topic-regex '<prefix>\.public\.'`
   against `cdcstore apply` of the file. Each replica must list N tables and the generator's live
   rows (`cdcstore stats --json`), and ten of its tables (`cdcstore export --meta`: rows, versions
   and deletes) must equal the warm-up apply's replica, itself checked for the tables and rows.
One record per run and program (peer "backlog", what "ingest" or "apply"), one for the producer; the
schema's records carry case "tables".
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare_csv, count_lines, proc_cpu_seconds, result  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape(url):
    """The ingest's counters as {name: value}, or None while it does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(cdcstore_events_total|cdcstore_consumer_lag_records|cdcstore_batches_total) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def reap(p, timeout):
    """wait4 the child: (exit status, rusage); SIGKILL after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return p.returncode, ru
        if time.monotonic() > deadline:
            p.kill()
            deadline = time.monotonic() + 30
        time.sleep(0.02)


def verify(a, db):
    got = db.rstrip("/") + ".csv"
    with open(got, "wb") as out:
        r = subprocess.run([a.bin, "export", "--db", db, "--table", "public.items", "--format", "csv"],
                           stdout=out, stderr=subprocess.PIPE)
    v = compare_csv(a.expected, got) if r.returncode == 0 else \
        f"export exited {r.returncode}: {r.stderr.decode(errors='replace').strip()[-300:]}"
    os.unlink(got)
    return v


def tables_and_rows(a, db):
    """(tables the replica lists, its live rows), or a sentence saying what failed."""
    t = subprocess.run([a.bin, "tables", "--db", db], capture_output=True, text=True)
    st = subprocess.run([a.bin, "stats", "--db", db, "--json"], capture_output=True, text=True)
    if t.returncode or st.returncode:
        return f"tables exited {t.returncode}, stats exited {st.returncode}: {(t.stderr + st.stderr).strip()[-300:]}"
    return len(t.stdout.split()), json.loads(st.stdout).get("total", {}).get("rows_live")


def sample_tables(a):
    step = max(1, a.tables // 10)
    return sorted({f"public.t{i:04d}" for i in range(1, a.tables + 1, step)} - {f"public.t{a.tables:04d}"})[:9] + [f"public.t{a.tables:04d}"]


def verify_tables(a, db):
    """The schema's replica: its tables and live rows as the generator says, and the sample tables
    (rows, versions and deletes) equal to the warm-up apply's replica."""
    got = tables_and_rows(a, db)
    if isinstance(got, str):
        return got
    want = (a.summary["tables"], a.summary["rows"])
    if got != want:
        return f"the replica holds {got[0]} tables and {got[1]} live rows, expected {want[0]} and {want[1]}"
    if db == a.reference:
        return "ok"
    if not a.reference:
        return "no reference replica (the warm-up apply failed)"
    for table in sample_tables(a):
        ex = [subprocess.run([a.bin, "export", "--db", d, "--table", table, "--meta"], capture_output=True)
              for d in (db, a.reference)]
        if ex[0].returncode or ex[1].returncode:
            return f"export of {table} exited {ex[0].returncode}/{ex[1].returncode}"
        if ex[0].stdout != ex[1].stdout:
            return f"{table} differs from the warm-up apply's replica"
    return "ok"


def broker_cpu(a):
    return proc_cpu_seconds(a.broker_pid) if a.broker_pid else None


def run_ingest(a, topic, n, run, warm=False, case=None):
    """case None: the stream's topic (verified against --expected); case "tables": topic is the
    schema's prefix, its topics taken by --topic-regex (verified by verify_tables)."""
    tag = f"{case}-{run}" if case else f"{run}"
    db = os.path.join(a.workdir, f"ingest-{tag}")
    shutil.rmtree(db, ignore_errors=True)
    port = free_port()
    # only the three families read: a whole page of 1,000 tables is 1.2 MB, whose serving and parsing
    # every 10-100 ms would take CPU from the ingest being timed
    url = (f"http://127.0.0.1:{port}/metrics?name[]=cdcstore_events_total"
           "&name[]=cdcstore_consumer_lag_records&name[]=cdcstore_batches_total")
    log = os.path.join(a.workdir, f"ingest-{tag}.log")
    source = ["--topic-regex", re.escape(topic) + r"\.public\."] if case else ["--topic", topic]
    cmd = [a.bin, "ingest", "--db", db, "--brokers", a.brokers] + source + ["--from-beginning",
           "--group", f"{topic}-run{run}", "--batch-max-events", str(a.batch),
           "--metrics-addr", f"127.0.0.1:{port}"]
    print(" ".join(cmd), file=sys.stderr, flush=True)
    b0 = broker_cpu(a)
    with open(log, "wb") as lf:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=lf, stderr=lf)
        first = end = prev = cpu_end = None
        got = {}
        limit = t0 + max(120, n / 2000)
        while time.monotonic() < limit and p.poll() is None:
            asked = time.monotonic()
            got = scrape(url) or {}
            seen = got.get("cdcstore_events_total", 0)
            if seen > 0 and first is None:
                first = time.monotonic()
            if seen >= n:
                end = time.monotonic()
                cpu_end = proc_cpu_seconds(p.pid)
                break
            prev = asked
            # every 10 ms once the end may come within the next 0.3 s (at the rate so far), else every 100 ms
            rate = seen / (time.monotonic() - first) if first and seen else 0
            time.sleep(0.01 if seen >= n - max(2 * a.batch, 0.3 * rate) else 0.1)
        b1 = broker_cpu(a)
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        rc, ru = reap(p, 120)
    tail = open(log, errors="replace").read().strip().splitlines()
    summary = next((l for l in reversed(tail) if l.startswith("cdcstore ingest:")), "")
    if warm:
        shutil.rmtree(db, ignore_errors=True)
        print(f"warm-up ingest: {'to the end' if end else 'did not reach the end'} in {time.monotonic() - t0:.2f} s "
              f"(first batch after {first - t0 if first else -1:.2f} s)", file=sys.stderr, flush=True)
        return None
    base = dict(peer="backlog", batch=-1, what="ingest", run=run, events=n,
                partitions=a.tables if case else a.partitions, peak_rss_bytes=ru.ru_maxrss * 1024, exit=rc)
    if case:
        base["case"] = case
    if end is None:
        result(a.results, **base, status="failed", verified="not run",
               note=f"the ingest did not reach {n} records (last figures {got}, exit {rc}): "
                    + " | ".join(tail[-3:])[-300:])
        return None
    v = verify_tables(a, db) if case else verify(a, db)
    secs = end - t0
    cpu = cpu_end if cpu_end is not None else ru.ru_utime + ru.ru_stime
    rec = dict(base, seconds=secs, cpu_seconds=cpu, cpu_percent=round(100 * cpu / secs),
               events_per_cpu_s=n / cpu if cpu else None, resolution_s=end - (prev or t0),
               startup_seconds=(first - t0) if first else None, lag_at_end=got.get("cdcstore_consumer_lag_records"),
               batches=got.get("cdcstore_batches_total"),
               cpu_seconds_total=ru.ru_utime + ru.ru_stime,
               broker_cpu_seconds=(b1 - b0) if b0 is not None and b1 is not None else None,
               status="ok" if v == "ok" and rc == 0 else "failed", verified=v,
               note=(summary[:300] if rc == 0 else f"exit {rc}: {summary[:300]}"))
    result(a.results, **rec)
    shutil.rmtree(db, ignore_errors=True)
    return rec


def run_apply(a, n, run, warm=False, case=None, events=None):
    """case "tables": the schema's file (events), verified by verify_tables; its warm-up replica is
    kept as the reference the later replicas' tables are compared with."""
    tag = f"{case}-{run}" if case else f"{run}"
    db = os.path.join(a.workdir, f"apply-{tag}")
    shutil.rmtree(db, ignore_errors=True)
    log = os.path.join(a.workdir, f"apply-{tag}.log")
    cmd = [a.bin, "apply", "--db", db, "--batch-size", str(a.batch), events or a.events]
    print(" ".join(cmd), file=sys.stderr, flush=True)
    with open(log, "wb") as lf:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=lf, stderr=lf)
        rc, ru = reap(p, max(600, n / 1000))
        secs = time.monotonic() - t0
    cpu = ru.ru_utime + ru.ru_stime
    if warm:
        print(f"warm-up apply: exit {rc} in {secs:.2f} s", file=sys.stderr, flush=True)
        if case and rc == 0:
            a.reference = db
            return None
        shutil.rmtree(db, ignore_errors=True)
        return None
    base = dict(peer="backlog", batch=-1, what="apply", run=run, events=n, peak_rss_bytes=ru.ru_maxrss * 1024,
                exit=rc)
    if case:
        base["case"] = case
    if rc != 0:
        tail = open(log, errors="replace").read().strip()[-300:]
        result(a.results, **base, status="failed", verified="not run", note=f"apply exited {rc}: {tail}")
        return None
    v = verify_tables(a, db) if case else verify(a, db)
    rec = dict(base, seconds=secs, cpu_seconds=cpu, cpu_percent=round(100 * cpu / secs),
               events_per_cpu_s=n / cpu if cpu else None,
               status="ok" if v == "ok" else "failed", verified=v)
    result(a.results, **rec)
    shutil.rmtree(db, ignore_errors=True)
    return rec


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--produce", required=True)
    p.add_argument("--brokers", required=True)
    p.add_argument("--events", required=True)
    p.add_argument("--expected", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--results")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--batch", type=int, default=10000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--broker-pid", type=int, help="the broker's pid: its CPU during each ingest is recorded")
    p.add_argument("--tables", type=int, default=0, help="a whole schema of this many topics too (0: not run)")
    p.add_argument("--table-rows", type=int, default=1000, help="snapshot rows per table of --tables")
    a = p.parse_args()
    a.reference = None
    os.makedirs(a.workdir, exist_ok=True)
    n = count_lines(a.events)
    for path in (a.bin, a.produce):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            result(a.results, peer="backlog", batch=-1, what="produce", status="missing",
                   verified="not run", note=f"{path} does not exist")
            return 1
    topic = f"backlog{int(time.time())}.public.items"
    cmd = [a.produce, "--brokers", a.brokers, "--topic", topic, "--partitions", str(a.partitions), a.events]
    print(" ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    secs = time.monotonic() - t0
    err = r.stderr.decode(errors="replace").strip()
    try:
        summary = json.loads(r.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        summary = {}
    if r.returncode != 0 or summary.get("delivered") != n:
        result(a.results, peer="backlog", batch=-1, what="produce", events=n, status="failed",
               verified="not run", note=f"produce exited {r.returncode}: {err[-300:]}")
        return 1
    result(a.results, peer="backlog", batch=-1, what="produce", events=n, seconds=secs, status="ok",
           verified="every record acknowledged (acks=all)", topic=topic, partitions=a.partitions,
           per_partition=summary.get("per_partition"), tombstones=summary.get("tombstones"))
    run_ingest(a, topic, n, 0, warm=True)
    run_apply(a, n, 0, warm=True)
    bad = 0
    for run in range(1, a.repeat + 1):
        i = run_ingest(a, topic, n, run)
        ap = run_apply(a, n, run)
        bad += (not i or i["status"] != "ok") + (not ap or ap["status"] != "ok")
        if i and ap and i.get("seconds") and ap.get("seconds"):
            print(f"run {run}: ingest {n / i['seconds']:,.0f} events/s, apply {n / ap['seconds']:,.0f} "
                  f"events/s, ratio {ap['seconds'] / i['seconds']:.3f}", file=sys.stderr, flush=True)
    if a.tables > 0:
        bad += run_tables_case(a)
    return 1 if bad else 0


def run_tables_case(a):
    """Step 4 of the docstring; the number of failed runs."""
    prefix = f"bt{int(time.time())}"
    data = os.path.join(a.workdir, "tables.jsonl")
    gen = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_tables.py"),
           "--tables", str(a.tables), "--rows", str(a.table_rows), "--prefix", prefix, "--out", data, "--summary"]
    print(" ".join(gen), file=sys.stderr, flush=True)
    a.summary = json.loads(subprocess.run(gen, check=True, capture_output=True, text=True).stdout)
    n = a.summary["events"]
    cmd = [a.produce, "--brokers", a.brokers, "--file-topics", data]
    print(" ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    secs = time.monotonic() - t0
    try:
        summary = json.loads(r.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        summary = {}
    if r.returncode != 0 or summary.get("delivered") != n or summary.get("topics") != a.tables:
        result(a.results, peer="backlog", batch=-1, what="produce", case="tables", events=n, status="failed",
               verified="not run", note=f"produce exited {r.returncode}: {r.stderr.decode(errors='replace')[-300:]}")
        return 1
    result(a.results, peer="backlog", batch=-1, what="produce", case="tables", events=n, seconds=secs,
           status="ok", verified="every record acknowledged (acks=all)", topic=f"{prefix}.public.t0001...",
           topics=a.tables, tombstones=summary.get("tombstones"), rows=a.summary["rows"])
    run_ingest(a, prefix, n, 0, warm=True, case="tables")
    run_apply(a, n, 0, warm=True, case="tables", events=data)
    if a.reference:
        v = verify_tables(a, a.reference)
        if v != "ok":
            print(f"the warm-up apply's replica: {v}", file=sys.stderr, flush=True)
            shutil.rmtree(a.reference, ignore_errors=True)
            a.reference = None
    bad = 0
    for run in range(1, a.repeat + 1):
        i = run_ingest(a, prefix, n, run, case="tables")
        ap = run_apply(a, n, run, case="tables", events=data)
        bad += (not i or i["status"] != "ok") + (not ap or ap["status"] != "ok")
        if i and ap and i.get("seconds") and ap.get("seconds"):
            print(f"tables run {run}: ingest {n / i['seconds']:,.0f} events/s, apply {n / ap['seconds']:,.0f} "
                  f"events/s, ratio {ap['seconds'] / i['seconds']:.3f}", file=sys.stderr, flush=True)
    if a.reference:
        shutil.rmtree(a.reference, ignore_errors=True)
    os.unlink(data)
    return bad


if __name__ == "__main__":
    sys.exit(main())
