"""Helpers shared by the benchmark peers: CSV comparison, result records, sizes and memory.

Every peer writes its final state as PostgreSQL `COPY ... CSV HEADER` would print it and compares it
byte for byte with the generator's expected CSV before its figure counts. A result is one JSON object
per line appended to the results file (see `result`), which report.py turns into RESULTS.md.
"""

import json
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import COLUMNS, pg_csv_line  # noqa: E402,F401  (re-exported for the peers)


def split_records(data):
    """Split CSV text into records, keeping quoted newlines inside their record."""
    out, start, quoted = [], 0, False
    for i, ch in enumerate(data):
        if ch == '"':
            quoted = not quoted
        elif ch == "\n" and not quoted:
            out.append(data[start:i + 1])
            start = i + 1
    if start < len(data):
        out.append(data[start:])
    return out


def compare_csv(expected_path, got_path):
    """'ok' when both files are equal, else a one-line description of the first difference."""
    with open(expected_path, "rb") as f:
        exp = f.read()
    try:
        with open(got_path, "rb") as f:
            got = f.read()
    except OSError as e:
        return f"mismatch: no output ({e.strerror})"
    if exp == got:
        return "ok"
    e = split_records(exp.decode("utf-8", "replace"))
    g = split_records(got.decode("utf-8", "replace"))
    for i, (a, b) in enumerate(zip(e, g)):
        if a != b:
            return (f"mismatch: {len(e) - 1} rows expected, {len(g) - 1} got; first difference at "
                    f"record {i}: expected {a[:80]!r}, got {b[:80]!r}")
    return f"mismatch: {len(e) - 1} rows expected, {len(g) - 1} got"


def dir_bytes(path):
    """Bytes allocated on disk under path (like du -s --block-size=1)."""
    total = 0
    if os.path.isfile(path):
        return os.stat(path).st_blocks * 512
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def vm_hwm(pid):
    """Peak resident set size of a live process in bytes (VmHWM), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


CLK_TCK = os.sysconf("SC_CLK_TCK")


def parse_stat_cpu(stat_line):
    """User + system CPU seconds from one /proc/PID/stat line."""
    fields = stat_line.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_cpu_seconds(pid):
    """CPU seconds (user + system) used so far by a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return parse_stat_cpu(f.read())
    except (OSError, ValueError, IndexError):
        return None


def self_cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def self_maxrss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def count_lines(path):
    n = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


def result(path, **fields):
    """Append one result record (peer, batch, events, seconds, ...) to the results file."""
    try:
        with open("/proc/loadavg") as f:
            fields.setdefault("loadavg_1m", float(f.read().split()[0]))
    except (OSError, ValueError, IndexError):
        pass
    if fields.get("seconds") and fields.get("events"):
        fields.setdefault("events_per_s", fields["events"] / fields["seconds"])
    line = json.dumps(fields, sort_keys=True)
    print(line, flush=True)
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")
