#!/usr/bin/env python3
"""Peer (b): an embedded SQLite replica (Python's sqlite3), one transaction per batch of N events.

Each batch is reduced to the newest event per key by LSN, then applied with
`INSERT ... ON CONFLICT(id) DO UPDATE ... WHERE excluded.lsn > items.lsn`; deletes are soft deletes
that keep the LSN, so a late older event cannot bring a row back. Two ways to decode, both timed from
the first line read to the last commit:

  --decode json1   the raw lines go into a temporary table and SQLite's JSON functions extract the
                   fields (C speed): reduce and upsert are one INSERT ... SELECT per batch;
  --decode python  json.loads in Python, reduce in a dict, executemany of the upsert.

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
from common import (COLUMNS, compare_csv, dir_bytes, pg_csv_line, result,  # noqa: E402
                    self_cpu_seconds, self_maxrss)

SCHEMA = """
CREATE TABLE items (
  id INTEGER PRIMARY KEY, customer_id INTEGER, status TEXT, amount TEXT, note TEXT,
  updated_at TEXT, lsn INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0);
CREATE TEMP TABLE batch (line TEXT);
"""

UPSERT_SET = """
ON CONFLICT(id) DO UPDATE SET customer_id = excluded.customer_id, status = excluded.status,
  amount = excluded.amount, note = excluded.note, updated_at = excluded.updated_at,
  lsn = excluded.lsn, deleted = excluded.deleted
WHERE excluded.lsn > items.lsn
"""

# One statement per batch: decode with json1, keep the newest event per key, upsert with the guard.
# A delete's row keeps only its key and LSN (the columns are not needed once deleted).
APPLY_JSON1 = """
INSERT INTO items (id, customer_id, status, amount, note, updated_at, lsn, deleted)
SELECT id, customer_id, status, amount, note, updated_at, lsn, deleted FROM (
  SELECT coalesce(p ->> '$.after.id', p ->> '$.before.id') AS id,
         p ->> '$.after.customer_id' AS customer_id, p ->> '$.after.status' AS status,
         p ->> '$.after.amount' AS amount, p ->> '$.after.note' AS note,
         p ->> '$.after.updated_at' AS updated_at, p ->> '$.source.lsn' AS lsn,
         (p ->> '$.op') = 'd' AS deleted,
         row_number() OVER (PARTITION BY coalesce(p ->> '$.after.id', p ->> '$.before.id')
                            ORDER BY p ->> '$.source.lsn' DESC) AS rn
  FROM (SELECT line ->> '$.payload' AS p FROM batch) WHERE p IS NOT NULL)
WHERE rn = 1
""" + UPSERT_SET

UPSERT_PY = """
INSERT INTO items (id, customer_id, status, amount, note, updated_at, lsn, deleted)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
""" + UPSERT_SET


def apply_json1(con, lines):
    con.execute("BEGIN")
    con.execute("DELETE FROM batch")
    con.executemany("INSERT INTO batch VALUES (?)", ((l,) for l in lines))
    con.execute(APPLY_JSON1)
    con.execute("COMMIT")


def apply_python(con, lines):
    newest = {}
    loads = json.loads
    for line in lines:
        payload = loads(line)["payload"]
        if payload is None:
            continue                              # tombstone: no change
        e = loads(payload)
        lsn = e["source"]["lsn"]
        after = e["after"]
        if after is None:
            key = e["before"]["id"]
            row = (key, None, None, None, None, None, lsn, 1)
        else:
            key = after["id"]
            row = (key, after["customer_id"], after["status"], after["amount"], after["note"],
                   after["updated_at"], lsn, 0)
        old = newest.get(key)
        if old is None or lsn > old[6]:
            newest[key] = row
    con.execute("BEGIN")
    con.executemany(UPSERT_PY, newest.values())
    con.execute("COMMIT")


def export(con, path):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(COLUMNS) + "\n")
        for row in con.execute("SELECT id, customer_id, status, amount, note, updated_at "
                               "FROM items WHERE NOT deleted ORDER BY id"):
            f.write(pg_csv_line(row))


def main():
    p = argparse.ArgumentParser(description="SQLite upsert peer")
    p.add_argument("--events", required=True)
    p.add_argument("--expected", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--decode", choices=("json1", "python"), default="json1")
    p.add_argument("--db", required=True, help="database file (removed first)")
    p.add_argument("--results")
    a = p.parse_args()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(a.db + suffix):
            os.unlink(a.db + suffix)
    con = sqlite3.connect(a.db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.executescript(SCHEMA)
    apply = apply_json1 if a.decode == "json1" else apply_python
    n = 0
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
    export(con, got)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    verified = compare_csv(a.expected, got)
    os.unlink(got)
    result(a.results, peer=f"sqlite-{a.decode}", batch=a.batch, events=n, seconds=secs,
           peak_rss_bytes=self_maxrss(), disk_bytes=dir_bytes(a.db), cpu_percent=cpu,
           status="ok" if verified == "ok" else "failed", verified=verified,
           note=f"SQLite {sqlite3.sqlite_version}, WAL, synchronous=NORMAL, decode={a.decode}")
    return 0 if verified == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
