# tests/lib/pg.sh: start and stop a throw-away PostgreSQL 15 for scripts
# (sourced).  pg_start DIR PORT initdb's DIR/data as user postgres when run
# as root, listens on a Unix socket in DIR only (no TCP), fsync off; it
# exports PGHOST/PGPORT/PGUSER so psql and libpq find it.  pg_stop DIR.
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

pg_as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_start() {
    local dir=$1 port=$2
    [ -x "$PGBIN/initdb" ] || { echo "no PostgreSQL 15 in $PGBIN (make deps installs it)" >&2; return 1; }
    mkdir -p "$dir" && chmod 755 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    pg_as "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; return 1; }
    pg_as "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
        -o "-p $port -k $dir -c listen_addresses='' -c fsync=off" start >/dev/null ||
        { cat "$dir/log" >&2; return 1; }
    export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
}

pg_stop() {
    local dir=$1
    [ -f "$dir/data/postmaster.pid" ] && pg_as "$PGBIN/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1
    return 0
}
