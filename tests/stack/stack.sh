#!/usr/bin/env bash
# The end-to-end test stack of cdcstore, run as plain processes on loopback
# ports (no Docker): PostgreSQL 15 with wal_level=logical, a single-node Kafka
# 4.3 in KRaft mode, and a Kafka Connect distributed worker with Debezium's
# PostgreSQL connector 3.6.1.Final. The Java artifacts come from Maven
# Central through the two pom files beside this script.
#
# Usage: tests/stack/stack.sh deps|up|down|status|env|psql|reset-db
#   deps      fetch the Java artifacts once into $STACK_JAVA_CACHE
#   up [C..]  start every component (fetching deps first) and wait until ready;
#             or only the ones named: postgres, kafka, connect (connect needs
#             kafka: `up kafka` is a broker alone, as bench/backlog.sh wants)
#   down      stop every component; nothing is left running
#   wipe      down, then delete $STACK_DIR (data, topics, logs, secrets)
#   status    say what runs (exit 0 when all three components are up, 3 if not)
#   env       print shell exports: PG*, KAFKA_BROKERS, CONNECT_URL, ...
#   psql      run psql in database shop as the application role (args passed on)
#   kafka-topics ARGS  Kafka's TopicCommand against the stack's broker
#   reset-db  drop and recreate database shop from schema.sql (connectors must
#             have been deleted first; their replication slots are dropped)
#
# Environment (defaults in brackets):
#   STACK_DIR [$REPO/.stack]             state: data, configs, logs, secrets
#   STACK_JAVA_CACHE [$REPO/.cache/stack-java]  jars and the Debezium plugin
#   STACK_PG_PORT [55432]  STACK_KAFKA_PORT [19092]
#   STACK_KAFKA_CONTROLLER_PORT [19093]  STACK_CONNECT_PORT [18083]
#   STACK_READY_TIMEOUT [240]            seconds each component may take
#   STACK_PROGRESS_EVERY [10]            seconds between "still at it" lines of a
#                                        download or of a component starting
#   STACK_M2_REPO [~/.m2/repository]     Maven's local repository (its size is
#                                        the download's progress)
#   STACK_KAFKA_HEAP [-Xms256m -Xmx512m]  STACK_CONNECT_HEAP [-Xms256m -Xmx768m]
#   PG_BIN [/usr/lib/postgresql/15/bin]
#
# Passwords are generated on the first `up`, kept in $STACK_DIR/secrets (mode
# 0600) and never printed: psql finds them through PGPASSFILE, Kafka Connect
# through its FileConfigProvider.

set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SCRIPT_DIR/../.." && pwd)

# ---- Settings -------------------------------------------------------------

STACK_DIR=$(realpath -m "${STACK_DIR:-$REPO/.stack}")
STACK_JAVA_CACHE=$(realpath -m "${STACK_JAVA_CACHE:-$REPO/.cache/stack-java}")
STACK_HOST=127.0.0.1
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
STACK_READY_TIMEOUT=${STACK_READY_TIMEOUT:-240}
STACK_KAFKA_HEAP=${STACK_KAFKA_HEAP:--Xms256m -Xmx512m}
STACK_CONNECT_HEAP=${STACK_CONNECT_HEAP:--Xms256m -Xmx768m}
JVM_OPTS="-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true"

# The database, its roles and the names tests rely on.
PG_DB=shop
PG_SUPERUSER=postgres
PG_APP_USER=app
PG_REPL_USER=dbz
PG_OWNER_ROLE=shop_owners

LOGS=$STACK_DIR/logs
RUN=$STACK_DIR/run
CONF=$STACK_DIR/conf
SECRETS=$STACK_DIR/secrets
PGDATA=$STACK_DIR/pg
KAFKA_DATA=$STACK_DIR/kafka
PORTS_FILE=$STACK_DIR/ports.env

# Ports: the ones recorded by the running stack win over the environment, so
# that `env`, `status` and `down` address what `up` started.
load_ports() {
    if [[ -f $PORTS_FILE ]] && stack_running_any; then
        # shellcheck disable=SC1090
        . "$PORTS_FILE"
    fi
    STACK_PG_PORT=${STACK_PG_PORT:-55432}
    STACK_KAFKA_PORT=${STACK_KAFKA_PORT:-19092}
    STACK_KAFKA_CONTROLLER_PORT=${STACK_KAFKA_CONTROLLER_PORT:-19093}
    STACK_CONNECT_PORT=${STACK_CONNECT_PORT:-18083}
}

# ---- Helpers ---------------------------------------------------------------

log() { printf 'stack: %s\n' "$*" >&2; }
die() { printf 'stack: error: %s\n' "$*" >&2; exit 1; }

is_root() { [[ $(id -u) -eq 0 ]]; }

# Runs a command as the OS user that owns the PostgreSQL data directory:
# initdb and postgres refuse to run as root.
as_pg() {
    if is_root; then
        # From /: the caller's directory may be closed to the postgres user.
        (cd / && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

need() {
    local tool=$1 hint=$2
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found: $hint"
}

# A zombie (exited, not yet reaped by whoever inherited it) counts as dead.
pid_alive() {
    [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null || return 1
    local stat
    stat=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
    [[ ${stat%% *} != Z ]]
}

stack_running_any() { pid_alive "$(pg_pid)" || pid_alive "$(pid_of kafka)" || pid_alive "$(pid_of connect)"; }

pid_of() {
    local f=$RUN/$1.pid
    if [[ -f $f ]]; then cat "$f"; fi
}

pg_pid() {
    if [[ -f $PGDATA/postmaster.pid ]]; then head -n 1 "$PGDATA/postmaster.pid"; fi
}

port_open() { (exec 3<>"/dev/tcp/$STACK_HOST/$1") 2>/dev/null; }

# How often a long step says it is still at work (seconds).
STACK_PROGRESS_EVERY=${STACK_PROGRESS_EVERY:-10}

# with_progress WHAT SIZEDIR CMD...: runs CMD, and while it runs logs "WHAT:
# still at it after N s" every STACK_PROGRESS_EVERY seconds, with the size
# of SIZEDIR when it exists (what a download has fetched so far); CMD's
# exit status.
with_progress() {
    local what=$1 sizedir=$2 started=$SECONDS next=$((SECONDS + STACK_PROGRESS_EVERY)) pid size
    shift 2
    "$@" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if ((SECONDS >= next)); then
            size=""
            [[ -d $sizedir ]] && size="; $(du -sm "$sizedir" 2>/dev/null | cut -f1) MB in $sizedir"
            log "$what: still at it after $((SECONDS - started)) s$size"
            next=$((SECONDS + STACK_PROGRESS_EVERY))
        fi
        sleep 1
    done
    wait "$pid"
}

# wait_until NAME LOGFILE PIDFN CMD...: polls CMD every half second until it
# succeeds; fails with the component's log file named when the process dies or
# STACK_READY_TIMEOUT passes.  Says every STACK_PROGRESS_EVERY seconds that
# it is still waiting.
wait_until() {
    local name=$1 logfile=$2 pidfn=$3
    shift 3
    local deadline=$((SECONDS + STACK_READY_TIMEOUT)) started=$SECONDS pid
    local next=$((SECONDS + STACK_PROGRESS_EVERY))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= next)); then
            log "$name: waiting until it is ready, $((SECONDS - started)) s (at most ${STACK_READY_TIMEOUT} s)"
            next=$((SECONDS + STACK_PROGRESS_EVERY))
        fi
        pid=$($pidfn)
        # PostgreSQL writes its pid file a moment after pg_ctl returns.
        if [[ -z $pid && $((SECONDS - started)) -lt 15 ]]; then
            sleep 0.2
            continue
        fi
        if ! pid_alive "$pid"; then
            tail -n 20 "$logfile" >&2 2>/dev/null || true
            die "$name exited while starting; see $logfile"
        fi
        if ((SECONDS >= deadline)); then
            tail -n 20 "$logfile" >&2 2>/dev/null || true
            die "$name not ready after ${STACK_READY_TIMEOUT}s; see $logfile"
        fi
        sleep 0.5
    done
}

# stop_pid NAME PID: SIGTERM, then poll; SIGKILL after 60 s.
stop_pid() {
    local name=$1 pid=$2 deadline=$((SECONDS + 60))
    pid_alive "$pid" || return 0
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    while pid_alive "$pid"; do
        if ((SECONDS >= deadline)); then
            log "$name (pid $pid) ignored SIGTERM for 60s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
    while pid_alive "$pid"; do sleep 0.1; done
}

# Processes of this stack whose pid file was lost: the JVMs are recognised by
# their configuration file, a path unique to this STACK_DIR.
stray_pids() {
    local conf=$1 p cmd
    for p in /proc/[0-9]*; do
        cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
        [[ $cmd == *java* && $cmd == *"$conf"* ]] && echo "${p#/proc/}"
    done
    return 0
}

random_secret() { head -c 24 /dev/urandom | base64 | tr -d '/+=\n'; }

java_classpath() { echo "$STACK_JAVA_CACHE/libs/*"; }

# ---- Tools ------------------------------------------------------------------

# Installs the Debian packages the stack needs when one is missing and we are
# root (as on CI); otherwise names them and fails.
ensure_tools() {
    local missing=()
    command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
    command -v mvn >/dev/null 2>&1 || missing+=(maven)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    command -v jq >/dev/null 2>&1 || missing+=(jq)
    command -v kcat >/dev/null 2>&1 || missing+=(kcat)
    command -v psql >/dev/null 2>&1 || missing+=(postgresql-client-15)
    [[ -x $PG_BIN/postgres ]] || missing+=(postgresql-15)
    if ((${#missing[@]} > 0)); then
        if is_root && command -v apt-get >/dev/null 2>&1; then
            log "installing Debian packages: ${missing[*]}"
            apt-get update -q >/dev/null || die "apt-get update failed"
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null ||
                die "apt-get install ${missing[*]} failed"
        else
            die "missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})"
        fi
    fi
    local v
    v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
    [[ -n $v && $v -ge 17 ]] || die "Kafka 4.3 needs Java 17 or newer; 'java' is version ${v:-unknown}"
}

# ---- deps ------------------------------------------------------------------

deps_stamp() { cat "$SCRIPT_DIR/pom-kafka.xml" "$SCRIPT_DIR/pom-debezium.xml" | sha256sum | cut -c1-16; }

deps_present() {
    [[ -f $STACK_JAVA_CACHE/.stamp && $(cat "$STACK_JAVA_CACHE/.stamp") == "$(deps_stamp)" ]] &&
        [[ -d $STACK_JAVA_CACHE/libs && -d $STACK_JAVA_CACHE/plugins/debezium-connector-postgres ]]
}

cmd_deps() {
    if deps_present; then
        log "deps: Java artifacts present in $STACK_JAVA_CACHE"
        return 0
    fi
    ensure_tools
    mkdir -p "$(dirname "$STACK_JAVA_CACHE")"
    # One fetch at a time per cache; a second caller waits, then finds it done.
    exec 9>"$STACK_JAVA_CACHE.lock"
    flock 9
    if deps_present; then
        log "deps: Java artifacts present in $STACK_JAVA_CACHE"
        return 0
    fi
    local tmp=$STACK_JAVA_CACHE.tmp
    rm -rf "$tmp"
    mkdir -p "$tmp"
    log "deps: fetching Kafka 4.3 and Debezium 3.6.1 from Maven Central into $STACK_JAVA_CACHE (the first time only; about a minute)"
    # Maven's local repository, where the downloads land first: its size
    # shows how far they are.
    local m2=${STACK_M2_REPO:-$HOME/.m2/repository}
    log "deps: Kafka 4.3 (1 of 2)"
    with_progress "deps: Kafka 4.3" "$m2" \
        mvn -q -B -Dstyle.color=never -f "$SCRIPT_DIR/pom-kafka.xml" dependency:copy-dependencies \
        -DoutputDirectory="$tmp/libs" ||
        die "deps: mvn failed for $SCRIPT_DIR/pom-kafka.xml"
    log "deps: Debezium 3.6.1 (2 of 2)"
    with_progress "deps: Debezium 3.6.1" "$m2" \
        mvn -q -B -Dstyle.color=never -f "$SCRIPT_DIR/pom-debezium.xml" dependency:copy-dependencies \
        -DoutputDirectory="$tmp/archives" ||
        die "deps: mvn failed for $SCRIPT_DIR/pom-debezium.xml"
    mkdir -p "$tmp/plugins"
    local archive
    for archive in "$tmp"/archives/*-plugin.tar.gz; do
        [[ -f $archive ]] || die "deps: no Debezium plugin archive in $tmp/archives"
        tar -xzf "$archive" -C "$tmp/plugins"
    done
    [[ -f $(echo "$tmp"/plugins/debezium-connector-postgres/debezium-connector-postgres-*.jar) ]] ||
        die "deps: the Debezium archive has no connector jar"
    deps_stamp >"$tmp/.stamp"
    rm -rf "$STACK_JAVA_CACHE"
    mv "$tmp" "$STACK_JAVA_CACHE"
    log "deps: $(find "$STACK_JAVA_CACHE/libs" -name '*.jar' | wc -l) jars in libs/, Debezium in plugins/"
}

# ---- PostgreSQL --------------------------------------------------------------

pg_secrets() {
    mkdir -p "$SECRETS"
    chmod 700 "$SECRETS"
    local u
    (
        umask 077
        for u in $PG_SUPERUSER $PG_APP_USER $PG_REPL_USER; do
            [[ -s $SECRETS/$u.pw ]] || random_secret >"$SECRETS/$u.pw"
        done
        # psql and libpq read this through PGPASSFILE; the port is part of it.
        : >"$SECRETS/pgpass"
        for u in $PG_SUPERUSER $PG_APP_USER $PG_REPL_USER; do
            printf '%s:%s:*:%s:%s\n' "$STACK_HOST" "$STACK_PG_PORT" "$u" "$(cat "$SECRETS/$u.pw")" \
                >>"$SECRETS/pgpass"
        done
        # Kafka Connect resolves ${file:...:dbz.password} from this file.
        printf 'dbz.password=%s\n' "$(cat "$SECRETS/$PG_REPL_USER.pw")" >"$SECRETS/connect.properties"
    )
}

# psql over TCP as the given role, quiet and failing on the first error.
pg_psql() {
    local user=$1 db=$2
    shift 2
    PGPASSFILE=$SECRETS/pgpass psql -X -q -v ON_ERROR_STOP=1 -h "$STACK_HOST" -p "$STACK_PG_PORT" \
        -U "$user" -d "$db" "$@"
}

pg_ready() { "$PG_BIN/pg_isready" -q -h "$STACK_HOST" -p "$STACK_PG_PORT" -d postgres; }

# The data directory must be reachable by the postgres OS user when we run as
# root; a clone under a private directory is not, so the cluster then lives
# under /var/tmp and $STACK_DIR/pg is a symbolic link to it.
pg_prepare_datadir() {
    [[ -L $PGDATA ]] && return 0
    mkdir -p "$PGDATA"
    if is_root; then
        chown postgres:postgres "$PGDATA"
        chmod 700 "$PGDATA"
        if ! runuser -u postgres -- test -w "$PGDATA"; then
            rmdir "$PGDATA"
            local alt
            alt=/var/tmp/cdcstore-stack-$(printf '%s' "$STACK_DIR" | sha256sum | cut -c1-12)/pg
            # Left over from an earlier $STACK_DIR of the same path, removed by hand.
            rm -rf "$alt"
            mkdir -p "$alt"
            chown postgres:postgres "$alt" "$(dirname "$alt")"
            chmod 700 "$alt"
            ln -s "$alt" "$PGDATA"
            log "postgres cannot reach $STACK_DIR; its data directory is $alt"
        fi
    fi
}

pg_init() {
    [[ -f $PGDATA/PG_VERSION ]] && return 0
    pg_prepare_datadir
    log "postgres: initdb in $PGDATA"
    local pwfile
    pwfile=$(readlink -f "$PGDATA")/../initdb.pw
    (umask 077 && cp "$SECRETS/$PG_SUPERUSER.pw" "$pwfile")
    is_root && chown postgres:postgres "$pwfile"
    if ! as_pg "$PG_BIN/initdb" -D "$(readlink -f "$PGDATA")" -U "$PG_SUPERUSER" --pwfile="$pwfile" \
        -A scram-sha-256 -E UTF8 --locale=C.UTF-8 -N >"$LOGS/initdb.log" 2>&1; then
        rm -f "$pwfile"
        die "postgres: initdb failed; see $LOGS/initdb.log"
    fi
    rm -f "$pwfile"
    echo "include_if_exists = 'stack.conf'" >>"$PGDATA/postgresql.conf"
}

pg_configure() {
    # Rewritten on every start so that a port change takes effect.
    cat >"$PGDATA/stack.conf" <<EOF
# Written by tests/stack/stack.sh; rewritten on every start.
listen_addresses = '$STACK_HOST'
port = $STACK_PG_PORT
unix_socket_directories = ''
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
max_slot_wal_keep_size = 1GB
fsync = off
# PostgreSQL's default. Logical decoding sends only flushed WAL: with
# synchronous_commit=off a commit waits for the WAL writer (every
# wal_writer_delay, 200 ms) before Debezium sees it, the largest stage of the
# end-to-end latency after poll.interval.ms (README, "Latency"). With fsync
# off the flush at commit costs a write(2).
synchronous_commit = on
full_page_writes = off
log_line_prefix = '%m [%p] %q%u@%d '
log_min_messages = warning
log_replication_commands = on
EOF
    cat >"$PGDATA/pg_hba.conf" <<EOF
# Written by tests/stack/stack.sh: password logins over loopback TCP only.
host    all          all                 $STACK_HOST/32   scram-sha-256
host    replication  $PG_REPL_USER       $STACK_HOST/32   scram-sha-256
EOF
    is_root && chown postgres:postgres "$PGDATA/stack.conf" "$PGDATA/pg_hba.conf"
    return 0
}

pg_bootstrap() {
    if [[ $(pg_psql "$PG_SUPERUSER" postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'") == 1 ]]; then
        return 0
    fi
    log "postgres: creating roles and database $PG_DB"
    # Passwords travel on stdin, never on a command line or in a log.
    pg_psql "$PG_SUPERUSER" postgres <<EOF
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_OWNER_ROLE') THEN
    CREATE ROLE $PG_OWNER_ROLE NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_APP_USER') THEN
    CREATE ROLE $PG_APP_USER LOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_REPL_USER') THEN
    CREATE ROLE $PG_REPL_USER LOGIN REPLICATION;
  END IF;
END \$\$;
ALTER ROLE $PG_APP_USER PASSWORD '$(cat "$SECRETS/$PG_APP_USER.pw")';
ALTER ROLE $PG_REPL_USER PASSWORD '$(cat "$SECRETS/$PG_REPL_USER.pw")';
GRANT $PG_OWNER_ROLE TO $PG_APP_USER;
GRANT $PG_OWNER_ROLE TO $PG_REPL_USER;
EOF
    pg_create_db
}

# Creates database shop owned by app, lets dbz create publications in it,
# and loads schema.sql as app.
pg_create_db() {
    pg_psql "$PG_SUPERUSER" postgres -c "CREATE DATABASE $PG_DB OWNER $PG_APP_USER"
    pg_psql "$PG_SUPERUSER" "$PG_DB" <<EOF
REVOKE ALL ON DATABASE $PG_DB FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE $PG_DB TO $PG_APP_USER;
GRANT CONNECT, CREATE ON DATABASE $PG_DB TO $PG_REPL_USER;
GRANT USAGE, CREATE ON SCHEMA public TO $PG_OWNER_ROLE;
EOF
    pg_psql "$PG_APP_USER" "$PG_DB" -f "$SCRIPT_DIR/schema.sql" >/dev/null
    log "postgres: database $PG_DB created from schema.sql"
}

pg_up() {
    [[ -x $PG_BIN/postgres ]] || die "PostgreSQL 15 not found in $PG_BIN (apt-get install -y postgresql-15)"
    need psql "install postgresql-client-15"
    pg_secrets
    if pid_alive "$(pg_pid)" && pg_ready; then
        log "postgres: already running on $STACK_HOST:$STACK_PG_PORT"
        pg_bootstrap
        return 0
    fi
    port_open "$STACK_PG_PORT" && die "postgres: port $STACK_PG_PORT is taken by another process (set STACK_PG_PORT)"
    pg_init
    pg_configure
    log "postgres: starting on $STACK_HOST:$STACK_PG_PORT"
    # We open the log file, not postgres: $STACK_DIR may be closed to the
    # postgres user. setsid: the server outlives this shell and ignores its ^C.
    local datadir
    datadir=$(readlink -f "$PGDATA")
    if is_root; then
        (cd / && exec setsid runuser -u postgres -- "$PG_BIN/postgres" -D "$datadir") \
            </dev/null >>"$LOGS/postgres.log" 2>&1 &
    else
        (cd / && exec setsid "$PG_BIN/postgres" -D "$datadir") </dev/null >>"$LOGS/postgres.log" 2>&1 &
    fi
    wait_until postgres "$LOGS/postgres.log" pg_pid pg_ready
    pg_bootstrap
    log "postgres: ready"
}

pg_down() {
    local pid
    pid=$(pg_pid)
    if pid_alive "$pid"; then
        log "stopping postgres (pid $pid)"
        as_pg "$PG_BIN/pg_ctl" -D "$(readlink -f "$PGDATA")" -m fast -s -t 60 stop ||
            stop_pid postgres "$pid"
    fi
}

# ---- Kafka -------------------------------------------------------------------

kafka_configure() {
    mkdir -p "$CONF"
    cat >"$CONF/server.properties" <<EOF
# Written by tests/stack/stack.sh: one combined KRaft broker and controller.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=$STACK_HOST:$STACK_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$STACK_HOST:$STACK_KAFKA_PORT,CONTROLLER://$STACK_HOST:$STACK_KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$STACK_HOST:$STACK_KAFKA_PORT,CONTROLLER://$STACK_HOST:$STACK_KAFKA_CONTROLLER_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=2
num.recovery.threads.per.data.dir=1
EOF
}

kafka_java() {
    local heap=$1
    shift
    # shellcheck disable=SC2086
    java $heap $JVM_OPTS -Dlog4j2.configurationFile="$SCRIPT_DIR/log4j2.xml" "$@"
}

kafka_format() {
    [[ -f $KAFKA_DATA/meta.properties ]] && return 0
    mkdir -p "$KAFKA_DATA"
    local id
    if [[ ! -s $STACK_DIR/kafka-cluster-id ]]; then
        id=$(kafka_java -Xmx256m -Dstack.log.file="$LOGS/kafka-storage.log" -cp "$(java_classpath)" \
            kafka.tools.StorageTool random-uuid 2>>"$LOGS/kafka-storage.log") ||
            die "kafka: StorageTool random-uuid failed; see $LOGS/kafka-storage.log"
        echo "$id" >"$STACK_DIR/kafka-cluster-id"
    fi
    id=$(cat "$STACK_DIR/kafka-cluster-id")
    log "kafka: formatting $KAFKA_DATA (cluster id $id)"
    kafka_java -Xmx256m -Dstack.log.file="$LOGS/kafka-storage.log" -cp "$(java_classpath)" \
        kafka.tools.StorageTool format --standalone -t "$id" -c "$CONF/server.properties" \
        >>"$LOGS/kafka-storage.log" 2>&1 ||
        die "kafka: StorageTool format failed; see $LOGS/kafka-storage.log"
    # The controller's address is written into the metadata log at format time.
    echo "$STACK_KAFKA_CONTROLLER_PORT" >"$STACK_DIR/kafka-controller-port"
}

kafka_check_controller_port() {
    local f=$STACK_DIR/kafka-controller-port
    [[ -f $f && $(cat "$f") != "$STACK_KAFKA_CONTROLLER_PORT" ]] &&
        die "kafka: $KAFKA_DATA was formatted for controller port $(cat "$f"), not $STACK_KAFKA_CONTROLLER_PORT; run stack.sh wipe first"
    return 0
}

kafka_ready() {
    port_open "$STACK_KAFKA_PORT" || return 1
    if command -v kcat >/dev/null 2>&1; then
        kcat -b "$STACK_HOST:$STACK_KAFKA_PORT" -L -m 5 2>/dev/null | grep -q ' 1 brokers:'
    else
        grep -q 'Kafka Server started' "$LOGS/kafka.log"
    fi
}

kafka_up() {
    if pid_alive "$(pid_of kafka)"; then
        log "kafka: already running on $STACK_HOST:$STACK_KAFKA_PORT"
        wait_until kafka "$LOGS/kafka.log" "pid_of kafka" kafka_ready
        return 0
    fi
    local stray
    stray=$(stray_pids "$CONF/server.properties")
    [[ -z $stray ]] || die "kafka: a broker of this stack runs without pid file (pid $stray); run stack.sh down"
    port_open "$STACK_KAFKA_PORT" && die "kafka: port $STACK_KAFKA_PORT is taken by another process (set STACK_KAFKA_PORT)"
    port_open "$STACK_KAFKA_CONTROLLER_PORT" &&
        die "kafka: port $STACK_KAFKA_CONTROLLER_PORT is taken by another process (set STACK_KAFKA_CONTROLLER_PORT)"
    kafka_check_controller_port
    kafka_configure
    kafka_format
    log "kafka: starting on $STACK_HOST:$STACK_KAFKA_PORT (controller $STACK_KAFKA_CONTROLLER_PORT)"
    # setsid: the broker outlives the shell that started it and ignores its ^C.
    # shellcheck disable=SC2086
    setsid java $STACK_KAFKA_HEAP $JVM_OPTS -Dlog4j2.configurationFile="$SCRIPT_DIR/log4j2.xml" \
        -Dstack.log.file="$LOGS/kafka.log" -Dkafka.logs.dir="$LOGS" -cp "$(java_classpath)" \
        kafka.Kafka "$CONF/server.properties" </dev/null >>"$LOGS/kafka.out" 2>&1 &
    echo $! >"$RUN/kafka.pid"
    wait_until kafka "$LOGS/kafka.log" "pid_of kafka" kafka_ready
    log "kafka: ready"
}

# ---- Kafka Connect -------------------------------------------------------------

connect_configure() {
    cat >"$CONF/connect-distributed.properties" <<EOF
# Written by tests/stack/stack.sh: one distributed Connect worker.
bootstrap.servers=$STACK_HOST:$STACK_KAFKA_PORT
group.id=cdc-connect
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=false
value.converter.schemas.enable=false
value.converter.replace.null.with.default=false
offset.storage.topic=_connect-offsets
offset.storage.replication.factor=1
offset.storage.partitions=1
config.storage.topic=_connect-configs
config.storage.replication.factor=1
status.storage.topic=_connect-status
status.storage.replication.factor=1
status.storage.partitions=1
offset.flush.interval.ms=1000
listeners=http://$STACK_HOST:$STACK_CONNECT_PORT
rest.advertised.host.name=$STACK_HOST
rest.advertised.port=$STACK_CONNECT_PORT
plugin.path=$STACK_JAVA_CACHE/plugins
plugin.discovery=service_load
# Secrets stay in files: a connector says \${file:PATH:KEY}.
config.providers=file
config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
config.providers.file.param.allowed.paths=$SECRETS
EOF
}

connect_url() { echo "http://$STACK_HOST:$STACK_CONNECT_PORT"; }

connect_ready() {
    [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$(connect_url)/health") == 200 ]] || return 1
    curl -fsS --max-time 5 "$(connect_url)/connector-plugins" | grep -q 'io.debezium.connector.postgresql.PostgresConnector'
}

connect_up() {
    need curl "apt-get install -y curl"
    if pid_alive "$(pid_of connect)"; then
        log "connect: already running at $(connect_url)"
        wait_until connect "$LOGS/connect.log" "pid_of connect" connect_ready
        return 0
    fi
    local stray
    stray=$(stray_pids "$CONF/connect-distributed.properties")
    [[ -z $stray ]] || die "connect: a worker of this stack runs without pid file (pid $stray); run stack.sh down"
    port_open "$STACK_CONNECT_PORT" && die "connect: port $STACK_CONNECT_PORT is taken by another process (set STACK_CONNECT_PORT)"
    connect_configure
    log "connect: starting at $(connect_url)"
    # shellcheck disable=SC2086
    setsid java $STACK_CONNECT_HEAP $JVM_OPTS -Dlog4j2.configurationFile="$SCRIPT_DIR/log4j2.xml" \
        -Dstack.log.file="$LOGS/connect.log" -Dkafka.logs.dir="$LOGS" -cp "$(java_classpath)" \
        org.apache.kafka.connect.cli.ConnectDistributed "$CONF/connect-distributed.properties" \
        </dev/null >>"$LOGS/connect.out" 2>&1 &
    echo $! >"$RUN/connect.pid"
    wait_until connect "$LOGS/connect.log" "pid_of connect" connect_ready
    log "connect: ready, Debezium PostgresConnector loaded"
}

# ---- Commands ------------------------------------------------------------------

cmd_up() {
    local want=" ${*:-postgres kafka connect} " c
    for c in $want; do
        case $c in postgres | kafka | connect) ;; *) die "up: no component $c (postgres, kafka, connect)" ;; esac
    done
    ensure_tools
    cmd_deps
    mkdir -p "$LOGS" "$RUN" "$CONF"
    # Record the ports unless a running stack already did.
    if ! stack_running_any; then
        cat >"$PORTS_FILE" <<EOF
STACK_PG_PORT=$STACK_PG_PORT
STACK_KAFKA_PORT=$STACK_KAFKA_PORT
STACK_KAFKA_CONTROLLER_PORT=$STACK_KAFKA_CONTROLLER_PORT
STACK_CONNECT_PORT=$STACK_CONNECT_PORT
EOF
    fi
    if [[ $want != " postgres kafka connect " ]]; then
        [[ $want == *" postgres "* ]] && pg_up
        [[ $want == *" kafka "* || $want == *" connect "* ]] && kafka_up
        [[ $want == *" connect "* ]] && connect_up
        log "up:$want(kafka $STACK_HOST:$STACK_KAFKA_PORT); logs in $LOGS"
        return 0
    fi
    pg_up
    kafka_up
    connect_up
    log "up: postgres $STACK_HOST:$STACK_PG_PORT, kafka $STACK_HOST:$STACK_KAFKA_PORT, connect $(connect_url); logs in $LOGS"
}

cmd_down() {
    local pid
    stop_pid connect "$(pid_of connect)"
    for pid in $(stray_pids "$CONF/connect-distributed.properties"); do stop_pid connect "$pid"; done
    rm -f "$RUN/connect.pid"
    stop_pid kafka "$(pid_of kafka)"
    for pid in $(stray_pids "$CONF/server.properties"); do stop_pid kafka "$pid"; done
    rm -f "$RUN/kafka.pid"
    pg_down
    local p
    for p in "$STACK_CONNECT_PORT" "$STACK_KAFKA_PORT" "$STACK_KAFKA_CONTROLLER_PORT" "$STACK_PG_PORT"; do
        port_open "$p" && die "down: something still listens on $STACK_HOST:$p"
    done
    log "down: nothing of the stack is running"
}

cmd_wipe() {
    cmd_down
    local real
    real=$(readlink -f "$PGDATA" 2>/dev/null || true)
    if [[ -L $PGDATA && -n $real && $real == /var/tmp/cdcstore-stack-* ]]; then
        rm -rf "$(dirname "$real")"
    fi
    rm -rf "$STACK_DIR"
    log "wipe: removed $STACK_DIR"
}

cmd_status() {
    local ok=0 pid
    pid=$(pg_pid)
    if pid_alive "$pid" && pg_ready; then
        echo "postgres  running  pid $pid  $STACK_HOST:$STACK_PG_PORT  db $PG_DB"
        pg_psql "$PG_SUPERUSER" "$PG_DB" -tAF ' ' -c \
            "SELECT '  slot ' || slot_name || ' active=' || active || ' lag_bytes=' ||
                    coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint, 0)
             FROM pg_replication_slots ORDER BY slot_name" 2>/dev/null || true
    else
        echo "postgres  stopped"
        ok=3
    fi
    pid=$(pid_of kafka)
    if pid_alive "$pid" && kafka_ready; then
        echo "kafka     running  pid $pid  $STACK_HOST:$STACK_KAFKA_PORT"
    else
        echo "kafka     stopped${pid:+ (pid file $pid)}"
        ok=3
    fi
    pid=$(pid_of connect)
    if pid_alive "$pid" && connect_ready; then
        echo "connect   running  pid $pid  $(connect_url)"
        local c
        for c in $(curl -fsS --max-time 5 "$(connect_url)/connectors" | tr -d '[]"' | tr ',' ' '); do
            echo "  connector $c: $(curl -fsS --max-time 5 "$(connect_url)/connectors/$c/status" |
                jq -r '"connector=" + .connector.state + " tasks=" + ([.tasks[].state] | join(","))' 2>/dev/null)"
        done
    else
        echo "connect   stopped${pid:+ (pid file $pid)}"
        ok=3
    fi
    echo "logs      $LOGS"
    return $ok
}

cmd_env() {
    cat <<EOF
export STACK_DIR='$STACK_DIR'
export PGHOST=$STACK_HOST
export PGPORT=$STACK_PG_PORT
export PGDATABASE=$PG_DB
export PGUSER=$PG_APP_USER
export PGPASSFILE='$SECRETS/pgpass'
export STACK_PG_SUPERUSER=$PG_SUPERUSER
export STACK_PG_REPL_USER=$PG_REPL_USER
export STACK_CONNECT_SECRETS='$SECRETS/connect.properties'
export KAFKA_BROKERS=$STACK_HOST:$STACK_KAFKA_PORT
export CONNECT_URL=$(connect_url)
EOF
}

cmd_psql() {
    pg_psql "$PG_APP_USER" "$PG_DB" "$@"
}

cmd_kafka_topics() {
    kafka_java -Xmx256m -Dstack.log.file="$LOGS/kafka-tools.log" -cp "$(java_classpath)" \
        org.apache.kafka.tools.TopicCommand --bootstrap-server "$STACK_HOST:$STACK_KAFKA_PORT" "$@"
}

cmd_reset_db() {
    pid_alive "$(pg_pid)" || die "reset-db: postgres is not running (stack.sh up)"
    local active
    active=$(pg_psql "$PG_SUPERUSER" postgres -tAc \
        "SELECT string_agg(slot_name, ' ') FROM pg_replication_slots WHERE database = '$PG_DB' AND active")
    [[ -z $active ]] || die "reset-db: replication slots in use ($active): delete their connectors first"
    pg_psql "$PG_SUPERUSER" postgres -tAc \
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = '$PG_DB'" >/dev/null
    pg_psql "$PG_SUPERUSER" postgres -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)"
    pg_create_db
}

main() {
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    load_ports
    case $cmd in
    deps) cmd_deps ;;
    up) cmd_up "$@" ;;
    down) cmd_down ;;
    wipe) cmd_wipe ;;
    status) cmd_status ;;
    env) cmd_env ;;
    psql) cmd_psql "$@" ;;
    reset-db) cmd_reset_db ;;
    kafka-topics) cmd_kafka_topics "$@" ;;
    *)
        sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
        exit 2
        ;;
    esac
}

main "$@"
