#!/usr/bin/env bash
# Debezium PostgreSQL connectors of the test stack, through the Kafka Connect
# REST API (curl + jq). The stack must be up (tests/stack/stack.sh up).
#
# Usage: tests/stack/connector.sh COMMAND NAME [ARGS]
#   register NAME [OVERRIDE...]  create or update connector NAME. Each OVERRIDE
#                is KEY=VALUE or a JSON object of config keys; later ones win.
#                KEY `schemas.enable` sets both key and value converters.
#   delete NAME [--keep-offsets] [--keep-slot]
#                stop NAME, forget its offsets, delete it, then drop its
#                replication slot and publication, so that the same name
#                registers afresh with a new snapshot. The flags keep either.
#   status NAME  print the connector's status JSON
#   wait-running NAME [SECONDS]  wait until the connector and its task are
#                RUNNING and the walsender of its slot is in state `streaming`
#                (START_REPLICATION was sent, so the initial snapshot is over;
#                the slot alone is already active while the snapshot runs);
#                default 180 s
#   config NAME  print the connector's stored config (passwords stay
#                ${file:...} references)
#   show-config NAME [OVERRIDE...]  print the config register would send
#   stop|resume|restart NAME  the Connect REST verbs of the same names
#
# Defaults (change with overrides): pgoutput, user dbz with its password read
# by Connect's FileConfigProvider, topic.prefix shop, all four tables of
# schema.sql, slot `<name>_slot`, publication `<name>_pub` (name lowercased,
# other characters than [a-z0-9_] replaced by `_`),
# publication.autocreate.mode=filtered, snapshot.mode=initial,
# skipped.operations=none (Debezium's default skips truncates, and a TRUNCATE
# of the source would then never reach the replica), JsonConverter
# key and value with schemas.enable=false and
# value.converter.replace.null.with.default=false; decimal.handling.mode is
# Debezium's default (precise) unless overridden; poll.interval.ms=50, not
# Debezium's 500: the connector waits that long for more events both when its
# replication stream has none and before it hands a batch short of
# max.batch.size (2048) to Kafka Connect, so at 1,000 changes/s the default
# adds 250-500 ms twice over (README, "Latency"; bench/latency.sh measures it).

set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
eval "$("$SCRIPT_DIR/stack.sh" env)"

log() { printf 'connector: %s\n' "$*" >&2; }
die() { printf 'connector: error: %s\n' "$*" >&2; exit 1; }

command -v jq >/dev/null 2>&1 || die "jq not found (apt-get install -y jq)"
command -v curl >/dev/null 2>&1 || die "curl not found (apt-get install -y curl)"

# rest METHOD PATH [BODY]: prints the response body; fails on HTTP >= 400
# with the body in the message.
rest() {
    local method=$1 path=$2 body=${3:-} out code
    out=$(mktemp)
    if [[ -n $body ]]; then
        code=$(curl -sS -o "$out" -w '%{http_code}' --max-time 60 -X "$method" \
            -H 'Content-Type: application/json' --data-binary @- "$CONNECT_URL$path" <<<"$body") || {
            rm -f "$out"
            die "Kafka Connect at $CONNECT_URL not reachable ($method $path); is the stack up?"
        }
    else
        code=$(curl -sS -o "$out" -w '%{http_code}' --max-time 60 -X "$method" "$CONNECT_URL$path") || {
            rm -f "$out"
            die "Kafka Connect at $CONNECT_URL not reachable ($method $path); is the stack up?"
        }
    fi
    if ((code >= 400)); then
        local msg
        msg=$(cat "$out")
        rm -f "$out"
        printf 'connector: %s %s: HTTP %s: %s\n' "$method" "$path" "$code" "$msg" >&2
        return 1
    fi
    cat "$out"
    rm -f "$out"
}

# psql as the PostgreSQL superuser (slots and publications belong to no table
# owner).
su_psql() { psql -X -q -v ON_ERROR_STOP=1 -U "$STACK_PG_SUPERUSER" "$@"; }

ident_of() { printf '%s' "$1" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9_' '_'; }

default_config() {
    local name=$1 id
    id=$(ident_of "$name")
    jq -n --arg port "$PGPORT" --arg db "$PGDATABASE" --arg user "$STACK_PG_REPL_USER" \
        --arg pw "\${file:$STACK_CONNECT_SECRETS:dbz.password}" \
        --arg slot "${id}_slot" --arg pub "${id}_pub" '{
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": $port,
        "database.user": $user,
        "database.password": $pw,
        "database.dbname": $db,
        "topic.prefix": "shop",
        "table.include.list": "public.orders,public.order_lines,public.customers,public.products",
        "slot.name": $slot,
        "publication.name": $pub,
        "publication.autocreate.mode": "filtered",
        "snapshot.mode": "initial",
        "poll.interval.ms": "50",
        "skipped.operations": "none",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "value.converter.replace.null.with.default": "false"
    }'
}

build_config() {
    local name=$1
    shift
    local cfg arg
    cfg=$(default_config "$name")
    for arg in "$@"; do
        if [[ $arg == \{* ]]; then
            jq -e 'type == "object"' <<<"$arg" >/dev/null 2>&1 || die "override is not a JSON object: $arg"
            cfg=$(jq --argjson o "$arg" '. + ($o | map_values(tostring))' <<<"$cfg")
        elif [[ $arg == *=* ]]; then
            local k=${arg%%=*} v=${arg#*=}
            if [[ $k == schemas.enable ]]; then
                cfg=$(jq --arg v "$v" '."key.converter.schemas.enable" = $v | ."value.converter.schemas.enable" = $v' <<<"$cfg")
            else
                cfg=$(jq --arg k "$k" --arg v "$v" '.[$k] = $v' <<<"$cfg")
            fi
        else
            die "override must be KEY=VALUE or a JSON object: $arg"
        fi
    done
    printf '%s\n' "$cfg"
}

cmd_register() {
    local name=$1
    shift
    local cfg
    cfg=$(build_config "$name" "$@")
    rest PUT "/connectors/$name/config" "$cfg" >/dev/null || die "register $name failed"
    log "registered $name (slot $(jq -r '."slot.name"' <<<"$cfg"), topics $(jq -r '."topic.prefix"' <<<"$cfg").*)"
}

# Polls until the connector is gone from the worker's list.
wait_gone() {
    local name=$1 deadline=$((SECONDS + 60))
    while rest GET "/connectors/$name" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "connector $name still listed 60s after DELETE"
        sleep 0.3
    done
}

# Polls until no walsender holds the slot any more.
wait_slot_inactive() {
    local slot=$1 deadline=$((SECONDS + 60))
    while [[ $(su_psql -tAc "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$slot' AND active") != 0 ]]; do
        ((SECONDS < deadline)) || die "slot $slot still active 60s after its connector stopped"
        sleep 0.3
    done
}

wait_state() {
    local name=$1 want=$2 deadline=$((SECONDS + 60)) st
    while :; do
        st=$(rest GET "/connectors/$name/status" 2>/dev/null | jq -r '.connector.state' 2>/dev/null || true)
        [[ $st == "$want" ]] && return 0
        ((SECONDS < deadline)) || die "connector $name is $st, not $want, after 60s"
        sleep 0.3
    done
}

cmd_delete() {
    local name=$1
    shift
    local keep_offsets=0 keep_slot=0 arg
    for arg in "$@"; do
        case $arg in
        --keep-offsets) keep_offsets=1 ;;
        --keep-slot) keep_slot=1 ;;
        *) die "delete: unknown flag $arg" ;;
        esac
    done
    local cfg slot pub
    cfg=$(rest GET "/connectors/$name/config" 2>/dev/null) || die "no connector $name"
    slot=$(jq -r '."slot.name" // empty' <<<"$cfg")
    pub=$(jq -r '."publication.name" // "dbz_publication"' <<<"$cfg")
    if ((!keep_offsets)); then
        # Offsets can only be reset while the connector is STOPPED.
        rest PUT "/connectors/$name/stop" >/dev/null || die "stop $name failed"
        wait_state "$name" STOPPED
        rest DELETE "/connectors/$name/offsets" >/dev/null || die "resetting the offsets of $name failed"
    fi
    rest DELETE "/connectors/$name" >/dev/null || die "delete $name failed"
    wait_gone "$name"
    if ((!keep_slot)) && [[ -n $slot ]]; then
        wait_slot_inactive "$slot"
        su_psql -tAc "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$slot'" >/dev/null
        su_psql -c "DROP PUBLICATION IF EXISTS \"$pub\""
    fi
    log "deleted $name$( ((keep_offsets)) || echo ', offsets reset')$( ((keep_slot)) || echo ", slot $slot and publication $pub dropped")"
}

cmd_wait_running() {
    local name=$1 timeout=${2:-180} deadline st slot
    deadline=$((SECONDS + timeout))
    slot=$(rest GET "/connectors/$name/config" | jq -r '."slot.name"') || die "no connector $name"
    while :; do
        st=$(rest GET "/connectors/$name/status" 2>/dev/null || echo '{}')
        if jq -e '.connector.state == "RUNNING" and (.tasks | length) > 0 and all(.tasks[]; .state == "RUNNING")' \
            <<<"$st" >/dev/null 2>&1 &&
            [[ $(su_psql -tAc "SELECT count(*) FROM pg_replication_slots s JOIN pg_stat_replication r
                               ON r.pid = s.active_pid
                               WHERE s.slot_name = '$slot' AND r.state = 'streaming'") == 1 ]]; then
            log "$name running, slot $slot streaming"
            return 0
        fi
        if jq -e 'any(.tasks[]?; .state == "FAILED") or .connector.state == "FAILED"' <<<"$st" >/dev/null 2>&1; then
            jq -r '[.connector.trace, .tasks[]?.trace] | map(select(. != null)) | .[0]' <<<"$st" | head -n 20 >&2
            die "connector $name FAILED; see $STACK_DIR/logs/connect.log"
        fi
        ((SECONDS < deadline)) || die "connector $name not streaming after ${timeout}s: $(jq -c . <<<"$st"); see $STACK_DIR/logs/connect.log"
        sleep 0.5
    done
}

main() {
    [[ $# -ge 2 ]] || {
        sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
        exit 2
    }
    local cmd=$1 name=$2
    shift 2
    case $cmd in
    register) cmd_register "$name" "$@" ;;
    delete) cmd_delete "$name" "$@" ;;
    status) rest GET "/connectors/$name/status" | jq . ;;
    config) rest GET "/connectors/$name/config" | jq . ;;
    show-config) build_config "$name" "$@" ;;
    wait-running) cmd_wait_running "$name" "$@" ;;
    stop) rest PUT "/connectors/$name/stop" >/dev/null && log "stopped $name" ;;
    resume) rest PUT "/connectors/$name/resume" >/dev/null && log "resumed $name" ;;
    restart) rest POST "/connectors/$name/restart?includeTasks=true" >/dev/null && log "restarting $name" ;;
    *)
        sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
        exit 2
        ;;
    esac
}

main "$@"
