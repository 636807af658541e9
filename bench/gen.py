#!/usr/bin/env python3
"""Seeded generator of Debezium PostgreSQL change streams, as `kcat -C -J` prints them.

The stream models the topic `<prefix>.public.<table>` of a Debezium 3.x PostgreSQL connector with
JsonConverter (schemas.enable=false) and decimal.handling.mode=string, for one of three row shapes
(`--shape`, SHAPES below; all REPLICA IDENTITY DEFAULT):

    medium (the default): public.items(id bigint PRIMARY KEY, customer_id int, status text,
                 amount numeric(12,2), note text, updated_at text), note padded to --row-width
    narrow: public.items_narrow(id bigint PRIMARY KEY, qty int, label text), a short label
    wide:   public.items_wide, 30 columns, about 1 KB of JSON per row image (class Wide)

The medium shape's bytes do not depend on the other shapes: the same seed and options give the
stream this generator wrote before it had shapes.

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
    if value is True or value is False:
        return "t" if value else "f"
    s = str(value)
    if s == "" or s == "\\." or any(c in s for c in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


def pg_csv_line(values):
    return ",".join(pg_csv_field(v) for v in values) + "\n"


def write_expected_csv(path, rows, columns=COLUMNS):
    """rows: dict id -> the non-key columns (for items: customer_id, status, amount, note,
    updated_at); columns: the names, key first."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(columns) + "\n")
        for key in sorted(rows):
            f.write(pg_csv_line((key,) + rows[key]))


def dec(units, scale):
    """A numeric of `scale` decimals from its integer count of units, as Debezium's
    decimal.handling.mode=string and PostgreSQL both print it ("-12.30")."""
    sign = "-" if units < 0 else ""
    q, r = divmod(abs(units), 10 ** scale)
    return f"{sign}{q}.{r:0{scale}d}"


# ---- Row shapes ----
#
# A shape is one table: its columns (name and the type a replica keeps it as, key first) and how a
# row is made, changed, and carried over by a primary-key change. Every random draw goes through
# the generator's rng, so a seed gives the same stream.

class Shape:
    name = table = None
    columns = ()                       # ((name, replica type), ...), the key "id" (bigint) first

    @property
    def names(self):
        return tuple(c for c, _ in self.columns)

    def image(self, key, row):
        return dict(zip(self.names, (key,) + row))

    def key_only_image(self, key):
        # REPLICA IDENTITY DEFAULT: a delete's before-image carries only the key columns.
        return dict(zip(self.names, (key,) + (None,) * (len(self.columns) - 1)))


class Medium(Shape):
    """public.items, the stream of issue 5: note padded to --row-width bytes."""
    name, table = "medium", "items"
    columns = (("id", "bigint"), ("customer_id", "int"), ("status", "text"),
               ("amount", "numeric(12, 2)"), ("note", "text"), ("updated_at", "text"))

    def new_row(self, g, ms):
        rng = g.rng
        cust = None if rng.random() < 0.02 else rng.randint(1, 2_000_000_000)
        return (cust, rng.choice(STATUSES), g.make_amount(), g.make_note(), g.iso(ms))

    def changed_row(self, g, row, ms):
        rng = g.rng
        cust, status, amount, note, _ = row
        r = rng.random()
        if r < 0.5:
            status = rng.choice(STATUSES)
        elif r < 0.8:
            amount = g.make_amount()
        elif r < 0.95:
            note = g.make_note()
        else:
            cust = None if rng.random() < 0.1 else rng.randint(1, 2_000_000_000)
        return (cust, status, amount, note, g.iso(ms))

    def moved_row(self, g, row, ms):
        """UPDATE items SET id = new, updated_at = now()."""
        cust, status, amount, note, _ = row
        return (cust, status, amount, note, g.iso(ms))


class Narrow(Shape):
    """public.items_narrow(id bigint, qty int, label text): a counter with a short label, about
    40 bytes of JSON per row image; NULLs, empty strings and the special notes kept, but for a
    label of exactly \\.: PostgreSQL's COPY quotes that one only in a table of one column, this
    generator and cdcstore's export always (both read back the same), so the unpadded label would
    make the PostgreSQL peer's CSV differ by its quotes alone."""
    name, table = "narrow", "items_narrow"
    columns = (("id", "bigint"), ("qty", "int"), ("label", "text"))
    specials = tuple(n for n in SPECIAL_NOTES if n != "\\.")

    @staticmethod
    def label(g):
        r = g.rng.random()
        if r < 0.02:
            return None
        if r < 0.05:
            return g.rng.choice(Narrow.specials)
        return " ".join(g.rng.choice(WORDS) for _ in range(g.rng.randint(1, 2)))

    def new_row(self, g, ms):
        qty = None if g.rng.random() < 0.02 else g.rng.randint(0, 1_000_000)
        return (qty, self.label(g))

    def changed_row(self, g, row, ms):
        qty, label = row
        if g.rng.random() < 0.8:
            qty = g.rng.randint(0, 1_000_000)
        else:
            label = self.label(g)
        return (qty, label)

    def moved_row(self, g, row, ms):
        return row


CURRENCIES = ("EUR", "USD", "GBP", "JPY", "CHF", "SEK", "PLN", "CAD")
CITIES = ("Paris", "Lyon", "Zürich", "São Paulo", "Saint-Étienne, Loire", "Kraków", "Osaka",
          "New York", "O'Fallon", "København", "Reykjavík", "Łódź")
COUNTRIES = ("FR", "CH", "BR", "PL", "JP", "US", "DK", "IS", "DE", "SE")
FIRST_NAMES = ("anna", "bruno", "chloe", "dmitri", "eva", "farid", "gina", "hugo", "ines", "jun")
TAGS = ("vip", "b2b", "promo", "late", "fragile", "gift", "bulk", "return", "eco", "priority")
STREETS = ("rue", "avenue", "chemin", "street", "road", "lane", "allée", "quai")
COMMENT_WIDTH = 300
ADDRESS_WIDTH = 80
DAY_MS = 86_400_000


class Wide(Shape):
    """public.items_wide: 30 columns, about 1 KB of JSON per row image, typed as Debezium's
    JsonConverter sends them without schemas, with decimal.handling.mode=string and the default
    time.precision.mode (adaptive): numerics as their text at the column's scale, booleans as
    true/false, a timestamp (MicroTimestamp) as microseconds since 1970, a timestamptz
    (ZonedTimestamp) as ISO-8601 text in UTC, a date (Date) as days since 1970. Without schemas no
    consumer can tell a MicroTimestamp from a bigint or a Date from an int, so every replica keeps
    those two as numbers, and the expected CSV holds what they keep, not PostgreSQL's text of a
    timestamp or a date. Source types where the replica's differ: created_at timestamp,
    updated_at and shipped_at timestamptz, due_date date."""
    name, table = "wide", "items_wide"
    columns = (
        ("id", "bigint"), ("customer_id", "int"), ("status", "text"), ("amount", "numeric(12, 2)"),
        ("tax", "numeric(12, 2)"), ("discount", "numeric(5, 2)"), ("unit_price", "numeric(12, 4)"),
        ("weight_kg", "numeric(10, 3)"), ("exchange_rate", "numeric(10, 6)"), ("quantity", "int"),
        ("warehouse_id", "int"), ("priority", "smallint"), ("version", "bigint"),
        ("currency", "text"), ("sku", "text"), ("email", "text"), ("phone", "text"),
        ("city", "text"), ("country", "text"), ("address", "text"), ("note", "text"),
        ("comment", "text"), ("tags", "text"), ("is_gift", "boolean"), ("is_paid", "boolean"),
        ("express", "boolean"), ("created_at", "bigint"), ("updated_at", "text"),
        ("shipped_at", "text"), ("due_date", "int"),
    )

    def __init__(self):
        # Positions in a row tuple (the key is not in it).
        self.at = {c: i - 1 for i, (c, _) in enumerate(self.columns) if i}

    @staticmethod
    def padded(g, base, width):
        size = len(base.encode("utf-8"))
        return base + "." * (width - size) if size < width else base

    def address(self, g):
        rng = g.rng
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        return self.padded(g, f"{rng.randint(1, 9999)} {rng.choice(STREETS)} {words}", ADDRESS_WIDTH)

    @staticmethod
    def tags(g):
        if g.rng.random() < 0.3:
            return None
        return ",".join(g.rng.sample(TAGS, g.rng.randint(1, 3)))

    @staticmethod
    def email(g):
        return f"{g.rng.choice(FIRST_NAMES)}.{g.rng.randint(1, 99_999)}@example.com"

    @staticmethod
    def phone(g):
        return None if g.rng.random() < 0.2 else f"+33 6 {g.rng.randint(0, 99_999_999):08d}"

    def new_row(self, g, ms):
        rng = g.rng
        status = rng.choice(STATUSES)
        shipped = g.iso(ms - rng.randint(0, DAY_MS)) if status in ("shipped", "delivered") else None
        return (
            None if rng.random() < 0.02 else rng.randint(1, 2_000_000_000),   # customer_id
            status,
            g.make_amount(),
            dec(rng.randint(0, 500_000), 2),                                  # tax
            None if rng.random() < 0.5 else dec(rng.randint(0, 5_000), 2),    # discount
            dec(rng.randint(1, 99_999_999), 4),                               # unit_price
            dec(rng.randint(1, 9_999_999), 3),                                # weight_kg
            dec(rng.randint(500_000, 2_000_000), 6),                          # exchange_rate
            rng.randint(1, 500), rng.randint(1, 400), rng.randint(0, 9),      # quantity, warehouse, priority
            1,                                                                # version
            rng.choice(CURRENCIES), f"SKU-{rng.randint(0, 99_999_999):08d}",
            self.email(g), self.phone(g), rng.choice(CITIES), rng.choice(COUNTRIES),
            self.address(g), g.make_note(), g.make_note(COMMENT_WIDTH), self.tags(g),
            rng.random() < 0.1, status in ("paid", "shipped", "delivered"), rng.random() < 0.2,
            (ms - rng.randint(0, 30 * DAY_MS)) * 1000 + rng.randint(0, 999),  # created_at, µs
            g.iso(ms),                                                        # updated_at
            shipped,
            ms // DAY_MS + rng.randint(1, 30),                                # due_date, days
        )

    def changed_row(self, g, row, ms):
        rng, at = g.rng, self.at
        r = list(row)
        x = rng.random()
        if x < 0.4:
            status = rng.choice(STATUSES)
            r[at["status"]] = status
            r[at["is_paid"]] = status in ("paid", "shipped", "delivered")
            if status == "shipped":
                r[at["shipped_at"]] = g.iso(ms)
        elif x < 0.65:
            r[at["amount"]] = g.make_amount()
            r[at["tax"]] = dec(rng.randint(0, 500_000), 2)
            r[at["discount"]] = None if rng.random() < 0.5 else dec(rng.randint(0, 5_000), 2)
        elif x < 0.8:
            r[at["quantity"]] = rng.randint(1, 500)
            r[at["unit_price"]] = dec(rng.randint(1, 99_999_999), 4)
            r[at["weight_kg"]] = dec(rng.randint(1, 9_999_999), 3)
        elif x < 0.9:
            r[at["note"]] = g.make_note()
        elif x < 0.95:
            r[at["comment"]] = g.make_note(COMMENT_WIDTH)
            r[at["tags"]] = self.tags(g)
        else:
            r[at["address"]] = self.address(g)
            r[at["city"]] = rng.choice(CITIES)
            r[at["phone"]] = self.phone(g)
            r[at["email"]] = self.email(g)
        return self.moved_row(g, tuple(r), ms)

    def moved_row(self, g, row, ms):
        """A new version: updated_at = now(), version + 1 (a trigger's work at the source)."""
        r = list(row)
        r[self.at["version"]] += 1
        r[self.at["updated_at"]] = g.iso(ms)
        return tuple(r)


SHAPES = {s.name: s for s in (Narrow(), Medium(), Wide())}


class Generator:
    def __init__(self, args, out):
        self.a = args
        self.rng = random.Random(args.seed)
        self.out = out
        self.shape = SHAPES[args.shape]
        self.topic = f"{args.prefix}.public.{self.shape.table}"
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
                "schema": "public", "table": self.shape.table, "txId": txid, "lsn": lsn, "xmin": None,
            },
            "transaction": None,
            "op": op,
            "ts_ms": ts_ms + self.rng.randint(5, 400),
        }
        return json.dumps(env, ensure_ascii=False, separators=(",", ":"))

    def image(self, key, row):
        return self.shape.image(key, row)

    def key_only_image(self, key):
        return self.shape.key_only_image(key)

    # ---- the table ----

    def iso(self, ms):
        t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{(ms % 1000) * 1000:06d}Z"

    def make_note(self, width=None):
        """A note padded to `width` bytes (--row-width by default); NULL now and then."""
        r = self.rng.random()
        if r < 0.04:
            return None
        if r < 0.07:
            base = self.rng.choice(SPECIAL_NOTES)
        else:
            base = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 5)))
        width = self.a.row_width if width is None else width
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
        return self.shape.new_row(self, ms)

    def changed_row(self, row, ms):
        return self.shape.changed_row(self, row, ms)

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
            else:  # primary-key change: UPDATE items SET id = new (updated_at = now())
                old = self.live[self.rng.randrange(len(self.live))]
                new = self.next_id
                self.next_id += 1
                row = self.shape.moved_row(self, self.rows[old], ts)
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
    p.add_argument("--shape", choices=tuple(SHAPES), default="medium",
                   help="the table: narrow (3 columns), medium (public.items, 6 columns, the "
                        "default) or wide (30 columns, about 1 KB per row)")
    p.add_argument("--row-width", type=int, default=100,
                   help="the note column is padded to N bytes (medium and wide)")
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
    write_expected_csv(a.expected, g.rows, g.shape.names)
    meta = {
        "events": g.lines, "keys": a.keys, "row_width": a.row_width, "seed": a.seed,
        "dup_rate": a.dup_rate, "late_rate": a.late_rate, "partitions": a.partitions,
        "snapshot_lsn": a.start_lsn, "max_lsn": g.lsn, "final_rows": len(g.rows),
        "counts": dict(sorted(g.counts.items())),
    }
    if a.shape != "medium":
        # The medium shape's meta stays as it was before shapes existed.
        meta.update(shape=a.shape, table=f"public.{g.shape.table}", columns=len(g.shape.columns))
    if a.meta:
        with open(a.meta, "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
    print(json.dumps(meta), file=sys.stderr)


if __name__ == "__main__":
    main()
