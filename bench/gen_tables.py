#!/usr/bin/env python3
"""Seeded generator of a whole schema's Debezium topics, as `kcat -C -J` prints them (issue 10).

Users replicate whole schemas: hundreds or thousands of tables, most of them small. This writes
one file of `kcat -C -J` lines for --tables tables `public.t0001` ... on the topics
`<prefix>.public.t0001` ..., each with --rows rows: first the snapshot of every table (op "r" at
the consistent point C; `snapshot` "first" on the very first record, "last_in_data_collection" on
each table's last one, "last" on the snapshot's last record, as Debezium 3 marks them), then
streamed transactions over all tables: updates of --updates rows per table and a delete (followed
by its tombstone) of --deletes rows per table, with increasing LSNs above C. Topics are read
table after table (every table is one topic of one partition, offsets from 0).

  python3 bench/gen_tables.py --tables 1000 --rows 5 --out tables.jsonl [--expected-rows]

With --single, the same number of events goes to one table (rows = tables x rows), the baseline
against which the per-event speed of many tables is compared. --summary prints the number of
events and the final number of rows per table as JSON on stdout.
Python 3.11 standard library only; the same options give the same bytes.
"""

import argparse
import json
import random
import sys

EPOCH_MS = 1_767_225_600_000
SNAPSHOT_LSN = 24_000_000_000


def envelope(prefix, table, op, before, after, lsn, snapshot, ts_ms, txid, seq):
    return {
        "before": before, "after": after,
        "source": {"version": "3.6.1.Final", "connector": "postgresql", "name": prefix,
                   "ts_ms": ts_ms, "snapshot": snapshot, "db": "shop", "sequence": seq,
                   "schema": "public", "table": table, "txId": txid, "lsn": lsn, "xmin": None},
        "transaction": None, "op": op, "ts_ms": ts_ms + 5,
    }


def row(rng, table, rid, rev):
    return {"id": rid, "name": f"{table}-{rid}", "qty": rng.randint(0, 1000),
            "price": f"{rng.randint(0, 99999)}.{rng.randint(0, 99):02d}", "rev": rev}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=5, help="snapshot rows per table")
    ap.add_argument("--updates", type=int, default=2, help="streamed updates per table")
    ap.add_argument("--deletes", type=int, default=1, help="streamed deletes per table")
    ap.add_argument("--prefix", default="shop")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--single", action="store_true", help="all rows in one table (the baseline)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)

    if a.single:
        tables = [("t0001", a.tables * a.rows, a.tables * a.updates, a.tables * a.deletes)]
    else:
        tables = [(f"t{i:04d}", a.rows, a.updates, a.deletes) for i in range(1, a.tables + 1)]
    offsets = {}
    lines = []
    events = 0

    def emit(table, key, payload):
        nonlocal events
        topic = f"{a.prefix}.public.{table}"
        off = offsets.get(topic, 0)
        offsets[topic] = off + 1
        lines.append(json.dumps({"topic": topic, "partition": 0, "offset": off, "tstype": "create",
                                 "ts": EPOCH_MS + events, "key": json.dumps(key, separators=(",", ":")),
                                 "payload": None if payload is None else
                                 json.dumps(payload, separators=(",", ":"))}, separators=(",", ":")))
        events += 1

    # The snapshot: every table in turn, all at the consistent point.
    state = {}
    total_snap = sum(t[1] for t in tables)
    n = 0
    for name, rows, _, _ in tables:
        state[name] = {}
        for rid in range(1, rows + 1):
            n += 1
            r = row(rng, name, rid, 0)
            state[name][rid] = r
            mark = ("first" if n == 1 else "last" if n == total_snap
                    else "last_in_data_collection" if rid == rows else "true")
            emit(name, {"id": rid}, envelope(a.prefix, name, "r", None, r, SNAPSHOT_LSN, mark, EPOCH_MS, 767, None))

    # The stream: one transaction per table, in table order, LSNs increasing.
    lsn = SNAPSHOT_LSN + 1000
    txid = 1000
    for name, rows, nupd, ndel in tables:
        txid += 1
        live = sorted(state[name])
        for _ in range(nupd):
            rid = rng.choice(live)
            lsn += 48
            before = state[name][rid]
            after = dict(before, qty=rng.randint(0, 1000), rev=before["rev"] + 1)
            state[name][rid] = after
            emit(name, {"id": rid}, envelope(a.prefix, name, "u", None, after, lsn, "false",
                                             EPOCH_MS + 1000 + txid, txid, json.dumps([None, str(lsn)])))
        for rid in rng.sample(live, min(ndel, len(live))):
            lsn += 48
            emit(name, {"id": rid}, envelope(a.prefix, name, "d", {"id": rid}, None, lsn, "false",
                                             EPOCH_MS + 1000 + txid, txid, json.dumps([None, str(lsn)])))
            emit(name, {"id": rid}, None)
            del state[name][rid]

    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if a.summary:
        print(json.dumps({"tables": len(tables), "events": events,
                          "rows": sum(len(s) for s in state.values())}))


if __name__ == "__main__":
    sys.exit(main())
