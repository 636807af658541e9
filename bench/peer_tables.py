#!/usr/bin/env python3
"""The cost of a table (issue 10): cdcstore on a whole schema of small tables.

For each table count N (--tables, repeatable): generates with bench/gen_tables.py N tables of a few
rows (topics shop.public.t0001...), then --repeat times: a fresh `cdcstore apply` of the file under
`/usr/bin/time -v` (wall clock, peak RSS); `cdcstore stats --db D` on the result, the open a later
reader pays (read-only, metadata reading included); and `cdcstore apply` of an empty file, the open
of the next writer (read-write: the write-ahead log is replayed and flushed). Checks every run: the
replica lists N tables and holds the generator's number of live rows. The same number of events in
one table (gen_tables.py --single) is the baseline of the per-event speed. Appends one JSON record
per case (medians over the repeats, and every sample) to --results.

  python3 bench/peer_tables.py --bin build/cdcstore --tables 200 --tables 1000 --repeat 3 \
      --workdir bench/out/scratch/tables --results bench/out/results.jsonl
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd):
    """Runs cmd under /usr/bin/time -v: (returncode, wall seconds, peak RSS bytes, cpu %, stdout)."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    err = p.stderr
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", err)
    secs = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))) if wall else None
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    cpu = re.search(r"Percent of CPU this job got: (\d+)%", err)
    return (p.returncode, secs, int(rss.group(1)) * 1024 if rss else None,
            int(cpu.group(1)) if cpu else None, p.stdout, err)


def load1():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return None


def run_case(a, label, ntables, single):
    data = os.path.join(a.workdir, f"{label}.jsonl")
    gen = [sys.executable, os.path.join(HERE, "gen_tables.py"), "--tables", str(ntables), "--rows", str(a.rows),
           "--out", data, "--summary"] + (["--single"] if single else [])
    summary = json.loads(subprocess.run(gen, check=True, capture_output=True, text=True).stdout)
    db = os.path.join(a.workdir, f"{label}-db")
    applies, opens, reopens, notes = [], [], [], []
    empty = os.path.join(a.workdir, "empty.jsonl")
    open(empty, "w").close()
    ok = True
    for _ in range(a.repeat):
        shutil.rmtree(db, ignore_errors=True)
        rc, secs, rss, cpu, _, err = timed([a.bin, "apply", "--db", db, data])
        if rc != 0:
            ok = False
            notes.append(f"apply exit {rc}: {err.strip()[-300:]}")
            break
        applies.append({"seconds": secs, "peak_rss_bytes": rss, "cpu_percent": cpu, "load": load1()})
        rc, secs, rss, cpu, out, err = timed([a.bin, "stats", "--db", db, "--json"])
        if rc != 0:
            ok = False
            notes.append(f"stats exit {rc}: {err.strip()[-300:]}")
            break
        opens.append({"seconds": secs, "peak_rss_bytes": rss, "load": load1()})
        # The next writer's open: read-write, the write-ahead log replayed and flushed.
        rc, secs, rss, cpu, _, err = timed([a.bin, "apply", "--db", db, empty])
        if rc != 0:
            ok = False
            notes.append(f"reopen exit {rc}: {err.strip()[-300:]}")
            break
        reopens.append({"seconds": secs, "peak_rss_bytes": rss, "load": load1()})
        tables = subprocess.run([a.bin, "tables", "--db", db], capture_output=True, text=True).stdout.split()
        live = json.loads(out).get("total", {}).get("rows_live")
        if len(tables) != summary["tables"] or live != summary["rows"]:
            ok = False
            notes.append(f"replica holds {len(tables)} tables and {live} live rows, "
                         f"expected {summary['tables']} and {summary['rows']}")
    files = len([f for f in os.listdir(db) if f.endswith(".sst")]) if os.path.isdir(db) else None
    shutil.rmtree(db, ignore_errors=True)
    med = lambda xs, k: statistics.median(x[k] for x in xs) if xs else None
    rec = {"peer": "tables", "batch": -1, "case": label, "tables": summary["tables"], "events": summary["events"],
           "rows": summary["rows"], "repeat": len(applies), "status": "ok" if ok else "failed",
           "verified": (f"{summary['tables']} tables, {summary['rows']} live rows" if ok else "; ".join(notes)),
           "apply_seconds": med(applies, "seconds"), "apply_peak_rss_bytes": med(applies, "peak_rss_bytes"),
           "apply_cpu_percent": med(applies, "cpu_percent"),
           "open_seconds": med(opens, "seconds"), "open_peak_rss_bytes": med(opens, "peak_rss_bytes"),
           "reopen_seconds": med(reopens, "seconds"), "reopen_peak_rss_bytes": med(reopens, "peak_rss_bytes"),
           "sst_files": files, "applies": applies, "opens": opens, "reopens": reopens}
    if rec["apply_seconds"]:
        rec["events_per_s"] = summary["events"] / rec["apply_seconds"]
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tables", type=int, action="append", required=True)
    ap.add_argument("--rows", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--results", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    recs = []
    for n in a.tables:
        base = run_case(a, f"one-table-{n * a.rows}-rows", n, True)
        base["case_of"] = n
        rec = run_case(a, f"{n}-tables", n, False)
        if base.get("events_per_s") and rec.get("events_per_s"):
            rec["speed_vs_one_table"] = rec["events_per_s"] / base["events_per_s"]
        recs += [base, rec]
    with open(a.results, "a") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
    for r in recs:
        print(json.dumps({k: v for k, v in r.items() if k not in ("applies", "opens", "reopens")}))
    return 0 if all(r["status"] == "ok" for r in recs) else 1


if __name__ == "__main__":
    sys.exit(main())
