#!/usr/bin/env python3
"""dv_refresh.py: Delta tables refreshed by deletion vectors (cdcstore export --format delta
--deletion-vectors, query/delta.c "Deletion vectors") against the replica they come from.

Usage (tests/export/dv_refresh.sh sets it up): dv_refresh.py CDCSTORE WORKDIR

Each scenario applies seeded histories of Debezium change events (kcat -J lines: creates, updates,
deletes with tombstones, primary-key changes, duplicates, late older events) to a replica, and after
every step saves the replica's table as NDJSON (`export --format ndjson`: PostgreSQL's text, NULL as
null: the truth) and refreshes the Delta table. Every Delta version is then read by deltalake
(QueryBuilder, at each step and again by time travel at the end) and by Spark (one session, every
version of every table, at the end), each reader's typed values turned into PostgreSQL's text by
tests/export/read_table.py's fmt_value, and compared with the NDJSON of the step that committed
that version as a multiset of rows; filtered reads (a key range, a few keys, IS NULL) check the
readers' file skipping by the statistics of files added again with a vector. Prints one "ok ..."
or "FAIL ..." line per check and exits 1 on any FAIL.

Scenarios (each with its own fixed seed):
  1. typed columns (bigint key, int, numeric(12,2), text with NULL and '', boolean, timestamp
     without zone), --file-rows 300 and row groups of 64 rows, 23 rounds of random changes; most refreshes use vectors and
     the 16-patch-files and quarter-deleted fallbacks are both reached; each round's choice between
     vectors and writing anew is also predicted from the documented rules and compared
  2. text keys, and a composite key (int, text)
  3. written without vectors, refreshed, then --deletion-vectors (written anew, key files, protocol
     upgraded), then refreshed without the flag (the table keeps vectors)
  4. columns added at the source between two refreshes, one a timestamp (written anew, the
     protocol gains timestampNtz beside deletionVectors), then vectors again
  5. the replica's key journal reset (CDC_JOURNAL_MIN_CAP=50 during the applies): written anew
  6. a key file under DIR/_cdcstore/ deleted before a refresh: written anew
  7. refreshes with nothing changed, after keys created and deleted again in between, and after
     only duplicates and stale events: no new version
  8. every row deleted (a table of 0 rows), then rows created again; files whose every row a
     vector deletes (a base file, a patch file)
  9. a bench/gen.py --shape medium history cut into slices, a refresh after each
 10. refreshes while an apply runs (fed slowly through a pipe): each version so written holds
     every key at most once; the refresh after the apply equals the replica
"""

import base64
import collections
import glob
import json
import os
import random
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from read_table import arrow_columns, fmt_value, spark_columns, spark_session  # noqa: E402

CDC, W = sys.argv[1], sys.argv[2]
T0 = time.time()
fails = []
checks = collections.Counter()


OUT = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8", errors="replace")
_saved = []


def redirect_fds(log):
    """fds 1 and 2 to log (for the JVM, which inherits them), ours kept in OUT and _saved."""
    sys.stdout.flush()
    sys.stderr.flush()
    _saved[:] = [os.dup(1), os.dup(2)]
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def restore_fds():
    if _saved:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(_saved[0], 1)
        os.dup2(_saved[1], 2)


def say(msg):
    OUT.write(f"[{time.time() - T0:6.1f}s] {msg}\n")


def check(what, ok, detail=""):
    checks["ok" if ok else "fail"] += 1
    OUT.write(("ok   " if ok else "FAIL ") + what + ("" if ok or not detail else f": {detail}") + "\n")
    if not ok:
        fails.append(what)
    return ok


def run(args, env=None, ok_codes=(0,)):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(args, capture_output=True, text=True, env=e)
    if p.returncode not in ok_codes:
        return None, p
    return p.stdout, p


# ---------------------------------------------------------------------------------------------
# Debezium envelopes. A table is a topic <prefix>.public.<name>; typed tables carry a Connect
# schema in every envelope (schemas.enable=true), the others are bare envelopes.

def field(name, kind, optional=True):
    f = {"field": name, "optional": optional}
    if kind == "int64":
        f["type"] = "int64"
    elif kind == "int32":
        f["type"] = "int32"
    elif kind == "text":
        f["type"] = "string"
    elif kind == "bool":
        f["type"] = "boolean"
    elif kind == "dec2":
        f.update(type="bytes", name="org.apache.kafka.connect.data.Decimal", version=1,
                 parameters={"scale": "2", "connect.decimal.precision": "12"})
    elif kind == "ts":
        f.update(type="int64", name="io.debezium.time.MicroTimestamp", version=1)
    else:
        raise ValueError(kind)
    return f


def envelope_schema(table, cols, keys):
    fs = [field(n, k, optional=n not in keys) for n, k in cols]
    return {"type": "struct", "optional": False, "name": f"t.public.{table}.Envelope", "fields": [
        {"type": "struct", "optional": True, "name": f"t.public.{table}.Value", "field": "before", "fields": fs},
        {"type": "struct", "optional": True, "name": f"t.public.{table}.Value", "field": "after", "fields": fs},
        {"type": "struct", "optional": False, "field": "source", "fields": [
            {"type": "int64", "optional": True, "field": "lsn"}]},
        {"type": "string", "optional": False, "field": "op"}]}


def dec_b64(units):
    return base64.b64encode(units.to_bytes(units.bit_length() // 8 + 1, "big", signed=True)).decode()


class Table:
    """One source table, its event history, and a model of what the replica keeps: per key the
    highest LSN seen (a delete keeps its version, so a late older event is stale) and the row."""

    def __init__(self, name, keys, cols, typed, rowgen):
        self.name, self.keys, self.cols, self.typed, self.rowgen = name, keys, list(cols), typed, rowgen
        self.topic = f"t.public.{name}"
        self.full = f"public.{name}"
        self.schema = envelope_schema(name, self.cols, keys) if typed else None
        self.rows, self.ver = {}, {}
        self.sent = collections.defaultdict(list)   # key -> its records, for late re-deliveries
        self.recent = []                              # the last records, for duplicates
        self.touched = set()                          # keys written since the last export
        self.pending = []
        self.lsn = 1_000_000
        self.offset = 0

    def keyjson(self, k):
        return dict(zip(self.keys, k if isinstance(k, tuple) else (k,)))

    def wire(self, row):
        """A row (Python values) as the envelope's after: numerics and timestamps encoded."""
        out = {}
        for n, kind in self.cols:
            v = row.get(n)
            if v is not None and kind == "dec2":
                v = dec_b64(v) if self.typed else f"{'-' if v < 0 else ''}{abs(v) // 100}.{abs(v) % 100:02d}"
            out[n] = v
        return out

    def _record(self, k, payload, lsn, op=None, row=None):
        rec = {"topic": self.topic, "partition": 0, "offset": self.offset,
               "key": json.dumps(self.keyjson(k), separators=(",", ":"), ensure_ascii=False),
               "payload": None if payload is None else json.dumps(payload, separators=(",", ":"),
                                                                  ensure_ascii=False)}
        self.offset += 1
        self.pending.append((k, lsn, rec))
        self.recent = (self.recent + [(k, lsn, rec)])[-60:]
        if payload is None:
            return  # a tombstone changes nothing
        self.sent[k].append((lsn, rec))
        if lsn <= self.ver.get(k, -1):
            return  # stale or duplicate: the replica skips it
        self.ver[k] = lsn
        self.touched.add(k)
        self.rows[k] = None if op == "d" else dict(row)

    def _send(self, op, k, row, lsn=None):
        if lsn is None:
            self.lsn += 1
            lsn = self.lsn
        env = {"op": op, "before": self.wire(self.keyjson(k)) if op == "d" else None,
               "after": None if row is None else self.wire(row), "source": {"lsn": lsn}}
        payload = {"schema": self.schema, "payload": env} if self.typed else env
        self._record(k, payload, lsn, op, row)
        if op == "d":
            self._record(k, None, lsn)  # the tombstone

    def create(self, k, lsn=None):
        row = self.rowgen(k, self)
        row.update(self.keyjson(k))
        self._send("c", k, row, lsn)

    def update(self, k):
        row = self.rowgen(k, self)
        row.update(self.keyjson(k))
        self._send("u", k, row)

    def delete(self, k, lsn=None):
        self._send("d", k, None, lsn)

    def pk_change(self, old, new):
        """UPDATE ... SET id = new: delete of the old key, its tombstone, create of the new, one LSN."""
        self.lsn += 1
        self.delete(old, self.lsn)
        self.create(new, self.lsn)

    def duplicates(self, rnd, n):
        """A connector restart: the last n records published again (same content, new offsets)."""
        for k, lsn, rec in self.recent[-n:]:
            r = dict(rec, offset=self.offset)
            self.offset += 1
            self.pending.append((k, lsn, r))

    def late(self, rnd):
        """An older event of a key that has a newer one, delivered again (a stale update after a
        delete among them)."""
        cands = [k for k, evs in self.sent.items() if len(evs) >= 2]
        if not cands:
            return
        k = rnd.choice(sorted(cands, key=repr))
        lsn, rec = rnd.choice(self.sent[k][:-1])
        r = dict(rec, offset=self.offset)
        self.offset += 1
        self.pending.append((k, lsn, r))

    def live(self):
        return sorted((k for k, r in self.rows.items() if r is not None), key=repr)

    def dead(self):
        return sorted((k for k, r in self.rows.items() if r is None), key=repr)

    def flush(self, path):
        with open(path, "w", encoding="utf-8") as f:
            for _, _, rec in self.pending:
                f.write(json.dumps(rec, separators=(",", ":"), ensure_ascii=False) + "\n")
        n = len(self.pending)
        self.pending = []
        return n


NOTES = [None, "", "plain", "a, b", 'say "hi"', "line1\nline2", "café", "日本語", "\\.", "NULL", " x "]


def typed_row(k, t):
    r = t.rnd
    return {"qty": r.choice([None, r.randint(-2**31, 2**31 - 1), r.randint(-50, 50)]),
            "amount": r.choice([None, r.randint(-10**11, 10**11), r.randint(-500, 500), 0]),
            "note": r.choice(NOTES),
            "paid": r.choice([None, True, False]),
            "ts": r.choice([None, r.randint(-2 * 10**15, 4 * 10**15), 0, 1_700_000_000_123_456])}


TYPED_COLS = [("id", "int64"), ("qty", "int32"), ("amount", "dec2"), ("note", "text"), ("paid", "bool"),
              ("ts", "ts")]


# ---------------------------------------------------------------------------------------------
# The replica, the exports, the readers.

class Scenario:
    def __init__(self, label, table, db=None):
        self.label, self.t = label, table
        self.db = db or f"{W}/{label}.db"
        self.dir = f"{W}/{label}.delta"
        self.step = 0
        self.file_rows = self.rg_rows = None
        self.truth = {}      # Delta version -> the NDJSON file of the step that committed it
        self.lines = []      # (step, the export's output line)

    def apply(self, env=None, batch_size=None):
        path = f"{W}/{self.label}.{self.step}.{self.t.offset}.jsonl"
        n = self.t.flush(path)
        args = [CDC, "apply", "--db", self.db, "--quiet"]
        if batch_size:
            args += ["--batch-size", str(batch_size)]
        out, p = run(args + [path], env=env)
        if out is None:
            check(f"{self.label}: apply of {n} records", False, f"exit {p.returncode}: {p.stderr.strip()[:300]}")
        return n

    def versions(self):
        return sorted(int(os.path.basename(f)[:20]) for f in glob.glob(f"{self.dir}/_delta_log/*.json"))

    def export(self, *flags, file_rows=None, rg_rows=None):
        """One step: the replica's NDJSON, then the Delta export (the same --file-rows and
        --row-group-rows each time: the table does not remember them). Returns the export's output
        line (None on an error) and whether a version was committed."""
        self.file_rows = file_rows = file_rows or self.file_rows
        self.rg_rows = rg_rows = rg_rows or self.rg_rows
        self.step += 1
        nd = f"{W}/{self.label}.step{self.step}.ndjson"
        out, p = run([CDC, "export", "--db", self.db, "--table", self.t.full, "--format", "ndjson",
                      "--output", nd])
        if out is None:
            check(f"{self.label} step {self.step}: ndjson export", False, p.stderr.strip()[:300])
            return None, False
        before = self.versions()
        args = [CDC, "export", "--db", self.db, "--table", self.t.full, "--format", "delta", "--output",
                self.dir, *flags]
        if file_rows:
            args += ["--file-rows", str(file_rows)]
        if rg_rows:
            args += ["--row-group-rows", str(rg_rows)]
        out, p = run(args)
        self.t.touched = set()
        if out is None:
            check(f"{self.label} step {self.step}: delta export {' '.join(flags)}", False,
                  f"exit {p.returncode}: {p.stderr.strip()[:400]}")
            return None, False
        line = out.strip()
        self.lines.append((self.step, line))
        after = self.versions()
        new = [v for v in after if v not in before]
        committed = bool(new)
        if len(new) > 1:
            check(f"{self.label} step {self.step}: one version a refresh", False, f"new versions {new}")
        for v in new:
            self.truth[v] = nd
        say(f"{self.label} step {self.step}: {line[len(self.t.full) + 2:][:200]}")
        # the newest version now is the replica as this step saw it
        if after:
            compare(f"{self.label} step {self.step}: deltalake, newest version {after[-1]}", nd,
                    read_deltalake(self.dir, after[-1]))
        return line, committed

    def protocol(self):
        proto, meta = None, None
        for v in self.versions():
            with open(f"{self.dir}/_delta_log/{v:020d}.json") as f:
                for l in f:
                    a = json.loads(l)
                    proto = a.get("protocol", proto)
                    meta = a.get("metaData", meta)
        return proto, meta

    def active(self):
        """The active add actions of the newest version, by path."""
        files = {}
        for v in self.versions():
            with open(f"{self.dir}/_delta_log/{v:020d}.json") as f:
                for l in f:
                    a = json.loads(l)
                    if "remove" in a:
                        files.pop(a["remove"]["path"], None)
                    if "add" in a:
                        files[a["add"]["path"]] = a["add"]
        return files


def load_ndjson(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for l in f:
            if l.strip():
                rows.append(json.loads(l))
    return rows


def rowset(names, rows):
    """A Counter of rows, each the tuple of (column, text or None) in column-name order."""
    order = sorted(range(len(names)), key=lambda i: names[i])
    return collections.Counter(tuple((names[i], r[i]) for i in order) for r in rows)


def truth_rows(nd, keep=None):
    rows = load_ndjson(nd)
    names = list(rows[0]) if rows else None
    if keep:
        rows = [r for r in rows if keep(r)]
    return names, rowset(names or [], [[r[n] for n in names] for r in rows])


def filters(s, nd):
    """Filtered reads of a version, for the readers' file skipping by the add actions' statistics
    (a file added again with a vector keeps its statistics, "tightBounds": false): SQL predicates
    and the same test on the NDJSON's text. A key range and a few keys when the first key column
    is an integer; IS NULL on the last column."""
    rows = load_ndjson(nd)
    if not rows:
        return []
    names = list(rows[0])
    out = []
    k = s.t.keys[0]
    if dict(s.t.cols).get(k) in ("int64", "int32") or (not s.t.cols and k == "id"):
        ks = sorted(int(r[k]) for r in rows)
        lo, hi = ks[len(ks) // 3], ks[2 * len(ks) // 3]
        out.append((f"{k} >= {lo} AND {k} < {hi}", lambda r: lo <= int(r[k]) < hi))
        pick = sorted(set(ks[::max(1, len(ks) // 5)][:5] + [ks[-1] + 1]))
        out.append((f"{k} IN ({', '.join(map(str, pick))})", lambda r: int(r[k]) in pick))
    last = names[-1]
    out.append((f"{last} IS NULL", lambda r: r[last] is None))
    return out


def text_columns(cols):
    """read_table's (name, kind, arg, values) columns as (names, rows of text or None)."""
    names = [c[0] for c in cols]
    n = len(cols[0][3]) if cols else 0
    rows = [[None if c[3][i] is None else fmt_value(c[3][i], c[1], c[2]) for c in cols] for i in range(n)]
    return names, rows


def compare(what, nd, got, keep=None):
    """got: (names, rows) from a reader, or an exception text; keep: the rows of nd to compare."""
    if isinstance(got, str):
        return check(what, False, got)
    names, rows = got
    want_names, want = truth_rows(nd, keep)
    if want_names is not None and sorted(names) != sorted(want_names):
        return check(what, False, f"columns {sorted(names)}, the replica has {sorted(want_names)}")
    have = rowset(names, rows)
    if have == want:
        return check(what + f" ({sum(want.values())} rows)", True)
    extra, missing = have - want, want - have
    show = lambda c: [dict(r) for r in list(c)[:2]]  # noqa: E731
    return check(what, False, f"{sum(have.values())} rows, the replica {sum(want.values())}: "
                              f"{sum(extra.values())} extra, e.g. {show(extra)}; "
                              f"{sum(missing.values())} missing, e.g. {show(missing)}")


def read_deltalake(path, version, where=None):
    try:
        import pyarrow as pa
        from deltalake import DeltaTable, QueryBuilder
        tab = pa.table(QueryBuilder().register("t", DeltaTable(path, version=version))
                       .execute("select * from t" + (f" where {where}" if where else "")).read_all())
        return text_columns(arrow_columns(tab))
    except Exception as e:  # a reader's refusal is a finding
        return f"{type(e).__name__}: {str(e).strip()[:300]}"


def read_spark(spark, path, version, where=None):
    try:
        df = spark.read.format("delta").option("versionAsOf", version).load(path)
        if where:
            df = df.where(where)
        return text_columns(spark_columns(df))
    except Exception as e:
        msg = str(e).strip().splitlines()
        return f"{type(e).__name__}: {msg[0][:300] if msg else ''}"


def used_dv(line):
    return line is not None and "marked deleted in" in line


def fell_back(line):
    """Written anew by a refresh (not created, not unchanged, no vectors)."""
    return line is not None and not used_dv(line) and "unchanged" not in line and "(new)" not in line


SCENARIOS = []


def random_round(t, rnd, nkeys, key_new, pk_changes=True):
    """About nkeys keys changed: updates, deletes, creates, a deleted key created again, a key
    changed twice, primary-key changes; then duplicates and late events."""
    live, dead = t.live(), t.dead()
    for _ in range(nkeys):
        x = rnd.random()
        if x < 0.45 and live:
            t.update(rnd.choice(live))
        elif x < 0.62 and live:
            k = rnd.choice(live)
            t.delete(k)
            live.remove(k)
        elif x < 0.72 and dead:
            k = rnd.choice(dead)
            t.create(k)               # a deleted key created again
            dead.remove(k)
        elif x < 0.80 and live:
            k = rnd.choice(live)      # changed twice in the round
            t.update(k)
            t.update(k)
        elif x < 0.86 and live and pk_changes:
            old, new = rnd.choice(live), key_new()
            if new not in t.rows or t.rows[new] is None:
                t.pk_change(old, new)
                live.remove(old)
        elif x < 0.90 and live:
            k = rnd.choice(live)      # deleted and created again in the same round
            t.delete(k)
            t.create(k)
        else:
            k = key_new()
            if t.rows.get(k) is None:
                t.create(k)
    t.duplicates(rnd, rnd.randint(3, 30))
    for _ in range(rnd.randint(2, 8)):
        t.late(rnd)


# ---- 1. typed columns, integer keys, many files, many rounds ----

def scenario_typed():
    say("1. typed columns, integer keys, --file-rows 300, 23 rounds")
    rnd = random.Random(101)
    t = Table("typed", ["id"], TYPED_COLS, True, typed_row)
    t.rnd = rnd
    s = Scenario("s1_typed", t)
    N = 3000
    ids = rnd.sample(range(-2**40, 2**40), N) + [0, 1, -1, 2**63 - 1, -2**63]
    for k in ids:
        t.create(k)
    s.apply()
    # row groups of 64 rows: a vector's row indexes count across the row groups of a file
    line, _ = s.export("--deletion-vectors", file_rows=300, rg_rows=64)
    proto, meta = s.protocol()
    feats = set((proto or {}).get("readerFeatures") or [])
    check("s1: protocol 3/7 with deletionVectors and timestampNtz",
          proto and proto.get("minReaderVersion") == 3 and {"deletionVectors", "timestampNtz"} <= feats,
          f"protocol {proto}")
    check("s1: metaData sets delta.enableDeletionVectors",
          meta and meta.get("configuration", {}).get("delta.enableDeletionVectors") == "true", f"{meta}")
    nkeys_new = lambda: rnd.randint(-2**40, 2**40)  # noqa: E731
    # Round sizes: mostly small; some past --file-rows (two patch files), so that the 16 patch
    # files come within the rounds; a large one near a fifth of the rows for the quarter rule.
    # Round sizes (keys changed): 16 refreshes by vectors of few rows each (one patch file each,
    # 200 keys twice), so that the 17th meets the 16 patch files; then large rounds (under a fifth
    # of the rows) until a quarter of the rows are deleted by vectors; then small ones again.
    sizes = [40, 25, 30, 200, 20, 15, 30, 35, 45, 200, 25, 35, 30, 20, 30, 25, 30,
             500, 500, 500, 500, 40, 30]
    dv_rounds, reasons, mism = 0, collections.Counter(), []
    for rnum, size in enumerate(sizes, 1):
        prev = {k for k in t.live()}
        random_round(t, rnd, size, nkeys_new)
        touched = set(t.touched)
        s.apply(batch_size=rnd.choice([None, 7, 100]))
        # the documented rules (query/delta.c, dv_refresh), from the log and the model
        act = s.active()
        rows = sum(int(a["tags"]["cdcstore.rows"]) for a in act.values())
        deleted = sum(a["deletionVector"]["cardinality"] for a in act.values() if a.get("deletionVector"))
        npatch = sum(1 for a in act.values() if a["tags"].get("cdcstore.patch") == "1")
        marked = len(touched & prev)
        if npatch >= 16:
            predict = "16 patch files"
        elif len(touched) * 5 > rows - deleted:
            predict = "a fifth changed"
        elif (deleted + marked) * 4 > rows:
            predict = "a quarter deleted"
        else:
            predict = "vectors"
        line, committed = s.export()
        got = "vectors" if used_dv(line) else "anew" if fell_back(line) else "other"
        dv_rounds += got == "vectors"
        if got == "anew":
            reasons[predict] += 1
        if (predict == "vectors") != (got == "vectors"):
            mism.append(f"round {rnum}: predicted {predict}, got {got} ({npatch} patch files, "
                        f"{len(touched)} keys changed, {marked} old rows, {deleted} deleted of {rows})")
        if used_dv(line):
            kc = int(line.split(" changed (the replica's key journal)")[0].split("; ")[-1].split()[0])
            if kc != len(touched):
                mism.append(f"round {rnum}: the journal listed {kc} keys, the model changed {len(touched)}")
    check(f"s1: refreshes by deletion vectors in most rounds ({dv_rounds} of {len(sizes)})",
          dv_rounds * 2 > len(sizes))
    check(f"s1: a refresh wrote anew by the 16-patch-files rule ({reasons['16 patch files']} rounds)",
          reasons["16 patch files"] > 0, f"fallbacks by reason: {dict(reasons)}")
    check(f"s1: a refresh wrote anew by the quarter-deleted rule ({reasons['a quarter deleted']} rounds)",
          reasons["a quarter deleted"] > 0, f"fallbacks by reason: {dict(reasons)}")
    check("s1: each round's choice (vectors or anew) and key count as the documented rules predict",
          not mism, "; ".join(mism))
    ks = glob.glob(f"{s.dir}/_cdcstore/*.keys")
    act = s.active()
    check("s1: every active file has its key file",
          all(os.path.exists(f"{s.dir}/_cdcstore/{p}.keys") for p in act), f"{len(ks)} key files")
    return s


# ---- 2. text keys and a composite key ----

TEXT_KEYS = ["", "a", "A", "ab", "aB", "a b", "b", "Banana", "banana", "Zebra", "z", "~", "10", "9", "2",
             "éclair", "日本", "🎉", " lead", "quote'", 'dq"', "comma,", "x\ny", "\\", "ä", "\u00ff", "NULL"]


def scenario_text_keys():
    say("2a. text keys, --file-rows 20")
    rnd = random.Random(202)
    t = Table("tk", ["k"], [("k", "text"), ("v", "int32"), ("s", "text")], False,
              lambda k, t: {"v": t.rnd.randint(-1000, 1000), "s": t.rnd.choice(NOTES)})
    t.rnd = rnd
    s = Scenario("s2_text", t)
    pool = TEXT_KEYS + [f"k{i:04d}" for i in range(0, 300, 3)] + [f"K{i}" for i in range(0, 100, 7)] + \
        ["k" + "x" * 200, "k" + "x" * 199 + "y"]
    for k in pool:
        t.create(k)
    s.apply()
    s.export("--deletion-vectors", file_rows=20)
    newkey = lambda: rnd.choice(TEXT_KEYS) + rnd.choice(["", "a", "é", " ", "0", "~"]) + str(rnd.randint(0, 99))  # noqa: E731
    dv = 0
    for r in range(6):
        random_round(t, rnd, rnd.randint(3, 20), newkey)
        s.apply()
        line, _ = s.export()
        dv += used_dv(line)
    check(f"s2 text keys: refreshes by deletion vectors ({dv} of 6)", dv >= 4)
    return s


def scenario_composite():
    say("2b. composite key (a int, b text), --file-rows 25")
    rnd = random.Random(203)
    t = Table("ck", ["a", "b"], [("a", "int32"), ("b", "text"), ("v", "text"), ("n", "dec2")], True,
              lambda k, t: {"v": t.rnd.choice(NOTES), "n": t.rnd.choice([None, t.rnd.randint(-10**6, 10**6)])})
    t.rnd = rnd
    s = Scenario("s2_composite", t)
    bs = ["", "x", "X", "xy", "é", "a b", "zz", "10", "9"]
    for a in range(-8, 9):
        for b in bs:
            t.create((a, b))
    s.apply()
    s.export("--deletion-vectors", file_rows=25)
    newkey = lambda: (rnd.randint(-12, 12), rnd.choice(bs + ["new", "ñ", "Q"]))  # noqa: E731
    dv = 0
    for r in range(6):
        random_round(t, rnd, rnd.randint(3, 20), newkey)
        s.apply(batch_size=rnd.choice([None, 5]))
        line, _ = s.export()
        dv += used_dv(line)
    check(f"s2 composite key: refreshes by deletion vectors ({dv} of 6)", dv >= 4)
    return s


# ---- 3. without vectors, then with, then the flag left out ----

def scenario_upgrade():
    say("3. written without vectors, refreshed, then --deletion-vectors, then without the flag")
    rnd = random.Random(303)
    t = Table("up", ["id"], TYPED_COLS, True, typed_row)
    t.rnd = rnd
    s = Scenario("s3_upgrade", t)
    for k in range(1, 1201):
        t.create(k)
    s.apply()
    newkey = lambda: rnd.randint(1, 3000)  # noqa: E731
    s.export(file_rows=200)
    proto, _ = s.protocol()
    check("s3: written without the flag: no deletionVectors feature, no key files",
          "deletionVectors" not in json.dumps(proto) and not glob.glob(f"{s.dir}/_cdcstore/*.keys"),
          f"protocol {proto}")
    random_round(t, rnd, 30, newkey)
    s.apply()
    line, _ = s.export(file_rows=200)
    check("s3: a refresh without the flag uses no vectors", not used_dv(line), line)
    random_round(t, rnd, 30, newkey)
    s.apply()
    line, committed = s.export("--deletion-vectors", file_rows=200)
    proto, meta = s.protocol()
    act = s.active()
    check("s3: --deletion-vectors on a table without key files writes it anew", committed and fell_back(line), line)
    check("s3: the protocol is upgraded (deletionVectors, timestampNtz kept) and enableDeletionVectors set",
          {"deletionVectors", "timestampNtz"} <= set(proto.get("readerFeatures") or [])
          and meta.get("configuration", {}).get("delta.enableDeletionVectors") == "true", f"{proto} {meta}")
    check("s3: every active file has its key file",
          act and all(os.path.exists(f"{s.dir}/_cdcstore/{p}.keys") for p in act))
    dv = 0
    for r in range(3):
        random_round(t, rnd, rnd.randint(10, 40), newkey)
        s.apply()
        line, _ = s.export(file_rows=200)
        dv += used_dv(line)
    check(f"s3: refreshes without the flag keep using vectors ({dv} of 3)", dv == 3)
    return s


# ---- 4. a column added at the source ----

def scenario_add_column():
    say("4. a column added at the source between two refreshes")
    rnd = random.Random(404)
    cols = [("id", "int64"), ("qty", "int32"), ("note", "text")]
    t = Table("addcol", ["id"], cols, True,
              lambda k, t: {"qty": t.rnd.randint(0, 99), "note": t.rnd.choice(NOTES),
                            "extra": t.rnd.choice([None, t.rnd.randint(-10**6, 10**6)]),
                            "at": t.rnd.choice([None, t.rnd.randint(0, 2 * 10**15)])})
    t.rnd = rnd
    s = Scenario("s4_addcol", t)
    for k in range(1, 801):
        t.create(k)
    s.apply()
    newkey = lambda: rnd.randint(1, 2000)  # noqa: E731
    s.export("--deletion-vectors", file_rows=150)
    random_round(t, rnd, 25, newkey)
    s.apply()
    line, _ = s.export()
    check("s4: a refresh before the new column uses vectors", used_dv(line), line)
    proto, _ = s.protocol()
    check("s4: no timestamp column: the protocol has deletionVectors, not timestampNtz",
          set(proto.get("readerFeatures") or []) == {"deletionVectors"}, f"{proto}")
    # ALTER TABLE ADD COLUMN extra numeric(12,2), ADD COLUMN at timestamp: the envelopes gain the
    # fields; the protocol must gain timestampNtz and keep deletionVectors
    t.cols += [("extra", "dec2"), ("at", "ts")]
    t.schema = envelope_schema(t.name, t.cols, t.keys)
    random_round(t, rnd, 25, newkey)
    s.apply()
    line, committed = s.export()
    check("s4: the schema change writes every file anew", committed and "schema changed" in (line or ""), line)
    proto, _ = s.protocol()
    check("s4: the protocol has deletionVectors and timestampNtz after the timestamp column came",
          {"deletionVectors", "timestampNtz"} <= set(proto.get("readerFeatures") or [])
          and {"deletionVectors", "timestampNtz"} <= set(proto.get("writerFeatures") or []), f"{proto}")
    dv = 0
    for r in range(3):
        random_round(t, rnd, rnd.randint(10, 30), newkey)
        s.apply()
        line, _ = s.export()
        dv += used_dv(line)
    check(f"s4: refreshes after the schema change use vectors ({dv} of 3)", dv == 3)
    return s


# ---- 5. the key journal reset ----

def scenario_journal_reset():
    say("5. the key journal restarts (CDC_JOURNAL_MIN_CAP=50)")
    rnd = random.Random(505)
    t = Table("jr", ["id"], [("id", "int64"), ("v", "int32"), ("note", "text")], False,
              lambda k, t: {"v": t.rnd.randint(0, 10**6), "note": t.rnd.choice(NOTES)})
    t.rnd = rnd
    s = Scenario("s5_journal", t)
    env = {"CDC_JOURNAL_MIN_CAP": "50"}
    for k in range(1, 121):
        t.create(k)
    s.apply(env=env)
    s.export("--deletion-vectors", file_rows=30)
    newkey = lambda: rnd.randint(1, 400)  # noqa: E731
    anew = dv = 0
    for r in range(8):
        random_round(t, rnd, rnd.randint(8, 14), newkey, pk_changes=r % 2 == 0)
        small = len(t.touched) * 5 <= len(t.live())
        s.apply(env=env, batch_size=4)
        line, _ = s.export()
        dv += used_dv(line)
        anew += fell_back(line) and small
    check(f"s5: after the journal restarted, a refresh of few keys wrote the table anew ({anew} rounds)", anew > 0)
    check(f"s5: other refreshes used vectors ({dv} rounds)", dv > 0)
    return s


# ---- 6. a key file deleted ----

def scenario_key_file_lost():
    say("6. a key file deleted before a refresh")
    rnd = random.Random(606)
    t = Table("kf", ["id"], TYPED_COLS, True, typed_row)
    t.rnd = rnd
    s = Scenario("s6_keyfile", t)
    for k in range(1, 1001):
        t.create(k * 3)
    s.apply()
    newkey = lambda: rnd.randint(1, 4000)  # noqa: E731
    s.export("--deletion-vectors", file_rows=200)
    random_round(t, rnd, 20, newkey)
    s.apply()
    line, _ = s.export()
    check("s6: a refresh by vectors first", used_dv(line), line)
    # the key file of a base file, then that of a patch file (of the active files each time)
    for which in ("base", "patch"):
        act = s.active()
        files = sorted(p for p, a in act.items() if (a["tags"].get("cdcstore.patch") == "1") == (which == "patch"))
        if not check(f"s6: the table has an active {which} file", bool(files)):
            continue
        victim = files[len(files) // 2]
        os.remove(f"{s.dir}/_cdcstore/{victim}.keys")
        random_round(t, rnd, 20, newkey)
        s.apply()
        line, committed = s.export()
        check(f"s6: the key file of a {which} file deleted: the refresh writes the table anew",
              committed and fell_back(line), line)
        random_round(t, rnd, 20, newkey)
        s.apply()
        line, _ = s.export()
        check("s6: the next refresh uses vectors again", used_dv(line), line)
    # every key file damaged (cut short): written anew, saying why
    for kf in os.listdir(f"{s.dir}/_cdcstore"):
        with open(f"{s.dir}/_cdcstore/{kf}", "r+b") as f:
            f.truncate(10)
    random_round(t, rnd, 20, newkey)
    s.apply()
    line, committed = s.export()
    check("s6: damaged key files: the refresh writes the table anew and says why",
          committed and fell_back(line) and "key file is damaged" in (line or ""), line)
    random_round(t, rnd, 20, newkey)
    s.apply()
    line, _ = s.export()
    check("s6: the next refresh uses vectors again", used_dv(line), line)
    return s


# ---- 7. nothing changed ----

def scenario_nothing():
    say("7. refreshes with nothing changed")
    rnd = random.Random(707)
    t = Table("nc", ["id"], [("id", "int64"), ("v", "int32")], False,
              lambda k, t: {"v": t.rnd.randint(0, 10**6)})
    t.rnd = rnd
    s = Scenario("s7_nothing", t)
    for k in range(1, 501):
        t.create(k)
    s.apply()
    s.export("--deletion-vectors", file_rows=100)
    n0 = len(s.versions())
    line, committed = s.export()
    check("s7: a refresh right after the export commits nothing", not committed and "unchanged" in line, line)
    for r in range(2):
        random_round(t, rnd, 15, lambda: rnd.randint(1, 900))
        s.apply()
        line, committed = s.export()
        check(f"s7: a refresh after changes commits (round {r + 1})", committed and used_dv(line), line)
        line, committed = s.export()
        check(f"s7: the same refresh again commits nothing (round {r + 1})", not committed, line)
    # keys created and deleted again between two refreshes: the journal lists them, no file holds
    # them, nothing is to be written
    for k in (5000, 5001, 5002):
        t.create(k)
        t.update(k)
        t.delete(k)
    s.apply()
    line, committed = s.export()
    check("s7: keys created and deleted between two refreshes: nothing committed", not committed, line)
    line, committed = s.export()
    check("s7: and again: nothing committed", not committed, line)
    # only re-deliveries: duplicates of the last records and late older events
    t.duplicates(rnd, 40)
    for _ in range(10):
        t.late(rnd)
    check("s7: the model sees no change from duplicates and late events", not t.touched)
    s.apply()
    line, committed = s.export()
    check("s7: after only duplicates and stale events a refresh commits nothing", not committed, line)
    check("s7: versions", len(s.versions()) == n0 + 2, f"{s.versions()}")
    return s


# ---- 8. every row deleted, then rows again ----

def scenario_all_deleted():
    say("8. every row deleted, then created again")
    rnd = random.Random(808)
    t = Table("ad", ["id"], TYPED_COLS, True, typed_row)
    t.rnd = rnd
    s = Scenario("s8_empty", t)
    for k in range(1, 61):
        t.create(k)
    s.apply()
    s.export("--deletion-vectors", file_rows=10)
    for k in t.live()[:5]:
        t.update(k)
    s.apply()
    s.export()
    for k in t.live():
        t.delete(k)
    s.apply()
    line, committed = s.export()
    check("s8: every row deleted: a new version", committed, line)
    line, committed = s.export()
    check("s8: the empty table refreshed again: nothing committed", not committed, line)
    for k in (5, 70, 71):
        t.create(k)
    s.apply()
    s.export()
    for k in range(100, 160):
        t.create(k)
    s.apply()
    s.export()
    for k in (100, 130):
        t.update(k)
    t.delete(71)
    s.apply()
    line, _ = s.export()
    check("s8: after rows came back, a refresh uses vectors", used_dv(line), line)
    # every row of one base file deleted by a vector (the file stays, all its rows deleted)
    act = s.active()
    base = sorted((json.loads(a["stats"])["minValues"]["id"], json.loads(a["stats"])["maxValues"]["id"])
                  for a in act.values() if a["tags"].get("cdcstore.patch") != "1" and a.get("stats")
                  and json.loads(a["stats"]).get("minValues"))
    lo, hi = base[len(base) // 2]
    gone = [k for k in t.live() if lo <= k <= hi]
    for k in gone:
        t.delete(k)
    s.apply()
    line, _ = s.export()
    check(f"s8: every row of a base file ({len(gone)} keys {lo}..{hi}) deleted by a vector", used_dv(line), line)
    # every row of a patch file changed again (all its rows deleted by a vector); with this seed
    # the three keys were among those just deleted, so the first update creates them again
    for k in (130, 131, 132):
        t.update(k)
    s.apply()
    s.export()
    for k in (130, 131, 132):
        t.update(k)
    s.apply()
    line, _ = s.export()
    full = [a for a in s.active().values() if a.get("deletionVector")
            and a["deletionVector"]["cardinality"] == int(a["tags"]["cdcstore.rows"])]
    check(f"s8: files whose every row a vector deletes ({len(full)}), read below", used_dv(line) and len(full) >= 2,
          line)
    # and every row deleted by a refresh by vectors: a table of one row, that row deleted
    for k in t.live()[1:]:
        t.delete(k)
    s.apply()
    s.export()
    t.delete(t.live()[0])
    s.apply()
    line, committed = s.export()
    check("s8: the last row deleted: a new version", committed, line)
    return s


# ---- 9. a generated history in slices ----

def scenario_gen():
    say("9. bench/gen.py --shape medium history, a refresh after each slice")
    ev, exp = f"{W}/gen.jsonl", f"{W}/gen.csv"
    out, p = run([sys.executable, f"{ROOT}/bench/gen.py", "--shape", "medium", "--keys", "2000", "--events",
                  "4700", "--seed", "909", "--dup-rate", "0.03", "--late-rate", "0.02", "--out", ev,
                  "--expected", exp])
    if out is None:
        check("s9: bench/gen.py", False, p.stderr[-300:])
        return None
    lines = open(ev, encoding="utf-8").read().splitlines()
    t = Table("items", ["id"], [], False, None)
    s = Scenario("s9_gen", t)
    # the snapshot first, then slices of about 300 records (about 150 keys each: under a fifth)
    cuts = [0, 2000] + [2000 + 300 * i for i in range(1, 9)] + [len(lines)]
    dv = 0
    for i in range(len(cuts) - 1):
        path = f"{W}/gen.{i}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines[cuts[i]:cuts[i + 1]]) + "\n")
        out, p = run([CDC, "apply", "--db", s.db, "--quiet", path])
        if out is None:
            check(f"s9: apply of slice {i}", False, p.stderr[-300:])
        line, _ = s.export(*(["--deletion-vectors"] if i == 0 else []), file_rows=250, rg_rows=100)
        dv += used_dv(line)
    check(f"s9: refreshes by deletion vectors ({dv} of {len(cuts) - 2})", dv >= (len(cuts) - 2) // 2)
    return s


# ---- 10. refreshes racing the applies ----

def scenario_race():
    say("10. refreshes while an apply runs (a pipe fed slowly); the last one after it")
    ev, exp = f"{W}/race.jsonl", f"{W}/race.csv"
    out, p = run([sys.executable, f"{ROOT}/bench/gen.py", "--shape", "narrow", "--keys", "5000", "--events",
                  "11000", "--seed", "1010", "--out", ev, "--expected", exp])
    if out is None:
        check("s10: bench/gen.py", False, p.stderr[-300:])
        return None
    lines = open(ev, encoding="utf-8").read().splitlines(keepends=True)
    t = Table("items_narrow", ["id"], [("id", "int64")], False, None)
    s = Scenario("s10_race", t)
    first = f"{W}/race.0.jsonl"
    with open(first, "w", encoding="utf-8") as f:
        f.writelines(lines[:5000])
    run([CDC, "apply", "--db", s.db, "--quiet", first])
    s.export("--deletion-vectors", file_rows=500)
    ap = subprocess.Popen([CDC, "apply", "--db", s.db, "--quiet", "-"], stdin=subprocess.PIPE,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def feed():
        try:
            for i in range(5000, len(lines), 60):
                ap.stdin.write("".join(lines[i:i + 60]).encode())
                ap.stdin.flush()
                time.sleep(0.04)
        finally:
            ap.stdin.close()
    th = threading.Thread(target=feed, daemon=True)
    th.start()
    racing = 0
    while ap.poll() is None and racing < 5:
        before = s.versions()
        out, p = run([CDC, "export", "--db", s.db, "--table", t.full, "--format", "delta", "--output", s.dir,
                      "--file-rows", "500"])
        if out is None:
            check("s10: a refresh during the apply", False, p.stderr.strip()[:300])
            break
        for v in s.versions():
            if v not in before:
                s.truth[v] = None  # no replica state to compare with: its keys must be unique
                racing += 1
        time.sleep(0.2)
    th.join()
    rc = ap.wait()
    check(f"s10: the apply ends well ({racing} versions committed during it)", rc == 0 and racing >= 2,
          ap.stderr.read().decode()[-300:])
    line, _ = s.export()
    return s


def unique_keys(what, s, got):
    if isinstance(got, str):
        return check(what, False, got)
    names, rows = got
    idx = [names.index(k) for k in s.t.keys]
    c = collections.Counter(tuple(r[i] for i in idx) for r in rows)
    dup = [k for k, n in c.items() if n > 1]
    return check(what + f" ({len(rows)} rows)", not dup, f"{len(dup)} keys twice or more, e.g. {dup[:3]}")


# ---- 11. another writer's maintenance: VACUUM and a checkpoint ----

def scenario_maintenance():
    """deltalake's VACUUM commits two versions holding a commitInfo alone ("VACUUM START",
    "VACUUM END"), and its checkpoint writes a Parquet copy of the log: neither changes the table
    cdcstore wrote, and refreshes go on (they were refused as another writer's changes). VACUUM
    removes what older versions need, so this table is read at its newest versions only, here."""
    say("11. VACUUM and a checkpoint by deltalake between refreshes")
    rnd = random.Random(1111)
    t = Table("mt", ["id"], [("id", "int64"), ("v", "int32")], False,
              lambda k, t: {"v": t.rnd.randint(0, 10**6)})
    t.rnd = rnd
    s = Scenario("s11_maintenance", t)
    for k in range(1, 401):
        t.create(k)
    s.apply()
    s.export(file_rows=100)
    for r, flags in enumerate(((), ("--deletion-vectors",), ())):
        random_round(t, rnd, 12, lambda: rnd.randint(1, 600), pk_changes=False)
        s.apply()
        line, committed = s.export(*flags)
        check(f"s11: refresh {r + 1} commits", committed, line)
        v = s.versions()[-1]
        compare(f"s11 v{v}: deltalake", s.truth[v], read_deltalake(s.dir, v))
        from deltalake import DeltaTable
        dt = DeltaTable(s.dir)
        if r == 0:
            dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
            check("s11: VACUUM committed versions of its own", s.versions()[-1] > v, f"{s.versions()}")
        elif r == 1:
            dt.create_checkpoint()
            check("s11: a checkpoint written", bool(glob.glob(f"{s.dir}/_delta_log/*checkpoint*")))
    return None


def main():
    only = [x for x in os.environ.get("DV_ONLY", "").split(",") if x]
    scs = [("1", scenario_typed), ("2", scenario_text_keys), ("2", scenario_composite), ("3", scenario_upgrade),
           ("4", scenario_add_column), ("5", scenario_journal_reset), ("6", scenario_key_file_lost),
           ("7", scenario_nothing), ("8", scenario_all_deleted), ("9", scenario_gen),
           ("10", scenario_race), ("11", scenario_maintenance)]
    # Spark starts beside the scenarios (its JVM takes half a minute); the JVM's output (Ivy's
    # report, log lines) goes to WORK/spark.log, ours to the original stdout.
    spark_thread, spark_box = None, []
    if not os.environ.get("DV_NO_SPARK"):
        redirect_fds(f"{W}/spark.log")

        def start():
            try:
                spark_box.append(spark_session(W))
            except Exception as e:  # reported by the caller
                OUT.write(f"Spark session failed: {type(e).__name__}: {e}\n")
        spark_thread = threading.Thread(target=start, daemon=True)
        spark_thread.start()
    done = []
    for n, fn in scs:
        if only and n not in only:
            continue
        s = fn()
        if s:
            done.append(s)

    say("deltalake: every version of every table (time travel), and filtered reads of each")
    for s in done:
        for v in s.versions():
            if s.truth[v] is None:
                unique_keys(f"{s.label} v{v} (written during an apply): deltalake, unique keys", s,
                            read_deltalake(s.dir, v))
                continue
            compare(f"{s.label} v{v}: deltalake", s.truth[v], read_deltalake(s.dir, v))
            for where, keep in filters(s, s.truth[v]):
                compare(f"{s.label} v{v}: deltalake where {where}", s.truth[v],
                        read_deltalake(s.dir, v, where), keep)

    if spark_thread:
        say("Spark: waiting for the session")
        spark_thread.join()
        restore_fds()
        if not spark_box:
            check("Spark session starts", False, f"see {W}/spark.log")
        else:
            spark = spark_box[0]
            say("Spark: every version of every table, and filtered reads of the newest")
            for s in done:
                vs = s.versions()
                for v in vs:
                    if s.truth[v] is None:
                        unique_keys(f"{s.label} v{v} (written during an apply): Spark, unique keys", s,
                                    read_spark(spark, s.dir, v))
                        continue
                    compare(f"{s.label} v{v}: Spark", s.truth[v], read_spark(spark, s.dir, v))
                for where, keep in filters(s, s.truth[vs[-1]]):
                    compare(f"{s.label} v{vs[-1]}: Spark where {where}", s.truth[vs[-1]],
                            read_spark(spark, s.dir, vs[-1], where), keep)
            spark.stop()
    else:
        say("Spark skipped (DV_NO_SPARK)")
    say(f"{checks['ok']} checks passed, {checks['fail']} failed" + (f": {fails}" if fails else ""))
    OUT.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    # without the interpreter's teardown (deltalake's and Arrow's threads; read_table.py's note)
    os._exit(1 if fails else 0)


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # fd 2 may be the JVM's log here
        OUT.write(traceback.format_exc())
        OUT.flush()
        os._exit(2)
