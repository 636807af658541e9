#!/usr/bin/env python3
"""Native programs under /usr/bin/time -v: cdcstore itself and the two limits.

  peer_cmd.py cdcstore --bin build/cdcstore --events F --expected E --batch N --db DIR
      `cdcstore apply --db DIR --batch-size N --batch-mib 0 F`, timed as a whole (wall clock of the command,
      peak RSS from time -v), then `cdcstore export --db DIR --table public.items --format csv`
      compared byte for byte with E; disk = bytes allocated under DIR after the apply.
  peer_cmd.py cdcstore ... --sync        the same with `apply --sync` (fsync every batch)
  peer_cmd.py cdcstore ... --shape S     a stream of gen.py's row shape S (its table exported),
                                         recorded as the shapes step's "shape-cdcstore"
  peer_cmd.py decode --bin decode_only --events F --threads T
  peer_cmd.py rocksdb --bin rocksdb_raw --events F --db DIR

A missing cdcstore binary is reported as status "missing", not as a failure.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import compare_csv, count_lines, dir_bytes, result  # noqa: E402
from gen import SHAPES  # noqa: E402

TIME = "/usr/bin/time"


def timed(cmd, stdout_path=None):
    """Run cmd under GNU time -v; returns (rc, stdout text, stderr text, wall s, max RSS bytes)."""
    fd, tfile = tempfile.mkstemp(prefix="cdcbench-time-")
    os.close(fd)
    full = [TIME, "-v", "-o", tfile, *cmd] if os.path.exists(TIME) else list(cmd)
    out = open(stdout_path, "wb") if stdout_path else subprocess.PIPE
    t0 = time.monotonic()
    r = subprocess.run(full, stdout=out, stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    if stdout_path:
        out.close()
    rss = None
    timed.cpu_percent = None
    with open(tfile) as f:
        for line in f:
            if "Maximum resident set size" in line:
                rss = int(line.rsplit(":", 1)[1]) * 1024
            elif "Percent of CPU this job got" in line:
                try:
                    timed.cpu_percent = int(line.rsplit(":", 1)[1].strip().rstrip("%"))
                except ValueError:
                    pass
    os.unlink(tfile)
    so = "" if stdout_path else r.stdout.decode("utf-8", "replace")
    return r.returncode, so, r.stderr.decode("utf-8", "replace"), wall, rss


def cmd_cdcstore(a):
    n = count_lines(a.events)
    peer = "cdcstore-sync" if a.sync else "cdcstore"
    table = "public.items"
    extra = {}
    if a.shape:
        peer = "shape-" + peer
        table = f"public.{SHAPES[a.shape].table}"
        extra = {"shape": a.shape, "input_bytes": os.path.getsize(a.events)}
    if not (os.path.isfile(a.bin) and os.access(a.bin, os.X_OK)):
        result(a.results, peer=peer, batch=a.batch, events=n, status="missing",
               verified="not run", note=f"{a.bin} does not exist (the CLI is not built yet)",
               **extra)
        return 0
    shutil.rmtree(a.db, ignore_errors=True)
    # batches of exactly --batch records, as the peers' (not also cut at 64 MiB)
    cmd = [a.bin, "apply", "--db", a.db, "--batch-size", str(a.batch), "--batch-mib", "0"]
    cmd += ["--sync"] if a.sync else []
    cmd += [a.events]
    rc, out, err, wall, rss = timed(cmd)
    cpu = timed.cpu_percent
    log = (out + err).strip()
    if rc != 0:
        result(a.results, peer=peer, batch=a.batch, events=n, status="failed",
               verified="not run", peak_rss_bytes=rss,
               note=f"apply exited {rc}: {log[-400:]}", **extra)
        return 1
    disk = dir_bytes(a.db)
    got = a.db.rstrip("/") + ".csv"
    erc, _, eerr, ewall, erss = timed([a.bin, "export", "--db", a.db, "--table", table,
                                       "--format", "csv"], stdout_path=got)
    if erc != 0:
        verified = f"export exited {erc}: {eerr.strip()[-300:]}"
    else:
        verified = compare_csv(a.expected, got)
    result(a.results, peer=peer, batch=a.batch, events=n, seconds=wall,
           peak_rss_bytes=rss, disk_bytes=disk,
           status="ok" if verified == "ok" else "failed", verified=verified,
           export_seconds=ewall, export_peak_rss_bytes=erss, cpu_percent=cpu,
           note=("apply output: " + log.replace("\n", " | ")[-300:]) if log else "", **extra)
    if os.path.exists(got):
        os.unlink(got)
    if a.keep and verified == "ok":
        shutil.rmtree(a.keep, ignore_errors=True)
        os.rename(a.db, a.keep)               # for the reconcile figure (peer_pg.py)
    shutil.rmtree(a.db, ignore_errors=True)
    return 0 if verified == "ok" else 1


def best_of(n, run):
    """Run a limit program n times; keep the fastest run (limits are bounds, not averages)."""
    best = None
    for _ in range(max(n, 1)):
        rc, out, err, wall, rss = run()
        if rc != 0:
            return rc, out, err, None, rss
        r = json.loads(out)
        r["cpu_percent"] = timed.cpu_percent
        if best is None or r["seconds"] < best[0]["seconds"]:
            best = (r, rss)
    return 0, "", "", best[0], best[1]


def cmd_decode(a):
    rc, out, err, r, rss = best_of(a.repeat, lambda: timed([a.bin, a.events, str(a.threads)]))
    if rc != 0:
        result(a.results, peer=f"decode-only-{a.threads}t", batch=0, status="failed",
               verified="n/a", note=f"exit {rc}: {(out + err)[-300:]}")
        return 1
    result(a.results, peer=f"decode-only-{a.threads}t", batch=0, events=r["events"],
           seconds=r["seconds"], peak_rss_bytes=rss, disk_bytes=0, status="ok",
           cpu_percent=r["cpu_percent"],
           verified="n/a (limit: nothing stored)",
           note=f"cJSON parse of record and envelope, {a.threads} thread(s); file read "
                f"into memory first (not timed); best of {a.repeat}")
    return 0


def cmd_rocksdb(a):
    def once():
        shutil.rmtree(a.db, ignore_errors=True)
        return timed([a.bin, a.events, a.db, str(a.write_batch)])
    rc, out, err, r, rss = best_of(a.repeat, once)
    if rc != 0:
        result(a.results, peer="rocksdb-raw", batch=0, status="failed", verified="n/a",
               note=f"exit {rc}: {(out + err)[-300:]}")
        return 1
    result(a.results, peer="rocksdb-raw", batch=0, events=r["events"], seconds=r["seconds"],
           cpu_percent=r["cpu_percent"],
           peak_rss_bytes=rss, disk_bytes=dir_bytes(a.db), status="ok",
           verified="n/a (limit: blind writes)",
           note=f"blind Put/Delete of the same keys, WriteBatch of {a.write_batch}, default "
                f"options; keys located before the clock starts; best of {a.repeat}")
    shutil.rmtree(a.db, ignore_errors=True)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cdcstore")
    c.add_argument("--batch", type=int, required=True)
    c.add_argument("--expected", required=True)
    c.add_argument("--db", required=True)
    c.add_argument("--sync", action="store_true", help="apply --sync (fsync every batch)")
    c.add_argument("--keep", help="move the verified replica here instead of removing it")
    c.add_argument("--shape", choices=tuple(SHAPES),
                   help="the events are of this gen.py row shape (the shapes step's records)")
    d = sub.add_parser("decode")
    d.add_argument("--threads", type=int, default=1)
    r = sub.add_parser("rocksdb")
    r.add_argument("--db", required=True)
    r.add_argument("--write-batch", type=int, default=1000)
    for s in (d, r):
        s.add_argument("--repeat", type=int, default=3, help="runs; the fastest is kept")
    for s in (c, d, r):
        s.add_argument("--bin", required=True)
        s.add_argument("--events", required=True)
        s.add_argument("--results")
    a = p.parse_args()
    return {"cdcstore": cmd_cdcstore, "decode": cmd_decode, "rocksdb": cmd_rocksdb}[a.what](a)


if __name__ == "__main__":
    sys.exit(main())
