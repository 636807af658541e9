#!/usr/bin/env python3
"""Turn the benchmark's result records into bench/RESULTS.md and the gnuplot chart.

Input: the results file (one JSON object per line, written by the peers through common.result),
the generator's meta JSON, and the commands file that run.sh kept. Output: RESULTS.md with the
machine, the workload, one table per batch size (events/s, ratio to cdcstore, peak memory, disk
bytes, verification), the goals of issue 5 checked on this run, and the commands; plus a gnuplot
data file and script, run to draw throughput.png.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PEERS = [  # (key, label, kind)
    ("cdcstore", "cdcstore apply", "system"),
    ("cdcstore-sync", "cdcstore apply --sync (fsync every batch)", "system"),
    ("postgres", "PostgreSQL 15 `apply_batch` MERGE", "peer"),
    ("sqlite-json1", "SQLite upsert, JSON decoded in SQL (json1)", "peer"),
    ("sqlite-python", "SQLite upsert, JSON decoded in Python", "peer"),
    ("spark-delta", "Spark + Delta `foreachBatch` MERGE", "peer"),
    ("decode-only-1t", "limit: cJSON decoding only, 1 thread", "limit"),
    ("decode-only-2t", "limit: cJSON decoding only, 2 threads", "limit"),
    ("rocksdb-raw", "limit: RocksDB blind writes, WriteBatch 1,000", "limit"),
]
LABEL = {k: l for k, l, _ in PEERS}
GOAL_BATCH = 10_000


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": model, "nproc": os.cpu_count() if not shutil.which("nproc") else
            subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip(),
            "mem": mem, "kernel": platform.release(), "os": distro()}


def distro():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def load_line(rows):
    loads = [r["loadavg_1m"] for r in rows if "loadavg_1m" in r]
    if not loads:
        return ""
    return (f"- 1-minute load average at the end of each measurement: {min(loads):.1f} to "
            f"{max(loads):.1f} (above 2 means other work shared the 2 cores during this run)")


def fmt_int(x):
    return "–" if x is None else f"{x:,.0f}"


def fmt_ratio(x):
    return f"{x:.2f}×" if x >= 0.1 else f"{x:.2g}×"


def fmt_mib(b):
    return "–" if not b else f"{b / 1048576:,.0f} MiB"


def fmt_bytes(b):
    if b is None:
        return "–"
    if b == 0:
        return "0"
    return f"{b:,} ({b / 1048576:,.1f} MiB)"


def load(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
    return rows


def pick(rows, peer, batch):
    """The record of peer at batch (limits have batch 0 and count for every batch)."""
    for r in rows:
        if r.get("peer") == peer and r.get("batch") in (batch, 0):
            return r
    return None


def eps(r):
    return r.get("events_per_s") if r and r.get("status") in ("ok", "partial") else None


def per_cpu(r):
    """Events per CPU-second: throughput with the share of the cores it got factored out."""
    e = eps(r)
    c = r.get("cpu_percent") if r else None
    return e / (c / 100) if (e and c) else None


def table(rows, batch):
    cdc = eps(pick(rows, "cdcstore", batch))
    out = ["| system | events/s | ratio to cdcstore | CPU (load average) | events per CPU-second | peak memory | "
           "bytes on disk | verified |",
           "|---|---:|---:|---:|---:|---:|---:|---|"]
    notes = []
    for key, label, _kind in PEERS:
        r = pick(rows, key, batch)
        if r is None:
            continue
        e = eps(r)
        status = r.get("status")
        if status == "missing":
            out.append(f"| {label} | missing | – | – | – | – | – | {r.get('note', '')} |")
            continue
        if status == "failed":
            v = r.get("verified", "")
            out.append(f"| {label} | failed | – | – | – | {fmt_mib(r.get('peak_rss_bytes'))} | – | "
                       f"{v}: {r.get('note', '')[:200]} |")
            continue
        ratio = fmt_ratio(e / cdc) if (e and cdc) else "–"
        shown = fmt_int(e) + (" (partial)" if status == "partial" else "")
        cpu = f"{r['cpu_percent']}%" if r.get("cpu_percent") is not None else "–"
        if r.get("loadavg_1m") is not None:
            cpu += f" (load {r['loadavg_1m']:.1f})"
        out.append(f"| {label} | {shown} | {ratio} | {cpu} | {fmt_int(per_cpu(r))} | "
                   f"{fmt_mib(r.get('peak_rss_bytes'))} | "
                   f"{fmt_bytes(r.get('disk_bytes')) if r.get('disk_bytes') else '–'} | "
                   f"{r.get('verified', '')} |")
        if key == "postgres" and r.get("load_seconds") and e:
            el = r["events"] / (r["seconds"] + r["load_seconds"])
            out.append(f"| PostgreSQL, counting the load into `cdc_events` ({r['load_seconds']:.1f} s: "
                       f"JSON text to jsonb happens there) | {fmt_int(el)} | "
                       f"{fmt_ratio(el / cdc) if cdc else '–'} | | | | | |")
        if r.get("note") and key not in ("decode-only-1t", "decode-only-2t", "rocksdb-raw"):
            notes.append(f"- {label}: {r['note']}")
    return "\n".join(out), notes


def goals(rows, batches):
    cdc = pick(rows, "cdcstore", GOAL_BATCH)
    lines = []
    if not cdc or cdc.get("status") != "ok":
        why = cdc.get("status", "not run") if cdc else "not run"
        return [f"- Not checked: cdcstore is {why} at batches of {GOAL_BATCH:,}"
                + (f" ({cdc.get('note')})" if cdc and cdc.get("note") else "") + "."]
    c = cdc["events_per_s"]

    def check(name, peer_keys, want):
        best = None
        for k in peer_keys:
            e = eps(pick(rows, k, GOAL_BATCH))
            if e and (best is None or e > best[1]):
                best = (k, e)
        if best is None:
            lines.append(f"- {name}: not checked ({', '.join(peer_keys)} did not run)")
            return
        ratio = c / best[1]
        ok = ratio >= want
        pc, pp = per_cpu(cdc), per_cpu(pick(rows, best[0], GOAL_BATCH))
        lines.append(f"- {name}: cdcstore {c:,.0f} events/s ÷ {LABEL[best[0]]} {best[1]:,.0f} = "
                     f"**{ratio:.2f}×** (goal ≥ {want}×): **{'met' if ok else 'NOT met'}**"
                     + (f"; per CPU-second {pc:,.0f} ÷ {pp:,.0f} = {pc / pp:.2f}×" if pc and pp else ""))

    check("≥ 5× the PostgreSQL procedure", ["postgres"], 5)
    check("≥ 5× SQLite (the faster variant)", ["sqlite-json1", "sqlite-python"], 5)
    l1 = eps(pick(rows, "decode-only-1t", GOAL_BATCH))
    l2 = eps(pick(rows, "decode-only-2t", GOAL_BATCH))
    lim = max(l1 or 0, l2 or 0)
    if lim:
        share = c / lim
        pc = per_cpu(cdc)
        l1c = per_cpu(pick(rows, "decode-only-1t", GOAL_BATCH))
        lines.append(f"- ≥ 70% of the JSON-decoding-only limit on 2 cores: {c:,.0f} ÷ {lim:,.0f} = "
                     f"**{share:.0%}**: **{'met' if share >= 0.7 else 'NOT met'}**"
                     + (f" (2 threads decoded only {(l2 or 0) / l1:.2f}× as fast as 1 in this run: "
                        "the second core was busy with other work, so the true 2-core limit is "
                        "higher; the larger of the two figures is used)"
                        if l1 and (not l2 or l2 < 1.2 * l1) else "")
                     + (f"; per CPU-second, cdcstore {pc:,.0f} against decoding alone {l1c:,.0f} "
                        f"({pc / l1c:.0%}: what cdcstore would reach with both cores as busy as "
                        f"the decoder keeps them)" if pc and l1c else ""))
    peak = [pick(rows, "cdcstore", b) for b in batches]
    peak = [r.get("peak_rss_bytes") for r in peak if r and r.get("peak_rss_bytes")]
    if peak:
        m = max(peak)
        lines.append(f"- Peak memory under 512 MiB: largest peak RSS {m / 1048576:,.0f} MiB over "
                     f"the batch sizes: **{'met' if m < 512 * 1048576 else 'NOT met'}**")
    return lines


def chart(rows, batches, outdir, png):
    gp = shutil.which("gnuplot")
    dat = os.path.join(outdir, "throughput.dat")
    keys = [k for k, _, _ in PEERS if any(r.get("peer") == k for r in rows)]
    with open(dat, "w") as f:
        f.write("batch " + " ".join(f'"{k}"' for k in keys) + "\n")
        for b in batches:
            vals = []
            for k in keys:
                e = eps(pick(rows, k, b))
                vals.append(f"{e:.1f}" if e else "?")
            f.write(f"{b} " + " ".join(vals) + "\n")
    if not keys:
        return "no throughput figures in this run"
    script = os.path.join(outdir, "throughput.gp")
    plots = []
    colors = {"cdcstore": "#d62728", "cdcstore-sync": "#e377c2", "postgres": "#1f77b4", "sqlite-json1": "#2ca02c",
              "sqlite-python": "#98df8a", "spark-delta": "#ff7f0e", "decode-only-1t": "#7f7f7f",
              "decode-only-2t": "#000000", "rocksdb-raw": "#9467bd"}
    for i, k in enumerate(keys, start=2):
        kind = dict((kk, kd) for kk, _, kd in PEERS)[k]
        style = "lines dashtype 2 lw 2" if kind == "limit" else "linespoints pt 7 ps 1.3 lw 2"
        style += f" lc rgb '{colors.get(k, '#333333')}'"
        title = LABEL[k].replace("`", "")
        partial = [b for b in batches if (pick(rows, k, b) or {}).get("status") == "partial"]
        if partial:
            title += " (partial at " + ", ".join(f"{b:,}" for b in partial) + ": time budget)"
        plots.append(f"'{dat}' using 1:{i} with {style} title \"{title}\"")
    with open(script, "w") as f:
        f.write(f"""set terminal pngcairo size 1000,900 noenhanced font ",11"
set output '{png}'
set datafile missing '?'
set key below vertical maxcols 1
set logscale xy
set xtics ({', '.join(f'"{b:,}" {b}' for b in batches)})
set xrange [{min(batches) * 0.7}:{max(batches) * 1.4}]
set grid
set xlabel 'events per batch'
set ylabel 'events/s (log scale)'
set format y '%.0s%c'
set title 'Applying the same Debezium stream: throughput per batch size'
plot {', '.join(plots)}
""")
    if not gp:
        return "gnuplot not found: chart not drawn"
    r = subprocess.run([gp, script], capture_output=True, text=True)
    if r.returncode != 0:
        # pngcairo missing in some builds: fall back to the plain png terminal.
        with open(script) as f:
            s = f.read().replace("pngcairo size 1000,900 noenhanced font \",11\"",
                                 "png size 1000,900 noenhanced")
        with open(script, "w") as f:
            f.write(s)
        r = subprocess.run([gp, script], capture_output=True, text=True)
    return None if r.returncode == 0 else f"gnuplot failed: {r.stderr.strip()[:300]}"

LATENCY_GOAL_MS = 500


def latency_settings(rows):
    """The section of bench/latency.sh's runs: each configuration's end-to-end latency and stages."""
    runs = [r for r in rows if r.get("peer") == "latency"]
    if not runs:
        return []

    def st(d, k):
        v = (d or {}).get(k)
        return "–" if v is None else f"{v:,}"

    out = ["## Latency settings side by side (`bench/latency.sh`)", "",
           "PostgreSQL 15 → Debezium 3.6.1 (Kafka Connect 4.3) → Kafka 4.3 → `cdcstore ingest`, each "
           "configuration on a fresh database, connector and topics, in turn (runs interleaved), under "
           "changegen's steady load after a 10 s warm-up. End to end: apply time minus the change's "
           "`source.ts_ms`, every streamed change of the window. Stages: commit → Debezium event is the "
           "event's `ts_ms` minus `source.ts_ms`, event → Kafka append the record's timestamp (the topics "
           "have `message.timestamp.type=LogAppendTime`: the broker's append time) minus `ts_ms`, both "
           "over every orders record of the window; Kafka append → apply is cdcstore's per record "
           "(`--kafka-latency-report`). Load: the 1-minute load average at the end of the window "
           "(2 cores; above 2, other work shared them).", "",
           "| configuration | run | changes/s | load | p50 | p99 | max | commit → event p50 / p99 | "
           "event → Kafka p50 / p99 | Kafka → apply p50 / p99 |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        if r.get("status") != "ok":
            out.append(f"| {r.get('config', '?')} | {r.get('run', '')} | failed | | | | | | | "
                       f"{r.get('note', '')[:200]} |")
            continue
        a, b, c = r.get("commit_to_event"), r.get("event_to_kafka"), r.get("kafka_to_apply")
        out.append(f"| {r['config']} | {r['run']} | {r['changes_per_s']:,} | {r['loadavg_1m']:.1f} | "
                   f"{r['p50_ms']:,} ms | **{r['p99_ms']:,} ms** | {r['max_ms']:,} ms | "
                   f"{st(a, 'p50')} / {st(a, 'p99')} ms | {st(b, 'p50')} / {st(b, 'p99')} ms | "
                   f"{st(c, 'p50')} / {st(c, 'p99')} ms |")
    out.append("")
    seen = []
    for r in runs:
        if r.get("config") in seen:
            continue
        seen.append(r.get("config"))
        mine = [x for x in runs if x.get("config") == r.get("config") and x.get("status") == "ok"]
        settings = r.get("settings", "").strip() or "none: the stack's defaults"
        cfg = r.get("connector") or {}
        shown = ", ".join(f"{k}={v}" for k, v in cfg.items())
        line = f"- {r.get('config')}: settings {settings}" + (f" (connector: {shown})" if shown else "")
        if mine:
            worst = max(x["p99_ms"] for x in mine)
            rate = min(x["changes_per_s"] for x in mine)
            ok = worst < LATENCY_GOAL_MS and rate >= 1000
            line += (f"; worst p99 over {len(mine)} run{'s' if len(mine) > 1 else ''}: {worst:,} ms at "
                     f"{rate:,} changes/s or more: **{'met' if ok else 'NOT met'}** (goal: p99 under "
                     f"{LATENCY_GOAL_MS} ms at 1,000 changes/s)")
        out.append(line)
    out.append("")
    return out



# ---- Row shapes (the shapes step) ----

SHAPE_ORDER = ("narrow", "medium", "wide")
SHAPE_GOALS = (  # (label, key, goal): cdcstore's events/s over the peer's figure, at least `goal`
    ("SQLite's guarded upsert, load excluded", ("shape-sqlite", False), 5),
    ("SQLite's guarded upsert, counting the load", ("shape-sqlite", True), None),
    ("the document's apply_batch MERGE, load excluded", ("shape-postgres", False), 3),
    ("the document's apply_batch MERGE, counting the load", ("shape-postgres", True), 5),
)
RSS_GOAL = 512 * 1048576


def shape_figures(r, with_load):
    """(events/s, events per CPU-second) of a verified shapes record; with_load adds the time and
    CPU time of its load (the lines into SQLite, the COPY into cdc_events)."""
    if not r or r.get("status") != "ok" or not r.get("seconds"):
        return None, None
    secs, n = r["seconds"], r["events"]
    cpu = r["cpu_percent"] / 100 * secs if r.get("cpu_percent") is not None else None
    if with_load:
        if r.get("load_seconds") is None:
            return None, None
        secs += r["load_seconds"]
        cpu = cpu + r["load_cpu_seconds"] if cpu is not None and r.get("load_cpu_seconds") else None
    return n / secs, (n / cpu if cpu else None)


def shape_meta_line(shape, meta, recs):
    from gen import SHAPES   # the columns of each shape
    sh = SHAPES.get(shape)
    cols = ", ".join(f"{c} {t}" for c, t in sh.columns) if sh else "?"
    line = f"- **{shape}**: `public.{sh.table if sh else '?'}` ({len(sh.columns) if sh else '?'} columns: {cols})"
    if meta:
        line += (f"; {meta['events']:,} records over {meta['keys']:,} keys, seed {meta['seed']}, "
                 f"final table {meta['final_rows']:,} rows")
    ib = next((r.get("input_bytes") for r in recs if r.get("input_bytes")), None)
    ev = next((r.get("events") for r in recs if r.get("events")), None)
    if ib and ev:
        line += f", {ib / ev:,.0f} bytes per record on average ({ib / 1048576:,.0f} MiB)"
    return line + "."


def row_shapes(rows, shape_meta):
    recs = [r for r in rows if str(r.get("peer", "")).startswith("shape-")]
    if not recs:
        return []
    shapes = [s for s in SHAPE_ORDER if any(r.get("shape") == s for r in recs)]
    shapes += sorted({r.get("shape") for r in recs if r.get("shape") not in SHAPE_ORDER} - {None})
    pick_s = lambda peer, shape: next((r for r in recs if r.get("peer") == peer
                                       and r.get("shape") == shape), None)
    out = ["## Row shapes (batches of 10,000)", "",
           "The same change-stream model (snapshot, creates, updates, deletes with tombstones, "
           "primary-key changes, about 2% restart duplicates and 1% late events; `bench/gen.py "
           "--shape`, one seed) on three tables, each applied from empty at batches of 10,000 by "
           "each system in turn and its final state compared byte for byte with the expected CSV "
           "before its figure counts. cdcstore: the whole `cdcstore apply --batch-size 10000` "
           "command. SQLite: the lines are first loaded into a table (json1 not involved), then "
           "each batch is decoded by json1, reduced to the newest event per key and upserted with "
           "the LSN guard in one statement and one transaction; \"load excluded\" times the "
           "batches alone, \"counting the load\" adds the load. PostgreSQL 15: the document's "
           "`apply_batch` MERGE (`bench/apply_batch.sql` filled with the shape's columns); "
           "\"load excluded\" times the CALLs alone, \"counting the load\" adds the COPY of the "
           "JSON into `cdc_events` (where the text becomes jsonb). \"cdcstore ÷ this\" is "
           "cdcstore's figure over the row's (the goals' ratios); events per CPU-second divide by "
           "the CPU time of the measured process (PostgreSQL: the backends of the CALLs and of the "
           "COPY).", ""]
    for sh in shapes:
        out.append(shape_meta_line(sh, shape_meta.get(sh), [r for r in recs if r.get("shape") == sh]))
    out += ["", "| shape | system | events/s | cdcstore ÷ this | CPU (load average) | events per "
            "CPU-second | cdcstore ÷ this, per CPU-second | peak RSS | verified |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    systems = (("shape-cdcstore", False, "cdcstore apply"),
               ("shape-sqlite", False, "SQLite guarded upsert (json1), load excluded"),
               ("shape-sqlite", True, "SQLite guarded upsert (json1), counting the load"),
               ("shape-postgres", False, "PostgreSQL 15 `apply_batch` MERGE, load excluded"),
               ("shape-postgres", True, "PostgreSQL 15 `apply_batch` MERGE, counting the load"))
    goal_lines = []
    for sh in shapes:
        c = pick_s("shape-cdcstore", sh)
        ce, cc = shape_figures(c, False)
        for peer, with_load, label in systems:
            r = pick_s(peer, sh)
            if r is None:
                continue
            if with_load and r.get("status") == "ok":
                label += f" ({r.get('load_seconds', 0):.1f} s of load)"
            if r.get("status") != "ok":
                if with_load:
                    continue
                out.append(f"| {sh} | {label} | {r.get('status', '?')} | – | – | – | – | "
                           f"{fmt_mib(r.get('peak_rss_bytes'))} | {r.get('verified', '')}: "
                           f"{str(r.get('note', ''))[:200]} |")
                continue
            e, pc = shape_figures(r, with_load)
            cpu = (f"{r['cpu_percent']}%" if r.get("cpu_percent") is not None and not with_load
                   else "–")
            if r.get("loadavg_1m") is not None and not with_load:
                cpu += f" (load {r['loadavg_1m']:.1f})"
            ratio = f"{ce / e:.2f}×" if ce and e and peer != "shape-cdcstore" else "–"
            cratio = f"{cc / pc:.2f}×" if cc and pc and peer != "shape-cdcstore" else "–"
            out.append(f"| {sh} | {label} | {fmt_int(e)} | {ratio} | {cpu} | {fmt_int(pc)} | "
                       f"{cratio} | {fmt_mib(r.get('peak_rss_bytes'))} | {r.get('verified', '')} |")
        # The goals of this shape.
        if not ce:
            why = c.get("status", "not run") if c else "not run"
            goal_lines.append(f"- **{sh}**: not checked: cdcstore is {why}"
                              + (f" ({str(c.get('note', ''))[:200]})" if c and c.get("note") else ""))
            continue
        parts = []
        for label, (peer, with_load), want in SHAPE_GOALS:
            e, pc = shape_figures(pick_s(peer, sh), with_load)
            if not e:
                parts.append(f"{label}: not checked (not run or not verified)")
                continue
            txt = f"{ce / e:.2f}× {label}"
            if want:
                txt += f" (goal ≥ {want}×: **{'met' if ce / e >= want else 'NOT met'}**)"
            if cc and pc:
                txt += f", {cc / pc:.2f}× per CPU-second"
            parts.append(txt)
        rss = c.get("peak_rss_bytes")
        if rss:
            parts.append(f"peak RSS {fmt_mib(rss)} (goal < 512 MiB: "
                         f"**{'met' if rss < RSS_GOAL else 'NOT met'}**)")
        goal_lines.append(f"- **{sh}**: cdcstore {ce:,.0f} events/s"
                          + (f", {cc:,.0f} per CPU-second" if cc else "") + ": " + "; ".join(parts) + ".")
    out += ["", "Goals per shape (cdcstore at least 5× SQLite's guarded upsert, at least 3× the "
            "document's `apply_batch` MERGE with its JSON load excluded and 5× counting it, peak "
            "RSS under 512 MiB):", ""] + goal_lines + [""]
    return out


SECTION_KEYS = ("Machine", "Workload", "Goals of issue 5", "Row shapes", "Where cdcstore spends", "Reconcile",
                "End-to-end latency through Kafka", "Latency settings", "Query shim", "A thousand tables",
                "Kafka backlog", "Export", "Chart", "What is timed", "Commands of this run", "Not measured")
# The sections that the throughput steps (cdcstore limits sqlite postgres spark) write.
THROUGHPUT_KEYS = ("Machine", "Workload", "Batches of", "Goals of issue 5", "Where cdcstore spends",
                   "Export", "Chart", "What is timed")


def order(key):
    """Where a section goes: SECTION_KEYS' order, the batch tables after the workload."""
    keys = list(SECTION_KEYS)
    keys.insert(keys.index("Workload") + 1, "Batches of")
    k = "Batches of" if key.startswith("Batches of") else key
    return keys.index(k) if k in keys else len(keys)


def section_key(heading):
    for k in SECTION_KEYS:
        if heading.startswith(k):
            return k
    return heading


def sections(text):
    """(preamble, [(key, text)]) of a RESULTS.md: one section per '## ' heading."""
    pre, out, cur = [], [], None
    for line in text.split("\n"):
        if line.startswith("## "):
            cur = [section_key(line[3:].strip()), [line]]
            out.append(cur)
        elif cur is None:
            pre.append(line)
        else:
            cur[1].append(line)
    return "\n".join(pre), [(k, "\n".join(v)) for k, v in out]


def merge(old, new, rows, started=None):
    """A partial run's report: its sections where it measured something, the old file's elsewhere
    (hand-written notes in them included), in the old file's order; a section the old file lacks
    goes after the last one that comes before it in SECTION_KEYS' order."""
    throughput = any(r.get("peer") in LABEL for r in rows)
    oldpre, olds = sections(old)
    pre, news = sections(new)
    # When the run began: the old file's start, as this partial run's results file began afresh.
    m = re.search(r", run started (.*?)\. Do not edit", oldpre)
    if m and started and "partly again" not in started:
        pre = pre.replace(f", run started {started}.", f", run started {m.group(1)} (partly again from {started}).")

    def measured(key):
        if key == "Commands of this run" or key == "Not measured":
            return True
        if key in THROUGHPUT_KEYS or key.startswith("Batches of"):
            return throughput
        return True  # the other sections are only written when their step left records
    fresh = {k: t for k, t in news if measured(k)}
    old_keys = [k for k, _ in olds]
    merged = [(k, fresh.get(k, t)) for k, t in olds]
    for k, t in news:
        if k in old_keys or k not in fresh:
            continue
        at = 0
        for j, (mk, _) in enumerate(merged):
            if order(mk) <= order(k):
                at = j + 1
        merged.insert(at, (k, t))
        old_keys.append(k)
    # The commands: the old run's, then this one's when its commands file started afresh.
    oldc = dict(olds).get("Commands of this run")
    newc = fresh.get("Commands of this run")
    if oldc and newc:
        body = lambda t: t.split("```")[1].strip("\n") if t.count("```") >= 2 else ""
        ob, nb = body(oldc), body(newc)
        if ob and ob.split("\n")[0] not in nb:
            # The old body may end with the start of this commands file (an
            # earlier partial run on the same file): that part once.
            ol, nl = ob.split("\n"), nb.split("\n")
            cut = next((i for i in range(len(ol)) if len(ol) - i <= len(nl) and nl[:len(ol) - i] == ol[i:]),
                       len(ol))
            combined = newc.replace(nb, dedupe_runs("\n".join(ol[:cut] + nl)), 1)
            merged = [(k, combined if k == "Commands of this run" else t) for k, t in merged]
    # What was not measured: only what no section of the merged file shows.
    have = {k for k, _ in merged}
    gone = {"End-to-end latency through Kafka": "End-to-end latency through Kafka",
            "Row shapes": "Row shapes",
            "Latency settings": "Latency settings", "Query shim": "Query shim",
            "A thousand tables": "A thousand tables", "Reconcile": "Reconcile",
            "Kafka backlog": "Kafka backlog"}
    out = []
    for k, t in merged:
        if k == "Not measured":
            lines = [l for l in t.split("\n")
                     if not any(l.startswith(f"- {v}") and g in have for g, v in gone.items())]
            if not any(l.startswith("- ") for l in lines):
                continue
            t = "\n".join(lines)
        out.append(t)
    return pre + "\n" + "\n".join(out)



BACKLOG_GOAL = 0.9


def dedupe_runs(text):
    """The commands text with each partial run's block ("# HH:MM UTC: again with ...", then its
    commands) kept once, in its first place: older files repeat blocks they merged before."""
    blocks, cur = [], []
    for line in text.split("\n"):
        if line.startswith("# ") and ": again with BENCH_STEPS=" in line and cur:
            blocks.append(cur)
            cur = []
        cur.append(line)
    if cur:
        blocks.append(cur)
    seen, out = set(), []
    for b in blocks:
        key = "\n".join(b)
        if key in seen:
            continue
        seen.add(key)
        out.extend(b)
    return "\n".join(out)


def backlog_rows(brows, out, lines):
    """The table rows (into out) and the ratio lines (into lines) of one backlog case's records."""
    f2 = lambda x: f"{x:.2f}" if x is not None else "–"
    for r in brows:
        what = r.get("what", "")
        if what == "produce":
            if r.get("status") == "ok":
                where = (f"{fmt_int(r.get('topics'))} topics of one partition ({r.get('topic')}), "
                         f"{fmt_int(r.get('rows'))} live rows at the end" if r.get("case") == "tables" else
                         f"{r.get('topic')}")
                parts = r.get("per_partition") or []
                lines.append(f"- produced {fmt_int(r.get('events'))} records ({fmt_int(r.get('tombstones'))} "
                             f"tombstones) into {where} in {r.get('seconds', 0):.1f} s"
                             + ("; per partition: " + ", ".join(fmt_int(x) for x in parts) if parts else ""))
            else:
                lines.append(f"- producing failed: {r.get('note', '')}")
            continue
        if r.get("status") not in ("ok",) and r.get("seconds") is None:
            out.append(f"| {r.get('run', '')} | {what or 'failed'} | | | | | | | {r.get('note', '')} | "
                       f"{r.get('verified', '')} |")
            continue
        detail = ""
        if what == "ingest":
            detail = (f"{r.get('partitions', '')} partitions; first batch after {f2(r.get('startup_seconds'))} s; "
                      f"end known to {1000 * (r.get('resolution_s') or 0):.0f} ms; lag at end "
                      f"{fmt_int(r.get('lag_at_end'))}; broker CPU {f2(r.get('broker_cpu_seconds'))} s")
        out.append(f"| {r.get('run', '')} | cdcstore {what} | {f2(r.get('seconds'))} | "
                   f"{fmt_int(r.get('events_per_s'))} | {f2(r.get('cpu_seconds'))} | "
                   f"{fmt_int(r.get('events_per_cpu_s'))} | {fmt_mib(r.get('peak_rss_bytes'))} | "
                   f"{r.get('loadavg_1m', '')} | {detail} | {r.get('verified', '')} |")
    runs = sorted({r.get("run") for r in brows if r.get("run")})
    pair = lambda run, what: next((r for r in brows if r.get("run") == run and r.get("what") == what), None)
    for run in runs:
        i, a = pair(run, "ingest"), pair(run, "apply")
        ie, ae = eps(i), eps(a)
        if ie and ae:
            ratio = ie / ae
            cpu = ""
            if i.get("events_per_cpu_s") and a.get("events_per_cpu_s"):
                cpu = f"; per CPU-second x{i['events_per_cpu_s'] / a['events_per_cpu_s']:.2f}"
            lines.append(f"- run {run}: ingest {fmt_int(ie)} events/s against apply {fmt_int(ae)}: "
                         f"x{ratio:.2f}{cpu}: **{'met' if ratio >= BACKLOG_GOAL else 'NOT met'}** "
                         f"(goal x{BACKLOG_GOAL:.2f} or more)")
        else:
            lines.append(f"- run {run}: no ratio (a program failed)")
    ratios = sorted(eps(pair(run, "ingest")) / eps(pair(run, "apply")) for run in runs
                    if eps(pair(run, "ingest")) and eps(pair(run, "apply")))
    if len(ratios) >= 3:
        med = ratios[len(ratios) // 2] if len(ratios) % 2 else (ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2
        lines.append(f"- median of the {len(ratios)} runs' ratios (each run's pair shares the machine's load): "
                     f"x{med:.2f}: **{'met' if med >= BACKLOG_GOAL else 'NOT met'}** (goal x{BACKLOG_GOAL:.2f} or more)")


BACKLOG_HEADER = ["| run | program | seconds | events/s | CPU-seconds | events per CPU-second | peak memory | load | "
                  "detail | verified |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]


def backlog_section(rows):
    """The backlog step (bench/backlog.sh): cdcstore ingest from Kafka against cdcstore apply."""
    brows = [r for r in rows if r.get("peer") == "backlog" and not r.get("case")]
    trows = [r for r in rows if r.get("peer") == "backlog" and r.get("case") == "tables"]
    if not brows and not trows:
        return []
    out = ["## Kafka backlog (`bench/backlog.sh`)", "",
           "The benchmark's stream produced into a new topic of the stack's Kafka broker (alone, "
           "`tests/stack/stack.sh up kafka`) by `bench/produce.c`: keys and values as in the file, "
           "partitioned by key (murmur2), acks=all. Then, interleaved, `cdcstore ingest` of the topic into "
           "a new replica (`--from-beginning`, batches of 10,000), timed from its start until its last "
           "record was applied (its `--metrics-addr` figures, read every 10 ms near the end), and "
           "`cdcstore apply --batch-size 10000` of the file into a new replica, timed as a whole; before them "
           "one untimed warm-up of each (the broker's first consumer group creates its __consumer_offsets "
           "topic, and librdkafka asks for the coordinator again only a second later; a broker serving "
           "Kafka Connect has it long before). Both "
           "replicas are exported and compared with the expected CSV. CPU-seconds: user + system of "
           "the cdcstore process (the ingest's at its end); the broker's CPU during the ingest apart. "
           f"Goal: ingest at {BACKLOG_GOAL:.0%} of apply's events/s or more.", ""] + BACKLOG_HEADER
    lines = []
    backlog_rows(brows, out, lines)
    out += [""] + (lines + [""] if lines else [])
    if trows:
        out += ["### A whole schema: a thousand topics", "",
                "The same comparison on a schema of many small tables (`bench/gen_tables.py --tables N --rows R`: "
                "each table's snapshot, then 2 updates, a delete and its tombstone per table), every table a "
                "topic of one partition (`bench/produce.c --file-topics`), taken by `cdcstore ingest "
                "--topic-regex '<prefix>\\.public\\.'`, against `cdcstore apply --batch-size 10000` of the "
                "file, after one untimed warm-up of each. Checked: every replica lists the N tables and the "
                "generator's live rows, and ten of its tables (all of them when fewer; rows, versions and deletes: `export --meta`) "
                "equal the warm-up apply's replica.", ""] + BACKLOG_HEADER
        lines = []
        backlog_rows(trows, out, lines)
        out += [""] + (lines + [""] if lines else [])
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--results", required=True)
    p.add_argument("--meta", help="the generator's meta JSON (absent: no throughput step ran)")
    p.add_argument("--commands", required=True)
    p.add_argument("--batches", required=True, help="comma-separated batch sizes")
    p.add_argument("--out", required=True, help="RESULTS.md")
    p.add_argument("--png", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--started")
    p.add_argument("--profile", help="optional profile text of cdcstore to include")
    p.add_argument("--shape-meta", action="append", default=[], metavar="SHAPE=PATH",
                   help="the generator's meta JSON of a row shape's stream (the shapes step)")
    p.add_argument("--merge", action="store_true",
                   help="a partial run: keep the sections of the existing --out whose figures this run "
                        "did not measure")
    a = p.parse_args()
    rows = load(a.results)
    batches = [int(b) for b in a.batches.split(",")]
    meta = None
    if a.meta and os.path.exists(a.meta):
        with open(a.meta) as f:
            meta = json.load(f)
    with open(a.commands) as f:
        commands = f.read().rstrip()
    shape_meta = {}
    for item in a.shape_meta:
        name, _, path = item.partition("=")
        if os.path.exists(path):
            with open(path) as f:
                shape_meta[name] = json.load(f)
    m = machine()
    chart_err = chart(rows, batches, a.workdir, os.path.abspath(a.png))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = [
        "# Benchmark results",
        "",
        f"Generated by `make bench` (`bash bench/run.sh`) on {now}"
        + (f", run started {a.started}" if a.started else "") + ". Do not edit: regenerated "
        "on every run. Figures are noisy on a shared 2-core machine; only ratios measured side by "
        "side in one run count.",
        "",
        "## Machine",
        "",
        f"- CPU: {m['cpu']}, `nproc` = {m['nproc']}; memory {m['mem']}",
        f"- OS: {m['os']}, kernel {m['kernel']}",
        load_line(rows),
        "",
    ]
    if meta:
        c = meta["counts"]
        md += [
            "## Workload",
            "",
            f"- {meta['events']:,} Kafka records (kcat -J lines) over {meta['keys']:,} keys, note padded "
            f"to {meta['row_width']} bytes, seed {meta['seed']}; final table {meta['final_rows']:,} rows.",
            f"- Snapshot {c.get('r', 0):,} (op r); streamed updates {c.get('u', 0):,}, creates "
            f"{c.get('c', 0):,}, deletes {c.get('d', 0):,}, primary-key changes "
            f"{c.get('pk_change', 0):,}, tombstones {c.get('tombstone', 0):,}; re-delivered: "
            f"{c.get('duplicate', 0):,} restart duplicates ({meta['dup_rate']:.0%}), {c.get('late', 0):,} "
            f"late older events ({meta['late_rate']:.0%}; {c.get('late_after_delete', 0):,} of them "
            f"after the key's delete).",
            "- Every system starts from an empty target and applies the whole file in batches of N "
            "lines; its final state is exported as PostgreSQL `COPY ... CSV HEADER` and compared byte "
            "for byte with the generator's expected CSV before its figure counts.",
            "",
        ]
    for b in batches:
        t, notes = table(rows, b)
        md += [f"## Batches of {b:,} events", "", t, ""]
        if notes:
            md += notes + [""]
    md += [f"## Goals of issue 5 (batches of {GOAL_BATCH:,}, this run)", ""] + goals(rows, batches)
    md += [""]
    md += row_shapes(rows, shape_meta)
    if a.profile and os.path.exists(a.profile):
        with open(a.profile) as f:
            md += ["## Where cdcstore spends its time (perf, batches of 10,000)", "", "```",
                   f.read().rstrip()[:6000], "```", ""]
    rec = [r for r in rows if r.get("peer") == "cdcstore-reconcile"]
    if rec:
        md += ["## Reconcile (`cdcstore reconcile` against the PostgreSQL source)", "",
               "The replica applied at batches of 10,000 against a source table `items` in the "
               "benchmark's PostgreSQL holding the expected state; then 20 differences are made in "
               "the source (10 changed rows, 5 deleted, 5 inserted) and it must list exactly those.",
               "", "| case | source rows | seconds | rows/s | CPU | peak memory | result |",
               "|---|---:|---:|---:|---:|---:|---|"]
        for r in rec:
            cpu = f"{r['cpu_percent']}%" if r.get("cpu_percent") is not None else "–"
            md.append(f"| {r.get('case', '')} | {fmt_int(r.get('events'))} | "
                      f"{r.get('seconds', 0):.2f} | {fmt_int(r.get('events_per_s'))} | {cpu} | "
                      f"{fmt_mib(r.get('peak_rss_bytes'))} | {r.get('verified', '')} |")
        md += [""]
    lat = [r for r in rows if r.get("peer") == "e2e-latency"]
    if lat:
        r = lat[-1]
        md += ["## End-to-end latency through Kafka", "",
               "PostgreSQL 15 → Debezium 3.6.1 (Kafka Connect) → Kafka → `cdcstore ingest`, measured "
               "by the pipeline's own suite (`tests/e2e/run.sh`, scenario 1) on a stack of its own: "
               "apply time minus the change's `source.ts_ms`, under a steady changegen load.", ""]
        if r.get("status") == "ok":
            md += [f"- **p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms**: {r.get('note', '')}"]
            if r.get("stages"):
                md += [f"- {r['stages']}"]
            md += [f"- suite: {r.get('verified', '')}"]
        else:
            md += [f"- not measured: {r.get('verified', '')}; {r.get('note', '')}"]
        md += [""]
    md += latency_settings(rows)
    qrows = [r for r in rows if r.get("peer") == "query"]
    if qrows:
        n = next((r.get("rows") for r in qrows if r.get("rows")), None)
        md += [f"## Query shim on {fmt_int(n)} rows (`tests/query/bench.sh`)", "",
               "Table `public.bench` (bigint key, text, numeric(12,2), text with NULLs and '', "
               "boolean, int), the same rows in a replica and in a PostgreSQL 15 the script starts "
               "(fsync off). Goals: reconcile of equal tables under 10 s, one changed row found under "
               "15 s, export faster than PostgreSQL's `COPY ... TO` of the source table. Then, typed by one "
               "envelope with a schema (issue 12): Parquet export against DuckDB's `COPY ... TO` of the same "
               "rows loaded from the CSV (goal: as fast), and a Delta table's refresh after 1% of the rows "
               "changed, in one key range and at random keys (goal: under a tenth of a full export).", "",
               "| what | seconds | detail | load |", "|---|---:|---|---:|"]
        for r in qrows:
            if r.get("status") == "failed":
                md.append(f"| failed | | {r.get('note', '')} | |")
                continue
            md.append(f"| {r.get('what', '')} | {r.get('seconds', 0):.2f} | {r.get('extra', '')} | "
                      f"{r.get('load', '')} |")
        sec = {r.get("what"): r.get("seconds") for r in qrows if r.get("seconds") is not None}
        lines = []
        for algo in ("md5", "lookup3"):
            eq = sec.get(f"reconcile, equal tables, {algo}")
            one = sec.get(f"reconcile, one changed row, {algo}")
            if eq is not None:
                lines.append(f"- reconcile of equal tables, {algo}: {eq:.2f} s: "
                             f"{'met' if eq < 10 else 'NOT met'} (goal < 10 s)")
            if one is not None:
                lines.append(f"- one changed row found, {algo}: {one:.2f} s: "
                             f"{'met' if one < 15 else 'NOT met'} (goal < 15 s)")
        ex = sec.get("cdcstore export --output (CSV; 2 threads, io_uring)")
        cp = sec.get("PostgreSQL COPY public.bench TO file (CSV, HEADER)")
        if ex is not None and cp is not None:
            lines.append(f"- export {ex:.2f} s against COPY TO {cp:.2f} s: "
                         f"{'met' if ex < cp else 'NOT met'} (goal: faster)")
        for codec in ("zstd", "snappy"):
            pq = sec.get(f"cdcstore export --format parquet ({codec})")
            dk = sec.get(f"DuckDB COPY bench TO file (Parquet, {codec})")
            if pq is not None and dk:
                lines.append(f"- Parquet ({codec}) export {pq:.2f} s against DuckDB's COPY TO {dk:.2f} s "
                             f"(x{pq / dk:.2f}): {'met' if pq <= dk else 'NOT met'} (goal: as fast)")
        floor = sec.get("the replica's read alone, 2 threads (floor of an export)")
        dkz = sec.get("DuckDB COPY bench TO file (Parquet, zstd)")
        if floor is not None and dkz:
            lines.append(f"- the replica's read alone, nothing encoded (bench/scan_only.c): {floor:.2f} s, "
                         f"x{floor / dkz:.2f} DuckDB's whole COPY TO (zstd): what encoding may take to "
                         f"be as fast is the rest, {max(dkz - floor, 0):.2f} s")
        for kind in ("clustered", "scattered"):
            # every file-rows figure the run has (tests/query/bench.sh: FRS), the
            # default (250000) first
            frs = sorted({m.group(1) for k in sec
                          for m in [re.match(r"cdcstore export --format delta, full, "
                                             r"(file-rows \d+(?:, deletion vectors)?)$", k)] if m},
                         key=lambda x: (x != "file-rows 250000", "deletion" not in x, x))
            for fr in frs:
                ref = sec.get(f"cdcstore export --format delta, refresh after 1% {kind}, {fr}")
                full = sec.get(f"cdcstore export --format delta, full, {fr}")
                if ref is not None and full:
                    lines.append(f"- Delta refresh after 1% {kind} changes, {fr}"
                                 f"{' (the default)' if fr == 'file-rows 250000' else ''}: {ref:.2f} s against "
                                 f"{full:.2f} s for a full export (x{ref / full:.3f}): "
                                 f"{'met' if ref < full / 10 else 'NOT met'} (goal < x0.1)")
        bad = [r.get("what") for r in qrows if str(r.get("what", "")).startswith("check:")
               and not str(r.get("extra", "")).startswith("ok")]
        if bad:
            lines.append("- read-back checks that failed: " + "; ".join(bad))
        if not n or n < 10_000_000:
            lines.append("- fewer rows than the goals' 10,000,000 (BENCH_QUERY_ROWS): these verdicts "
                         "do not count")
        md += [""] + lines + [""]
    trows = [r for r in rows if r.get("peer") == "tables"]
    if trows:
        md += ["## A thousand tables (`bench/peer_tables.py`)", "",
               "A whole schema of small tables (`bench/gen_tables.py`: N topics `shop.public.t0001`..., "
               "5 snapshot rows, 2 updates and a delete with its tombstone each), against the same "
               "number of events in one table. Medians of the repeats: `cdcstore apply` of the file into "
               "a new replica, `cdcstore stats` on it (the open of a later reader), and `cdcstore apply` "
               "of an empty file (the open of the next writer: the log is replayed and flushed). "
               "Goal (issue 10): 1,000 tables open in under 1 s and under 200 MB, applied as fast per "
               "event as one table.", "",
               "| case | events | apply s | events/s | vs one table | apply peak | open s | open peak "
               "| writer reopen s | SST files | result |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in trows:
            if r.get("status") == "failed" and not r.get("case"):
                md.append(f"| failed | | | | | | | | | | {r.get('note', '')} |")
                continue
            vs = f"{r['speed_vs_one_table']:.3f}x" if r.get("speed_vs_one_table") else ""
            f2 = lambda x: f"{x:.2f}" if x is not None else "–"
            md.append(f"| {r.get('case')} | {fmt_int(r.get('events'))} | {f2(r.get('apply_seconds'))} | "
                      f"{fmt_int(r.get('events_per_s'))} | {vs} | {fmt_mib(r.get('apply_peak_rss_bytes'))} | "
                      f"{f2(r.get('open_seconds'))} | {fmt_mib(r.get('open_peak_rss_bytes'))} | "
                      f"{f2(r.get('reopen_seconds'))} | {r.get('sst_files', '')} | {r.get('verified', '')} |")
        big = [r for r in trows if r.get("tables") == 1000 and r.get("status") == "ok"]
        if big:
            r = big[-1]
            o, m, v = r.get("open_seconds"), r.get("open_peak_rss_bytes"), r.get("speed_vs_one_table")
            md += ["", f"- open of 1,000 tables: {o:.2f} s, {fmt_mib(m)}: "
                       f"{'met' if o < 1 and m < 200 * 2**20 else 'NOT met'} (goal < 1 s and < 200 MB)"]
            if v:
                md += [f"- events/s at 1,000 tables: {v:.3f} of one table's: "
                       f"{'met' if v >= 0.9 else 'NOT met'} (goal: as fast per event)"]
        md += [""]
    md += backlog_section(rows)
    exp = [r for r in rows if r.get("peer") == "cdcstore" and r.get("export_seconds")]
    if exp:
        md += ["## Export", ""]
        for r in exp:
            md.append(f"- `cdcstore export` after batches of {r['batch']:,}: "
                      f"{r['export_seconds']:.2f} s, peak {fmt_mib(r.get('export_peak_rss_bytes'))}")
        md += [""]
    md += [
        "## Chart",
        "",
        "![throughput per batch size](throughput.png)" if not chart_err else f"Not drawn: {chart_err}",
        "",
        "## What is timed",
        "",
        "- cdcstore: the whole `cdcstore apply` command (wall clock), peak RSS from `/usr/bin/time -v`, "
        "bytes allocated under `--db` afterwards. The binary is a copy of build/cdcstore taken "
        "when the run starts.",
        "- Durability differs by default: PostgreSQL fsyncs its WAL at every commit (one per "
        "batch); SQLite in WAL mode with synchronous=NORMAL and `cdcstore apply` without `--sync` "
        "do not fsync per batch (a crash of the machine can lose the last batches, never "
        "corrupt the store); the `--sync` row fsyncs every batch like PostgreSQL.",
        "- CPU: CPU time over wall time of the measured process (100% = one core busy; below "
        "100% for a single-threaded program means other work took the core). Events per "
        "CPU-second divides by it, which makes figures taken under different loads comparable. "
        "Measured with "
        "`time -v` for the native programs, /proc/PID/stat of the backend for PostgreSQL, of "
        "the JVM for Spark, getrusage for SQLite.",
        "- PostgreSQL: the events are first loaded into `cdc_events` (not timed); then one psql "
        "session runs `CALL apply_batch(from, to)` for each batch, timed from the first CALL to "
        "the end of the last. Memory: VmHWM of that backend. Disk: "
        "`pg_total_relation_size('items_replica')`.",
        "- SQLite: from the first line read to the last commit, in one Python process (peak RSS "
        "of that process); disk: the database file after a WAL checkpoint.",
        "- Spark + Delta: from the start of the streaming query to its end (JVM start, table "
        "creation and the split of the file into batch files not timed); stopped at a time budget "
        "(`BENCH_SPARK_BUDGET`), then marked partial and not verified. Memory: JVM VmHWM plus the "
        "Python driver; disk: the Delta table directory with all its versions.",
        "- Limits: the events are read into memory first; decode-only parses each line and its "
        "payload with cJSON and extracts op, key and source.lsn; rocksdb-raw writes the same keys "
        "blind (Put of the payload bytes, Delete for a tombstone).",
        "",
        "## Commands of this run",
        "",
        "```",
        commands,
        "```",
        "",
    ]
    notyet = []
    for r in rows:
        if r.get("status") == "missing":
            line = f"- {LABEL.get(r['peer'], r['peer'])}: missing: {r.get('note', '')}"
            if line not in notyet:
                notyet.append(line)
    if not any(r.get("peer") == "e2e-latency" for r in rows):
        notyet.append("- End-to-end latency through Kafka: not run (BENCH_E2E=0, no tests/e2e/run.sh "
                      "or no cdcstore binary)")
    if not any(r.get("peer") == "latency" for r in rows):
        notyet.append("- Latency settings side by side: not run (BENCH_STEPS without latency)")
    if not any(r.get("peer") == "query" for r in rows):
        notyet.append("- Query shim on 10M rows: not run (BENCH_STEPS without query)")
    if not any(r.get("peer") == "tables" for r in rows):
        notyet.append("- A thousand tables: not run (BENCH_STEPS without tables)")
    if not any(str(r.get("peer", "")).startswith("shape-") for r in rows):
        notyet.append("- Row shapes: not run (BENCH_STEPS without shapes)")
    if not any(r.get("peer") == "backlog" for r in rows):
        notyet.append("- Kafka backlog: not run (BENCH_STEPS without backlog)")
    if not any(r.get("peer") == "cdcstore-reconcile" for r in rows):
        notyet.append("- Reconcile: not run (no verified cdcstore replica at batches of 10,000)")
    if notyet:
        md += ["## Not measured in this run", ""] + notyet + [""]
    text = "\n".join(md)
    if a.merge and os.path.exists(a.out):
        with open(a.out) as f:
            text = merge(f.read(), text, rows, a.started)
    with open(a.out, "w") as f:
        f.write(text)
    print(f"wrote {a.out}" + (f" ({chart_err})" if chart_err else f" and {a.png}"))


if __name__ == "__main__":
    main()
