# shellcheck shell=bash
# tests/e2e/lib.sh: what tests/e2e/run.sh, tests/e2e/doctor.sh,
# tests/e2e/pipeline-demo.sh and bench/latency.sh share (sourced, bash).
# The caller sets WORK (a scratch directory) first.
#
# PostgreSQL -> Debezium -> Kafka come from tests/stack/ (stack.sh,
# connector.sh, changegen); cdcstore from build/cdcstore; e2e_kafka (Kafka
# high watermarks, a group's committed offsets, topic creation) is built from
# tests/e2e/e2e_kafka.c into build/e2e/. E2E_BUILD=DIR builds and takes both
# from DIR instead of build/ (make BUILD=DIR), so that a run leaves another
# build directory alone; CDCSTORE=PATH names the cdcstore binary outright.

E2E_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
E2E_BUILD=${E2E_BUILD:-build}
CDC=${CDCSTORE:-$E2E_ROOT/$E2E_BUILD/cdcstore}
STACK=$E2E_ROOT/tests/stack/stack.sh
CONN=$E2E_ROOT/tests/stack/connector.sh
CHANGEGEN=$E2E_ROOT/tests/stack/changegen
E2EK=$E2E_ROOT/$E2E_BUILD/e2e/e2e_kafka
# The tables the connector captures.
E2E_TABLES=(orders order_lines customers products)
E2E_T0=${E2E_T0:-$SECONDS}
# The connector's converters: schemas.enable=true puts {"schema", "payload"}
# around keys and values; jq programs unwrap them with this.
# shellcheck disable=SC2034 # for the callers
JQ_UNWRAP='def unwrap: if type == "object" and has("schema") and has("payload") then .payload else . end; '

# The pipeline's configuration (tests/e2e/README.md, "Known differences").
# The defaults are the issue's: the JSON converters without schemas and
# decimal.handling.mode precise (the connector.sh defaults); the columns
# whose type the messages then do not carry are declared to cdcstore
# (--decimal, --column-type, below), and reconcile compares unconstrained
# NUMERICs by value. E2E_WORKAROUNDS=1 runs the other configuration:
#   E2E_SCHEMAS=true           a TIMESTAMP column then arrives typed, not as
#                              a bare MicroTimestamp integer
#   E2E_DECIMAL_MODE=string    an unconstrained NUMERIC then keeps its scale
#                              (precise mode sends 103.0 as 103)
# E2E_ORDERS_IDENTITY: public.orders gets REPLICA IDENTITY FULL, as a table
# whose primary keys change and whose TOASTed values must survive it needs:
# under DEFAULT Debezium sends its placeholder instead of the value in the
# create of the new key, and no consumer can know it. Scenario 6 sets DEFAULT.
if [[ ${E2E_WORKAROUNDS:-0} == 1 ]]; then
    E2E_SCHEMAS=${E2E_SCHEMAS:-true}
    E2E_DECIMAL_MODE=${E2E_DECIMAL_MODE:-string}
fi
E2E_SCHEMAS=${E2E_SCHEMAS:-false}
E2E_DECIMAL_MODE=${E2E_DECIMAL_MODE:-precise}
E2E_ORDERS_IDENTITY=${E2E_ORDERS_IDENTITY:-full}
# NUMERIC(p,s) columns in precise mode without schemas: the scale is not in
# the message and is declared to cdcstore (in string mode a declared scale
# would reject the text values).
E2E_DECIMALS=()
if [[ $E2E_DECIMAL_MODE == precise ]]; then
    E2E_DECIMALS=(--decimal public.orders.amount=2 --decimal public.order_lines.price=3 --decimal public.products.price=3)
fi
# Without schemas a TIMESTAMP column arrives as a bare MicroTimestamp number:
# its type is declared to cdcstore the same way.
if [[ $E2E_SCHEMAS == false ]]; then
    E2E_DECIMALS+=(--column-type public.orders.created_at=timestamp)
fi
e2e_config() {
    echo "schemas.enable=$E2E_SCHEMAS decimal.handling.mode=$E2E_DECIMAL_MODE${E2E_CONNECTOR_OPTS:+ $E2E_CONNECTOR_OPTS}, public.orders REPLICA IDENTITY ${E2E_ORDERS_IDENTITY^^}"
}

# Processes this script started (changegen, cdcstore ingest): the cleanup
# ends them by pid. E2E_LOG_OF: the log of each cdcstore ingest, by pid.
E2E_PIDS=()
declare -A E2E_LOG_OF=()

e2e_log() { printf '# [%3ds] %s\n' "$((SECONDS - E2E_T0))" "$*"; }
e2e_die() {
    printf 'e2e: error: %s\n' "$*" >&2
    exit 1
}

now_ms() { date +%s%3N; }

# ---- Results: the suites' ok/FAIL lines (the caller sets PASSED=0 FAILED=0) ----

ok() {
    PASSED=$((PASSED + 1))
    echo "ok   $*"
}
# fail NAME [FILE]: a FAIL line; FILE holds the reason (the output of the
# check). Its first line goes on the FAIL line, the rest under it: whole up to
# 25 lines, else the first 10 and the last 14 (the end is where a process
# says why it stopped). FILE is kept in the work directory as failed-N.out.
fail() {
    FAILED=$((FAILED + 1))
    if [[ -z ${2:-} || ! -s $2 ]]; then
        echo "FAIL $1"
        return 0
    fi
    local keep=$WORK/failed-$FAILED.out why lines
    cp "$2" "$keep"
    why=$(head -n 1 "$keep")
    echo "FAIL $1: ${why:0:300}$( ((${#why} > 300)) && echo ...)"
    tail -n +2 "$keep" >"$WORK/fail.rest"
    lines=$(wc -l <"$WORK/fail.rest")
    if ((lines <= 25)); then
        sed 's/^/     | /' "$WORK/fail.rest"
    else
        head -n 10 "$WORK/fail.rest" | sed 's/^/     | /'
        echo "     | ... $((lines - 24)) lines left out (all in $keep)"
        tail -n 14 "$WORK/fail.rest" | sed 's/^/     | /'
    fi
}
# check NAME CMD...: ok when CMD succeeds; its output is shown on failure, or
# appended to NAME on success when it prints one line. A CMD that fails
# without a word (test, awk, ...) is shown with its exit status and its
# arguments as they were expanded, so that a FAIL line always has a reason.
check() {
    local name=$1 out
    shift
    "$@" >"$WORK/check.out" 2>&1
    local rc=$?
    out=$(head -c 300 "$WORK/check.out" | head -n 1)
    if ((rc == 0)); then
        ok "$name${out:+ ($out)}"
        return 0
    fi
    if [[ ! -s $WORK/check.out ]]; then
        local cmd
        cmd=$(printf '%q ' "$@")
        cmd=${cmd% }
        printf 'exited %d without output: %s\n' "$rc" "${cmd:0:400}" >"$WORK/check.out"
    fi
    fail "$name" "$WORK/check.out"
    return 1
}

# same WHAT GOT WANT: true when GOT is WANT; otherwise says what WHAT was.
same() {
    [[ $2 == "$3" ]] || {
        echo "$1: ${2:-(nothing)}, expected $3"
        return 1
    }
}

# reason_of FILE: the line of a process's stderr or log that says why it
# failed: the last one that speaks of an error, else the last one.
reason_of() {
    [[ -s $1 ]] || return 0
    { grep -i 'error\|fatal\|exception' "$1" || grep -v '^[[:space:]]*$' "$1"; } | tail -n 1 | cut -c1-300
}

# tail_of FILE [N]: the last N (default 5) non-blank lines of FILE, indented,
# after a line naming it: what a process said before it failed, for the
# failure message of a check. Nothing when FILE is missing or empty.
tail_of() {
    local f=$1 n=${2:-5}
    [[ -s $f ]] || return 0
    echo "last lines of $f:"
    grep -v '^[[:space:]]*$' "$f" | tail -n "$n" | cut -c1-400 | sed 's/^/  /'
}

# Builds cdcstore, changegen and e2e_kafka when missing or older than their sources.
e2e_build() {
    make -C "$E2E_ROOT" --no-print-directory -s BUILD="$E2E_BUILD" all tests/stack/changegen >"$WORK/build.log" 2>&1 || {
        cat "$WORK/build.log" >&2
        e2e_die "make failed"
    }
    if [[ ! -x $E2EK || $E2E_ROOT/tests/e2e/e2e_kafka.c -nt $E2EK ]]; then
        mkdir -p "$(dirname "$E2EK")"
        # shellcheck disable=SC2046
        cc -O2 -Wall -Wextra -Werror -o "$E2EK" "$E2E_ROOT/tests/e2e/e2e_kafka.c" \
            $(pkg-config --cflags --libs rdkafka) || e2e_die "building $E2EK failed (librdkafka-dev?)"
    fi
}

# Starts the stack (fetching the Java artifacts the first time) and loads
# its environment: PG*, KAFKA_BROKERS, CONNECT_URL, STACK_DIR, ...
# stack.sh's own lines (each step, and every 10 s of a download or of a
# component starting) are shown as they come, through e2e_log on stdout:
# the first start takes a minute or more.  The whole output is in
# $WORK/stack-up.log.
e2e_stack_up() {
    local line rc
    "$STACK" up 2>&1 | tee "$WORK/stack-up.log" | while IFS= read -r line; do
        [[ $line == stack:* ]] && e2e_log "${line#stack: }"
    done
    rc=${PIPESTATUS[0]}
    if ((rc != 0)); then
        tail -n 30 "$WORK/stack-up.log" >&2
        return 1
    fi
    eval "$("$STACK" env)"
    SRC="host=$PGHOST port=$PGPORT dbname=$PGDATABASE user=$PGUSER"
    # shellcheck disable=SC2034 # for the callers
    PGLOG=$STACK_DIR/logs/postgres.log
}

app_psql() { psql -X -q -v ON_ERROR_STOP=1 -tA "$@"; }
su_psql() { psql -X -q -v ON_ERROR_STOP=1 -tA -U "$STACK_PG_SUPERUSER" "$@"; }

# topics PREFIX: the topics of a connector with that topic.prefix, one per
# table of E2E_TABLES (the four; scenario 9 narrows it to its one table with
# a local E2E_TABLES, which create_topics, start_ingest, wait_drained and
# reconcile_all then see).
topics() {
    local t
    for t in "${E2E_TABLES[@]}"; do printf '%s.public.%s\n' "$1" "$t"; done
}

# Deletes every connector (with its offsets, slot and publication),
# recreates database shop from schema.sql and sets the replica identity of
# public.orders.
reset_source() {
    local c
    for c in $(curl -fsS --max-time 30 "$CONNECT_URL/connectors" | jq -r '.[]'); do
        "$CONN" delete "$c" >>"$WORK/connector.log" 2>&1 || {
            echo "connector.sh delete $c failed: $(reason_of "$WORK/connector.log")"
            tail_of "$WORK/connector.log"
            return 1
        }
    done
    "$STACK" reset-db >>"$WORK/stack.log" 2>&1 || {
        echo "stack.sh reset-db failed: $(reason_of "$WORK/stack.log")"
        tail_of "$WORK/stack.log"
        return 1
    }
    app_psql -c "ALTER TABLE public.orders REPLICA IDENTITY ${E2E_ORDERS_IDENTITY^^}"
}

# create_topics PARTITIONS PREFIX [--config KEY=VALUE]...: the connector's
# four topics, created before anything consumes them (a consumer subscribed
# to a missing topic would only see it at its next metadata refresh, minutes
# later), with those topic configs.
create_topics() {
    local parts=$1 prefix=$2 deadline=$((SECONDS + 30))
    shift 2
    # A topic of the same name still being deleted is refused for a moment.
    # shellcheck disable=SC2046
    until "$E2EK" "$KAFKA_BROKERS" create-topics "$parts" "$@" $(topics "$prefix") >/dev/null 2>"$WORK/create-topics.err"; do
        if ((SECONDS >= deadline)); then
            cat "$WORK/create-topics.err"
            return 1
        fi
        sleep 1
    done
}

# start_ingest VAR DB GROUP LOG LATENCYFILE PREFIX [EXTRA...]: cdcstore ingest
# in the background; its pid goes into VAR.
start_ingest() {
    local var=$1 db=$2 group=$3 logf=$4 lat=$5 prefix=$6
    shift 6
    local args=() t
    for t in $(topics "$prefix"); do args+=(--topic "$t"); done
    [[ -n $lat ]] && args+=(--latency-report "$lat")
    "$CDC" ingest --db "$db" --brokers "$KAFKA_BROKERS" --group "$group" "${args[@]}" "${E2E_DECIMALS[@]}" "$@" \
        >>"$logf" 2>&1 &
    printf -v "$var" '%s' "$!"
    E2E_PIDS+=("$!")
    E2E_LOG_OF[$!]=$logf
}

# stop_ingest PID: SIGTERM (the current batch is finished), waits; returns
# ingest's exit status (0: stopped by the signal, no dead letters). When it
# is not 0, prints it and the end of the ingest's log.
stop_ingest() {
    local pid=$1 rc
    kill -TERM "$pid" 2>/dev/null
    wait "$pid"
    rc=$?
    if ((rc != 0)); then
        echo "cdcstore ingest (pid $pid) exited $rc: $(reason_of "${E2E_LOG_OF[$pid]:-}")"
        tail_of "${E2E_LOG_OF[$pid]:-}"
    fi
    return "$rc"
}

# start_gen VAR OUT ARGS...: changegen in the background.
start_gen() {
    local var=$1 out=$2
    shift 2
    "$CHANGEGEN" "$@" >"$out" 2>"$out.err" &
    printf -v "$var" '%s' "$!"
    E2E_PIDS+=("$!")
}

# gen_wait PID OUT: waits for the changegen started with start_gen ... OUT;
# prints "N changes at R/s" from its summary line. When it failed (an exit
# status other than 0, or no summary line), prints its exit status, its error
# and the end of its stderr (OUT.err) instead, and returns 1.
gen_wait() {
    local pid=$1 out=$2 rc n
    wait "$pid"
    rc=$?
    n=$(gen_changes "$out")
    if ((rc != 0)) || [[ -z $n ]]; then
        echo "changegen (pid $pid) exited $rc${n:+ after $n changes}: $(reason_of "$out.err")"
        tail_of "$out.err"
        return 1
    fi
    echo "$n changes at $(gen_rate "$out")/s"
}

# gen_rate OUT: "changes/s" from changegen's summary line.
gen_rate() {
    sed -n 's/.* changes=\([0-9]*\) .* elapsed=\([0-9.]*\)s.*/\1 \2/p' "$1" |
        awk '{ if ($2 > 0) printf "%.0f", $1 / $2; else print 0 }'
}
gen_changes() { sed -n 's/.* changes=\([0-9]*\) .*/\1/p' "$1"; }

# register_connector NAME TOPIC_PREFIX: connector.sh's defaults (pgoutput,
# snapshot.mode=initial, decimal.handling.mode precise, ...) with that prefix.
# E2E_CONNECTOR_OPTS: more KEY=VALUE overrides, blank-separated (e.g.
# poll.interval.ms=50).
register_connector() {
    local extra=()
    read -ra extra <<<"${E2E_CONNECTOR_OPTS:-}"
    "$CONN" register "$1" "topic.prefix=$2" "schemas.enable=$E2E_SCHEMAS" \
        "decimal.handling.mode=$E2E_DECIMAL_MODE" "${extra[@]}" >>"$WORK/connector.log" 2>&1 || {
        echo "connector.sh register $1 failed: $(reason_of "$WORK/connector.log")"
        tail_of "$WORK/connector.log"
        return 1
    }
}

# wait_streaming NAME [SECONDS]: the connector's task runs and its slot streams.
wait_streaming() {
    "$CONN" wait-running "$1" "${2:-180}" >>"$WORK/connector.log" 2>&1 || {
        echo "connector.sh wait-running $1 ${2:-180} failed: $(reason_of "$WORK/connector.log")"
        tail_of "$WORK/connector.log"
        return 1
    }
}

# wait_drained SLOT GROUP PREFIX [SECONDS]: waits until everything written at
# the source so far is in the replica: the slot's walsender has sent the WAL up
# to the current position, then the topics' high watermarks stay put and the
# group's committed offsets (cdcstore ingest commits after each applied batch)
# reach them.
wait_drained() {
    local slot=$1 group=$2 prefix=$3 timeout=${4:-180} target deadline out hw last='' same=0
    deadline=$((SECONDS + timeout))
    target=$(su_psql -c "SELECT pg_current_wal_lsn()")
    until [[ $(su_psql -c "SELECT coalesce(bool_or(r.sent_lsn >= '$target'::pg_lsn), false)
                           FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid
                           WHERE s.slot_name = '$slot'") == t ]]; do
        if ((SECONDS >= deadline)); then
            echo "slot $slot has not sent WAL up to $target after ${timeout}s"
            return 1
        fi
        sleep 0.5
    done
    while :; do
        # shellcheck disable=SC2046
        out=$("$E2EK" "$KAFKA_BROKERS" lag "$group" $(topics "$prefix")) || return 1
        hw=${out#hw=}
        hw=${hw%% *}
        if [[ $out == *" lag=0" && $hw == "$last" ]]; then
            same=$((same + 1))
            ((same >= 2)) && return 0
        else
            same=0
        fi
        last=$hw
        if ((SECONDS >= deadline)); then
            echo "not drained after ${timeout}s: $out"
            return 1
        fi
        sleep 0.7
    done
}

# reconcile_all DB LABEL [SOURCE_SCHEMA]: reconciles every table of the
# replica with the source (tables SOURCE_SCHEMA.T when given); prints the row
# counts, or for each table that differs the kinds of difference and the
# columns that differ, then reconcile's first lines.
reconcile_all() {
    local db=$1 label=$2 schema=${3:-} t rc rows summary='' bad=0 out
    for t in "${E2E_TABLES[@]}"; do
        local src=()
        [[ -n $schema ]] && src=(--source-table "$schema.$t")
        out=$WORK/reconcile-$label-$t
        "$CDC" reconcile --db "$db" --table "public.$t" --source "$SRC" "${src[@]}" >"$out.out" 2>"$out.err"
        rc=$?
        if ((rc != 0)); then
            bad=$((bad + 1))
            echo "public.$t: reconcile exited $rc: $(cut -f1 "$out.out" | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }')"
            echo "  columns that differ (rows): $(jq -R -r 'split("\t") | select(.[0] == "different")
                | (.[2] | fromjson) as $a | (.[3] | fromjson) as $b | $a | keys[] | select($a[.] != $b[.])' "$out.out" |
                sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')"
            head -n 3 "$out.out" | cut -c1-600
            tail -n 1 "$out.err"
            continue
        fi
        rows=$(app_psql -c "SELECT count(*) FROM ${schema:-public}.$t")
        summary+="${summary:+, }$t $rows"
    done
    ((bad == 0)) || return 1
    echo "$summary rows"
}

# percentiles FILE [FROM_LINE [TO_LINE]]: "p50 P p99 Q max M n N" (ms) of the
# latency report lines in the range.
percentiles() {
    local f=$1 from=${2:-1} to=${3:-}
    [[ -z $to ]] && to=$(wc -l <"$f")
    sed -n "${from},${to}p" "$f" | sort -n | awk '{ v[NR] = $1 }
        END {
            if (NR == 0) { print "p50 - p99 - max - n 0"; exit }
            i50 = int(0.50 * NR); if (i50 < 0.50 * NR) i50++; if (i50 < 1) i50 = 1
            i99 = int(0.99 * NR); if (i99 < 0.99 * NR) i99++; if (i99 < 1) i99 = 1
            printf "p50 %d p99 %d max %d n %d\n", v[i50], v[i99], v[NR], NR
        }'
}

# stat_of DB TABLE COUNTER: one counter of `cdcstore stats --json`.
stat_of() {
    "$CDC" stats --db "$1" --json | jq -r --arg t "$2" --arg c "$3" \
        'if $t == "total" then .total[$c] else (.tables[$t][$c] // 0) end'
}

# Ends the processes this script started that still run.
e2e_kill_started() {
    local p
    for p in "${E2E_PIDS[@]}"; do
        if kill -0 "$p" 2>/dev/null; then
            kill -TERM "$p" 2>/dev/null
        fi
    done
    for p in "${E2E_PIDS[@]}"; do wait "$p" 2>/dev/null; done
    E2E_PIDS=()
}
