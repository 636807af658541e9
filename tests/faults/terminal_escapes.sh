#!/usr/bin/env bash
# tests/faults/terminal_escapes.sh (make test-faults): text from the records
# never reaches a terminal raw.  Records name tables, topics and columns
# with newlines, CR, ESC (clear screen, set the window title), BEL, DEL, a
# C1 control and an invalid UTF-8 byte, and carry such values; some are
# dead letters.  The text output of apply (its warnings on stderr), tables,
# stats, dlq list and the error messages of export and apply --on-error
# stop hold no control byte but their line ends, no C1 control and no
# invalid UTF-8, and show the escaped form (\n, \x1b, \x07); one table name
# is one line.  The JSON forms (--log-format json, stats --json, dlq list
# --json) are valid JSON and exact.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${CDCSTORE:-$ROOT/build/cdcstore}
T=$(mktemp -d /tmp/cdcescape.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# The input: kcat -J lines, written with Python's JSON (control characters
# as \u escapes, which the decoder turns into the raw bytes), and one line
# of raw bytes that is not JSON at all.
python3 - "$T/in.jsonl" <<'EOF'
import json, sys
EVIL = "a\nb\r\x1b[2J\x1b]0;pwned\x07\x7f\x9b\tc"
def line(topic, off, key, env):
    return json.dumps({"topic": topic, "partition": 0, "offset": off,
                       "key": None if key is None else json.dumps(key),
                       "payload": None if env is None else json.dumps(env)}) + "\n"
def env(op, table, row, lsn, col_extra=None):
    return {"op": op, "before": None, "after": row,
            "source": {"schema": "public", "table": table, "lsn": lsn, "ts_ms": 0}}
with open(sys.argv[1], "w") as f:
    # a table named with control characters, values with them too
    f.write(line("p.public.x", 0, {"id": 1}, env("c", EVIL, {"id": 1, "v": EVIL}, 10)))
    f.write(line("p.public.x", 1, {"id": 2}, env("c", "plain", {"id": 2, "v": "ok"}, 11)))
    # dead letters: an unknown op in that table, a key that does not match
    # the row (the column name is evil), a topic with a title-setting sequence
    f.write(line("p.public.x", 2, {"id": 3}, env("z", EVIL, {"id": 3}, 12)))
    f.write(line("p.public.x", 3, {EVIL: 4}, env("c", "plain", {"id": 4}, 13)))
    f.write(line("t\x1b]0;pwned\x07.public.y", 4, {"id": 5}, env("z", "y", {"id": 5}, 14)))
with open(sys.argv[1], "ab") as f:
    f.write(b"not json \x1b[2J\x1b]0;pwned\x07 \xc2\x9b \xff\x01\x7f\r end\n")
EOF

# rawctl FILE: the number of bytes a terminal would act on: C0 controls but
# LF, DEL, C1 controls (UTF-8 \xc2\x80-\x9f) and invalid UTF-8.
rawctl() {
  python3 - "$1" <<'EOF'
import re, sys
b = open(sys.argv[1], "rb").read()
n = len(re.findall(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b))
n += b.decode("utf-8", "replace").count("\ufffd")
print(n)
EOF
}
# clean NAME FILE [NEEDLE...]: FILE has no raw control bytes and holds each NEEDLE
clean() {
  local name=$1 file=$2 n; shift 2
  n=$(rawctl "$file")
  if [ "$n" = 0 ]; then ok "$name: no raw control bytes"
  else bad "$name: $n raw control bytes: $(od -c "$file" | head -5 | tr '\n' ' ')"; fi
  for needle in "$@"; do
    grep -qF -- "$needle" "$file" && ok "$name: shows $needle" || bad "$name: no $needle in: $(head -c 300 "$file")"
  done
}

rc=0
"$BIN" apply --db "$T/db" "$T/in.jsonl" 2>"$T/apply.err" || rc=$?
[ "$rc" = 3 ] && ok "apply: exit 3 (dead letters)" || bad "apply: exit $rc: $(tail -2 "$T/apply.err")"
clean "apply's warnings" "$T/apply.err" 'a\nb\r\x1b[2J\x1b]0;pwned\x07\x7f\xc2\x9b\tc' 't\x1b]0;pwned\x07.public.y'
[ "$(grep -c 'dead letter' "$T/apply.err")" -ge 4 ] && ok "apply: one warning line per dead letter" \
  || bad "apply: $(grep -c 'dead letter' "$T/apply.err") dead-letter lines"

"$BIN" tables --db "$T/db" >"$T/tables.out"
clean "tables" "$T/tables.out" 'public.a\nb\r\x1b[2J\x1b]0;pwned\x07\x7f\xc2\x9b\tc'
n=unknown
"$BIN" stats --db "$T/db" --json >"$T/stats.json"
if n=$(python3 -c 'import json, sys; print(len(json.load(sys.stdin)["tables"]))' <"$T/stats.json" 2>/dev/null); then
  ok "stats --json: valid JSON ($n tables)"
else bad "stats --json: not JSON: $(head -c 200 "$T/stats.json" | od -c | head -3 | tr '\n' ' ')"; n=unknown; fi
[ "$(wc -l <"$T/tables.out")" = "$n" ] && ok "tables: one line per table ($n)" \
  || bad "tables: $(wc -l <"$T/tables.out") lines for $n tables"

"$BIN" stats --db "$T/db" >"$T/stats.out"
clean "stats" "$T/stats.out" 'public.a\nb\r\x1b[2J'

"$BIN" dlq list --db "$T/db" >"$T/dlq.out" 2>&1
clean "dlq list" "$T/dlq.out" 'not json \x1b[2J\x1b]0;pwned\x07 \xc2\x9b \xff\x01\x7f\r end' '\x1b]0;pwned\x07'

# An error naming a table: export of a table that does not exist.
rc=0
"$BIN" export --db "$T/db" --table $'public.no\e[2J\nt' >/dev/null 2>"$T/export.err" || rc=$?
[ "$rc" = 1 ] && ok "export of a missing table: exit 1" || bad "export of a missing table: exit $rc"
clean "export's error" "$T/export.err" 'public.no\x1b[2J\nt'

# The message of a run stopped at a bad record (the one with the evil topic).
sed -n 5p "$T/in.jsonl" >"$T/stop.jsonl"
rc=0
"$BIN" apply --db "$T/db2" --on-error stop "$T/stop.jsonl" 2>"$T/stop.err" || rc=$?
[ "$rc" = 4 ] && ok "apply --on-error stop: exit 4" || bad "apply --on-error stop: exit $rc"
clean "apply --on-error stop" "$T/stop.err" 'stopped at a bad record: t\x1b]0;pwned\x07.public.y'

# JSON output stays exact: the log line parses and names the table as it
# is.  cdc_json_write_string escapes the C0 controls; DEL and C1 controls
# are valid JSON unescaped and pass through it as they are.
rc=0
"$BIN" --log-format json apply --db "$T/db3" "$T/in.jsonl" 2>"$T/apply.json" || rc=$?
if python3 -c 'import re, sys; sys.exit(len(re.findall(rb"[\x00-\x09\x0b-\x1f]", open(sys.argv[1], "rb").read())))' "$T/apply.json"
then ok "apply --log-format json: no raw C0 control bytes"; else bad "apply --log-format json: raw C0 control bytes"; fi
python3 - "$T/apply.json" <<'EOF' && ok "apply --log-format json: JSON lines with the raw name" || bad "apply --log-format json: not exact"
import json, sys
msgs = [json.loads(l)["msg"] for l in open(sys.argv[1]) if l.startswith("{")]
assert any("a\nb\r\x1b[2J\x1b]0;pwned\x07\x7f\x9b\tc" in m for m in msgs), msgs
EOF
"$BIN" dlq list --db "$T/db" --json >"$T/dlq.json"
python3 - "$T/dlq.json" "$T/in.jsonl" <<'EOF' && ok "dlq list --json: the records exactly" || bad "dlq list --json: not exact"
import base64, json, sys
# strict UTF-8: the output is JSON text; a record that is not UTF-8 keeps
# its bytes exactly in record_base64
out = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
recs = [base64.b64decode(o["record_base64"]) if "record_base64" in o else o["record"].encode() for o in out]
raw = open(sys.argv[2], "rb").read().split(b"\n")[5]
assert raw in recs, (raw, recs)
EOF

echo "terminal_escapes: $pass passed, $fail failed"
[ "$fail" = 0 ]
