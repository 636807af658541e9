#!/usr/bin/env python3
"""`cdcstore ingest` draining a Kafka backlog against `cdcstore apply` of the same file, side by side.

  peer_backlog.py --bin CDC --produce PRODUCE --brokers HOST:PORT --events F --expected E
                  --workdir W --results R [--partitions 4] [--batch 10000] [--repeat 2] [--broker-pid PID]

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
One record per run and program (peer "backlog", what "ingest" or "apply"), one for the producer.
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


def broker_cpu(a):
    return proc_cpu_seconds(a.broker_pid) if a.broker_pid else None


def run_ingest(a, topic, n, run, warm=False):
    db = os.path.join(a.workdir, f"ingest-{run}")
    shutil.rmtree(db, ignore_errors=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    log = os.path.join(a.workdir, f"ingest-{run}.log")
    cmd = [a.bin, "ingest", "--db", db, "--brokers", a.brokers, "--topic", topic, "--from-beginning",
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
    base = dict(peer="backlog", batch=-1, what="ingest", run=run, events=n, partitions=a.partitions,
                peak_rss_bytes=ru.ru_maxrss * 1024, exit=rc)
    if end is None:
        result(a.results, **base, status="failed", verified="not run",
               note=f"the ingest did not reach {n} records (last figures {got}, exit {rc}): "
                    + " | ".join(tail[-3:])[-300:])
        return None
    v = verify(a, db)
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


def run_apply(a, n, run, warm=False):
    db = os.path.join(a.workdir, f"apply-{run}")
    shutil.rmtree(db, ignore_errors=True)
    log = os.path.join(a.workdir, f"apply-{run}.log")
    cmd = [a.bin, "apply", "--db", db, "--batch-size", str(a.batch), a.events]
    print(" ".join(cmd), file=sys.stderr, flush=True)
    with open(log, "wb") as lf:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=lf, stderr=lf)
        rc, ru = reap(p, max(600, n / 1000))
        secs = time.monotonic() - t0
    cpu = ru.ru_utime + ru.ru_stime
    if warm:
        shutil.rmtree(db, ignore_errors=True)
        print(f"warm-up apply: exit {rc} in {secs:.2f} s", file=sys.stderr, flush=True)
        return None
    base = dict(peer="backlog", batch=-1, what="apply", run=run, events=n, peak_rss_bytes=ru.ru_maxrss * 1024,
                exit=rc)
    if rc != 0:
        tail = open(log, errors="replace").read().strip()[-300:]
        result(a.results, **base, status="failed", verified="not run", note=f"apply exited {rc}: {tail}")
        return None
    v = verify(a, db)
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
    a = p.parse_args()
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
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
