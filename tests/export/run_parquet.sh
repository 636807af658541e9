#!/usr/bin/env bash
# run_parquet.sh: writes Parquet files with the library's writer
# (query/parquet.c, through tests/export/pqgen.c) and reads them back with
# pyarrow and DuckDB (tests/export/parquet_read.py), in the shared test
# venv.  Uses build-pq/libcdcstore.a when it exists, else build/ (BUILD=dir
# to choose).  Exits non-zero on any mismatch.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. tests/lib/venv.sh
venv_ensure duckdb pyarrow

BUILD=${BUILD:-$( [ -f build-pq/libcdcstore.a ] && echo build-pq || echo build )}
[ -f "$BUILD/libcdcstore.a" ] || make --no-print-directory BUILD="$BUILD" lib
WORK=$(mktemp -d /tmp/cdcpq.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT; echo "work dir $WORK"
PKGS="rocksdb rdkafka libcjson liburing libpq"
cc -O2 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Iinclude -Istore -o "$WORK/pqgen" tests/export/pqgen.c \
    "$BUILD/libcdcstore.a" $(pkg-config --libs $PKGS) -lzstd -lsnappy -lpthread -lm
"$VENV_PY" tests/export/parquet_read.py "$WORK/pqgen" "$WORK"
