#!/usr/bin/env python3
"""Peer (b): an embedded SQLite replica (Python's sqlite3), one transaction per batch of N events.

Each batch is reduced to the newest event per key by LSN, then applied with
`INSERT ... ON CONFLICT(id) DO UPDATE ... WHERE excluded.lsn > items.lsn`; deletes are soft deletes
that keep the LSN, so a late older event cannot bring a row back. Two ways to decode, both timed from
the first line read to the last commit:

  --decode json1   the raw lines go into a temporary table and SQLite's JSON functions extract the
                   fields (C speed): reduce and upsert are one INSERT ... SELECT per batch;
  --decode python  json.loads in Python, reduce in a dict, executemany of the upsert.

  --preload        (json1) every line is first loaded into a table of its own, timed apart
                   (`load_seconds`): the timed part is then each batch's json1 decode, reduce and
                   upsert from that table, one statement per batch, as PostgreSQL's apply_batch
                   reads cdc_events; the load counted in is the same run's two times added.

--shape S applies a stream of gen.py's row shape S (its table, its columns; booleans kept as
1/0 and printed t/f) and records it as the shapes step's "shape-sqlite" (with --preload); without
it, public.items.
Settings: journal_mode=WAL, synchronous=NORMAL (the usual embedded choice); final state is written
as COPY CSV and compared with the expected CSV. Peak memory is this process's ru_maxrss.
"""

import argparse
import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (compare_csv, dir_bytes, pg_csv_line, result,  # noqa: E402
                    self_cpu_seconds, self_maxrss)
from gen import SHAPES  # noqa: E402

INTEGER_TYPES = ("bigint", "int", "smallint", "boolean")   # booleans as 1/0, printed t/f


def statements(shape, source="batch"):
    """(schema, the json1 apply, the Python-decoded upsert) for a gen.py shape's table. `source`
    is the table of raw lines the json1 apply reads: the temporary table of one batch, or with
    --preload the loaded lines between two line numbers."""
    t, cols = shape.table, shape.names[1:]
    types = ", ".join(f"{c} {'INTEGER' if ty in INTEGER_TYPES else 'TEXT'}"
                      for c, ty in shape.columns[1:])
    schema = (f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, {types}, lsn INTEGER NOT NULL, "
              f"deleted INTEGER NOT NULL DEFAULT 0);\nCREATE TEMP TABLE batch (line TEXT);\n")
    upsert_set = (f"ON CONFLICT(id) DO UPDATE SET "
                  + ", ".join(f"{c} = excluded.{c}" for c in cols)
                  + f", lsn = excluded.lsn, deleted = excluded.deleted WHERE excluded.lsn > {t}.lsn")
    listed = ", ".join(cols)
    # One statement per batch: decode with json1, keep the newest event per key, upsert with the
    # guard. A delete's row keeps only its key and LSN (the columns are not needed once deleted).
    json1 = f"""
INSERT INTO {t} (id, {listed}, lsn, deleted)
SELECT id, {listed}, lsn, deleted FROM (
  SELECT coalesce(p ->> '$.after.id', p ->> '$.before.id') AS id,
         {", ".join(f"p ->> '$.after.{c}' AS {c}" for c in cols)},
         p ->> '$.source.lsn' AS lsn, (p ->> '$.op') = 'd' AS deleted,
         row_number() OVER (PARTITION BY coalesce(p ->> '$.after.id', p ->> '$.before.id')
                            ORDER BY p ->> '$.source.lsn' DESC) AS rn
  FROM (SELECT line ->> '$.payload' AS p FROM {source}) WHERE p IS NOT NULL)
WHERE rn = 1
{upsert_set}"""
    py = (f"INSERT INTO {t} (id, {listed}, lsn, deleted) VALUES "
          f"({', '.join('?' * (len(cols) + 3))}) {upsert_set}")
    return schema, json1, py


def apply_json1(con, sql, lines):
    con.execute("BEGIN")
    con.execute("DELETE FROM batch")
    con.executemany("INSERT INTO batch VALUES (?)", ((l,) for l in lines))
    con.execute(sql)
    con.execute("COMMIT")


def apply_python(con, sql, lines, cols):
    newest = {}
    loads = json.loads
    blank = (None,) * len(cols)
    for line in lines:
        payload = loads(line)["payload"]
        if payload is None:
            continue                              # tombstone: no change
        e = loads(payload)
        lsn = e["source"]["lsn"]
        after = e["after"]
        if after is None:
            key = e["before"]["id"]
            row = (key,) + blank + (lsn, 1)
        else:
            key = after["id"]
            row = (key,) + tuple(after[c] for c in cols) + (lsn, 0)
        old = newest.get(key)
        if old is None or lsn > old[-2]:
            newest[key] = row
    con.execute("BEGIN")
    con.executemany(sql, newest.values())
    con.execute("COMMIT")


def preload(con, path):
    """--preload: every line into ev.events(n, line), n the 1-based line number, in an attached
    database file of its own (so the replica's size stays its own). Returns (lines, seconds,
    CPU seconds) of the load."""
    con.execute("CREATE TABLE ev.events (n INTEGER PRIMARY KEY, line TEXT)")
    t0, c0 = time.monotonic(), self_cpu_seconds()
    con.execute("BEGIN")
    with open(path, encoding="utf-8") as f:
        con.executemany("INSERT INTO ev.events VALUES (?, ?)", enumerate(f, 1))
    con.execute("COMMIT")
    n = con.execute("SELECT count(*) FROM ev.events").fetchone()[0]
    return n, time.monotonic() - t0, self_cpu_seconds() - c0


def export(con, shape, path):
    names = shape.names
    bools = [i for i, (_, ty) in enumerate(shape.columns) if ty == "boolean"]
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(names) + "\n")
        for row in con.execute(f"SELECT {', '.join(names)} FROM {shape.table} "
                               "WHERE NOT deleted ORDER BY id"):
            if bools:
                row = list(row)
                for i in bools:
                    if row[i] is not None:
                        row[i] = bool(row[i])
            f.write(pg_csv_line(row))


def main():
    p = argparse.ArgumentParser(description="SQLite upsert peer")
    p.add_argument("--events", required=True)
    p.add_argument("--expected", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--decode", choices=("json1", "python"), default="json1")
    p.add_argument("--shape", choices=tuple(SHAPES),
                   help="the events are of this gen.py row shape (the shapes step's records)")
    p.add_argument("--preload", action="store_true",
                   help="json1 only: load every line into a table first (timed apart), then time "
                        "the batches' decode and upsert alone")
    p.add_argument("--db", required=True, help="database file (removed first)")
    p.add_argument("--results")
    a = p.parse_args()
    if a.preload and a.decode != "json1":
        p.error("--preload goes with --decode json1")
    shape = SHAPES[a.shape or "medium"]
    evdb = a.db + ".events"
    for path in (a.db, evdb):
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)
    con = sqlite3.connect(a.db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    source = "ev.events WHERE n > :lo AND n <= :hi" if a.preload else "batch"
    schema, json1_sql, py_sql = statements(shape, source)
    con.executescript(schema)
    cols = shape.names[1:]
    extra = {}
    n = 0
    if a.preload:
        con.execute("ATTACH DATABASE ? AS ev", (evdb,))
        con.execute("PRAGMA ev.journal_mode=OFF")
        con.execute("PRAGMA ev.synchronous=OFF")
        lines, load_s, load_cpu = preload(con, a.events)
        extra = {"load_seconds": load_s, "load_cpu_seconds": load_cpu}
        t0 = time.monotonic()
        c0 = self_cpu_seconds()
        for lo in range(0, lines, a.batch):
            con.execute("BEGIN")
            con.execute(json1_sql, {"lo": lo, "hi": min(lo + a.batch, lines)})
            con.execute("COMMIT")
        n = lines
    else:
        apply = ((lambda con, lines: apply_json1(con, json1_sql, lines)) if a.decode == "json1"
                 else (lambda con, lines: apply_python(con, py_sql, lines, cols)))
        t0 = time.monotonic()
        c0 = self_cpu_seconds()
        with open(a.events, encoding="utf-8") as f:
            lines = []
            for line in f:
                lines.append(line)
                if len(lines) == a.batch:
                    apply(con, lines)
                    n += len(lines)
                    lines = []
            if lines:
                apply(con, lines)
                n += len(lines)
    secs = time.monotonic() - t0
    cpu = round(100 * (self_cpu_seconds() - c0) / secs)
    got = a.db + ".csv"
    export(con, shape, got)
    if a.preload:
        con.execute("DETACH DATABASE ev")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    verified = compare_csv(a.expected, got)
    os.unlink(got)
    peer = f"sqlite-{a.decode}"
    note = f"SQLite {sqlite3.sqlite_version}, WAL, synchronous=NORMAL, decode={a.decode}"
    if a.shape:
        peer = "shape-sqlite" if a.preload else f"shape-{peer}"
        extra["shape"] = a.shape
    if a.preload:
        note += (f"; lines loaded into a table first ({extra['load_seconds']:.1f} s, not in "
                 "`seconds`), then each batch decoded by json1 and upserted in one statement")
        if os.path.exists(evdb):
            os.unlink(evdb)
    result(a.results, peer=peer, batch=a.batch, events=n, seconds=secs,
           peak_rss_bytes=self_maxrss(), disk_bytes=dir_bytes(a.db), cpu_percent=cpu,
           status="ok" if verified == "ok" else "failed", verified=verified, note=note, **extra)
    return 0 if verified == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
