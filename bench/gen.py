#!/usr/bin/env python3
"""Seeded generator of Debezium PostgreSQL change streams, as `kcat -C -J` prints them.

The stream models the topic `<prefix>.public.items` of a Debezium 3.x PostgreSQL connector with
JsonConverter (schemas.enable=false) and decimal.handling.mode=string, for the table

    public.items(id bigint PRIMARY KEY, customer_id int, status text,
                 amount numeric(12,2), note text, updated_at text)   -- REPLICA IDENTITY DEFAULT

It writes one JSON object per line: a snapshot (op "r", all at the slot's consistent point C), then
streamed transactions with creates, updates, deletes (each followed by a tombstone) and primary-key
changes (delete of the old key, tombstone, create of the new key, one LSN). Two delivery faults are
mixed in:

  * duplicates: a connector restart re-publishes the last few dozen records it had already published,
    with the same content and new offsets;
  * late events: an older event of one key is delivered again after a newer one for the same key
    (a replay or a topic migration), including stale updates after a delete.

Neither changes the source, so the expected final state (written as PostgreSQL `COPY ... CSV HEADER`
would print `SELECT * FROM items ORDER BY id`) is the source table after the last original change.
Python 3.11 standard library only; the same seed and options give the same bytes.
"""

import argparse
import collections
import datetime
import json
import random
import sys

COLUMNS = ("id", "customer_id", "status", "amount", "note", "updated_at")
STATUSES = ("new", "paid", "shipped", "delivered", "refunded", "cancelled")
WORDS = ("order", "gift", "wrap", "express", "fragile", "call", "before", "delivery", "leave",
         "at", "door", "invoice", "customer", "asked", "for", "receipt", "blue", "large")
# Notes that exercise CSV quoting, NULL versus empty, escapes and UTF-8 in every consumer.
SPECIAL_NOTES = ("a, b", 'say "hi"', "line1\nline2", "", "café crème", "日本語のメモ", "  spaced  ",
                 "\\.", "back\\slash", "tab\there", "NULL", "cr\rlf", "emoji \U0001F4E6")
SNAPSHOT_XID = 767                     # pg_current_xact_id() of the snapshot transaction
BIG_ID_BASE = 5_000_000_000            # some keys above 2^32, as bigint keys can be
EPOCH_MS = 1_767_225_600_000           # 2026-01-01T00:00:00Z


def pg_csv_field(value):
    """One field as PostgreSQL COPY CSV prints it: NULL empty and unquoted, quoted when needed."""
    if value is None:
        return ""
    s = str(value)
    if s == "" or s == "\\." or any(c in s for c in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


def pg_csv_line(values):
    return ",".join(pg_csv_field(v) for v in values) + "\n"


def write_expected_csv(path, rows):
    """rows: dict id -> (customer_id, status, amount, note, updated_at)."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(COLUMNS) + "\n")
        for key in sorted(rows):
            f.write(pg_csv_line((key,) + rows[key]))


class Generator:
    def __init__(self, args, out):
        self.a = args
        self.rng = random.Random(args.seed)
        self.out = out
        self.topic = f"{args.prefix}.public.items"
        self.lines = 0                        # records written so far
        self.offsets = [0] * args.partitions  # next offset per partition
        self.rows = {}                        # the source table: id -> non-key columns
        self.live = []                        # ids of live rows, for O(1) random choice
        self.live_pos = {}
        self.deleted = collections.deque(maxlen=4096)   # recently deleted ids
        self.history = {}                     # id -> last few (key, payload) of original events
        self.recent = collections.deque(maxlen=256)     # last original records, for restarts
        self.next_id = 1
        self.next_big_id = BIG_ID_BASE
        self.lsn = args.start_lsn
        self.last_commit = None
        self.xid = 1000
        self.clock_ms = EPOCH_MS
        self.counts = collections.Counter()

    # ---- output ----

    def partition_of(self, key):
        return key % self.a.partitions

    def emit(self, key, payload, original=True):
        """Write one record. payload is the envelope as a JSON string, or None for a tombstone."""
        part = self.partition_of(key)
        self.clock_ms += self.rng.randint(0, 3)
        rec = {"topic": self.topic, "partition": part, "offset": self.offsets[part],
               "tstype": "create", "ts": self.clock_ms, "key": f'{{"id":{key}}}',
               "payload": payload}
        self.offsets[part] += 1
        self.out.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
        self.out.write("\n")
        self.lines += 1
        if original:
            self.recent.append((key, payload))
            if payload is not None:
                h = self.history.get(key)
                if h is None:
                    h = self.history[key] = collections.deque(maxlen=3)
                h.append(payload)
        if payload is None:
            self.counts["tombstone"] += 1

    def envelope(self, op, key, before, after, snapshot, lsn, ts_ms, txid, sequence):
        env = {
            "before": before,
            "after": after,
            "source": {
                "version": "3.6.1.Final", "connector": "postgresql", "name": self.a.prefix,
                "ts_ms": ts_ms, "snapshot": snapshot, "db": self.a.db, "sequence": sequence,
                "schema": "public", "table": "items", "txId": txid, "lsn": lsn, "xmin": None,
            },
            "transaction": None,
            "op": op,
            "ts_ms": ts_ms + self.rng.randint(5, 400),
        }
        return json.dumps(env, ensure_ascii=False, separators=(",", ":"))

    @staticmethod
    def image(key, row):
        return {"id": key, "customer_id": row[0], "status": row[1], "amount": row[2],
                "note": row[3], "updated_at": row[4]}

    @staticmethod
    def key_only_image(key):
        # REPLICA IDENTITY DEFAULT: a delete's before-image carries only the key columns.
        return {"id": key, "customer_id": None, "status": None, "amount": None, "note": None,
                "updated_at": None}

    # ---- the table ----

    def iso(self, ms):
        t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{(ms % 1000) * 1000:06d}Z"

    def make_note(self):
        r = self.rng.random()
        if r < 0.04:
            return None
        if r < 0.07:
            base = self.rng.choice(SPECIAL_NOTES)
        else:
            base = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 5)))
        width = self.a.row_width
        size = len(base.encode("utf-8"))
        if size < width:
            base += "." * (width - size)          # pad to exactly row_width bytes
        return base

    def make_amount(self):
        cents = self.rng.randint(1, 5_000_000)
        if self.rng.random() < 0.01:
            cents = -cents                         # refunds
        return f"{cents / 100:.2f}"

    def new_row(self, ms):
        cust = None if self.rng.random() < 0.02 else self.rng.randint(1, 2_000_000_000)
        return (cust, self.rng.choice(STATUSES), self.make_amount(), self.make_note(), self.iso(ms))

    def changed_row(self, row, ms):
        cust, status, amount, note, _ = row
        r = self.rng.random()
        if r < 0.5:
            status = self.rng.choice(STATUSES)
        elif r < 0.8:
            amount = self.make_amount()
        elif r < 0.95:
            note = self.make_note()
        else:
            cust = None if self.rng.random() < 0.1 else self.rng.randint(1, 2_000_000_000)
        return (cust, status, amount, note, self.iso(ms))

    def add_live(self, key, row):
        self.rows[key] = row
        self.live_pos[key] = len(self.live)
        self.live.append(key)

    def remove_live(self, key):
        del self.rows[key]
        pos = self.live_pos.pop(key)
        last = self.live.pop()
        if last != key:
            self.live[pos] = last
            self.live_pos[last] = pos

    def fresh_id(self):
        if self.rng.random() < 0.01:
            self.next_big_id += self.rng.randint(1, 1000)
            return self.next_big_id
        # Recreate a previously deleted key now and then: the replica must bring it back.
        if self.deleted and self.rng.random() < 0.1:
            key = self.deleted[self.rng.randrange(len(self.deleted))]
            if key not in self.rows:
                return key
        key = self.next_id
        self.next_id += 1
        return key

    # ---- the stream ----

    def snapshot(self):
        n = self.a.keys
        c = self.lsn
        ts = self.clock_ms
        for i in range(n):
            key = self.next_id
            self.next_id += 1
            row = self.new_row(ts - self.rng.randint(0, 86_400_000))
            self.add_live(key, row)
            flag = "first" if i == 0 else ("last" if i == n - 1 else "true")
            self.emit(key, self.envelope("r", key, None, self.image(key, row), flag, c, ts,
                                         SNAPSHOT_XID, None))
            self.counts["r"] += 1

    def transaction(self, budget):
        """One committed transaction of 1-4 changes using at most `budget` records."""
        self.xid += self.rng.randint(1, 3)
        self.clock_ms += self.rng.randint(0, 20)
        ts = self.clock_ms
        seq_commit = None if self.last_commit is None else str(self.last_commit)
        nchanges = self.rng.choice((1, 1, 1, 2, 2, 3, 4))
        target = self.a.keys
        for _ in range(nchanges):
            if budget <= 0:
                break
            live = max(len(self.live), 1)
            w_create = 0.12 * target / live
            w_delete = 0.12 * live / target
            w_pk = 0.03
            r = self.rng.random() * (0.70 + w_create + w_delete + w_pk)
            if r < 0.70 or not self.live:
                op = "u" if self.live else "c"
            elif r < 0.70 + w_create:
                op = "c"
            elif r < 0.70 + w_create + w_delete:
                op = "d"
            else:
                op = "k"
            need = {"u": 1, "c": 1, "d": 2, "k": 3}[op]
            if need > budget:
                op = "u" if self.live else "c"
                need = 1
            self.lsn += 8 * self.rng.randint(6, 60)
            lsn = self.lsn
            seq = json.dumps([seq_commit, str(lsn)], separators=(",", ":"))
            if op == "u":
                key = self.live[self.rng.randrange(len(self.live))]
                row = self.changed_row(self.rows[key], ts)
                self.rows[key] = row
                self.emit(key, self.envelope("u", key, None, self.image(key, row), "false", lsn, ts,
                                             self.xid, seq))
            elif op == "c":
                key = self.fresh_id()
                row = self.new_row(ts)
                self.add_live(key, row)
                self.emit(key, self.envelope("c", key, None, self.image(key, row), "false", lsn, ts,
                                             self.xid, seq))
            elif op == "d":
                key = self.live[self.rng.randrange(len(self.live))]
                self.remove_live(key)
                self.deleted.append(key)
                self.emit(key, self.envelope("d", key, self.key_only_image(key), None, "false", lsn,
                                             ts, self.xid, seq))
                self.emit(key, None)
            else:  # primary-key change: UPDATE items SET id = new, updated_at = now()
                old = self.live[self.rng.randrange(len(self.live))]
                new = self.next_id
                self.next_id += 1
                cust, status, amount, note, _ = self.rows[old]
                row = (cust, status, amount, note, self.iso(ts))
                self.remove_live(old)
                self.deleted.append(old)
                self.add_live(new, row)
                self.emit(old, self.envelope("d", old, self.key_only_image(old), None, "false", lsn,
                                             ts, self.xid, seq))
                self.emit(old, None)
                self.emit(new, self.envelope("c", new, None, self.image(new, row), "false", lsn, ts,
                                             self.xid, seq))
            self.counts[{"k": "pk_change"}.get(op, op)] += 1
            budget -= need
        self.lsn += 8 * self.rng.randint(3, 10)
        self.last_commit = self.lsn              # the commit record follows the changes

    def restart_replay(self, budget):
        """A connector restart: re-publish the last `n` original records, same content."""
        n = min(self.rng.randint(1, 2 * self.a.dup_block - 1), budget, len(self.recent))
        for key, payload in list(self.recent)[-n:]:
            self.emit(key, payload, original=False)
        self.counts["duplicate"] += n
        return n

    def late_event(self):
        """Deliver an older event of a key after a newer one (a replay). False if none found."""
        if self.deleted and self.rng.random() < 0.3:
            key = self.deleted[self.rng.randrange(len(self.deleted))]
        elif self.live:
            key = self.live[self.rng.randrange(len(self.live))]
        else:
            return False
        h = self.history.get(key)
        if h is None or len(h) < 2:
            return False
        payload = h[self.rng.randrange(len(h) - 1)]
        self.emit(key, payload, original=False)
        self.counts["late"] += 1
        if key not in self.rows:
            self.counts["late_after_delete"] += 1
        return True

    def run(self):
        total = self.a.events
        self.snapshot()
        dup_rate, late_rate = self.a.dup_rate, self.a.late_rate
        while self.lines < total:
            budget = total - self.lines
            r = self.rng.random()
            # Deficit-driven: fault records track their target share of the stream, spread out.
            if (dup_rate > 0 and self.counts["duplicate"] < dup_rate * self.lines
                    and r < 1.0 / self.a.dup_block and self.recent):
                self.restart_replay(budget)
            elif (late_rate > 0 and self.counts["late"] < late_rate * self.lines and r > 0.5
                  and self.late_event()):
                pass
            else:
                self.transaction(budget)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=1_000_000,
                   help="records in the file, tombstones and re-deliveries included (1,000,000)")
    p.add_argument("--keys", type=int, default=100_000,
                   help="rows in the snapshot; creates and deletes keep the table near this size")
    p.add_argument("--row-width", type=int, default=100, help="the note column is padded to N bytes")
    p.add_argument("--dup-rate", type=float, default=0.02,
                   help="share of records that are restart re-deliveries (0.02)")
    p.add_argument("--dup-block", type=int, default=40,
                   help="mean number of records a restart re-publishes (40)")
    p.add_argument("--late-rate", type=float, default=0.01,
                   help="share of records that are older events of a key delivered late (0.01)")
    p.add_argument("--partitions", type=int, default=1, help="topic partitions (key %% N)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--start-lsn", type=int, default=24_000_000_000,
                   help="the snapshot point C (default above 2^32, as in production)")
    p.add_argument("--prefix", default="bench", help="topic.prefix of the connector")
    p.add_argument("--db", default="bench", help="source database name")
    p.add_argument("--out", required=True, help="events file (kcat -J lines)")
    p.add_argument("--expected", required=True, help="expected final state, COPY CSV HEADER")
    p.add_argument("--meta", help="optional JSON file with the stream's counts")
    a = p.parse_args(argv)
    if a.events < a.keys:
        p.error("--events must be at least --keys (the snapshot alone has --keys records)")
    with open(a.out, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as out:
        g = Generator(a, out)
        g.run()
    write_expected_csv(a.expected, g.rows)
    meta = {
        "events": g.lines, "keys": a.keys, "row_width": a.row_width, "seed": a.seed,
        "dup_rate": a.dup_rate, "late_rate": a.late_rate, "partitions": a.partitions,
        "snapshot_lsn": a.start_lsn, "max_lsn": g.lsn, "final_rows": len(g.rows),
        "counts": dict(sorted(g.counts.items())),
    }
    if a.meta:
        with open(a.meta, "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
    print(json.dumps(meta), file=sys.stderr)


if __name__ == "__main__":
    main()
