#!/usr/bin/env bash
# dv_refresh.sh: Delta tables refreshed by deletion vectors (cdcstore export
# --format delta --deletion-vectors; query/delta.c, "Deletion vectors")
# against the replica they come from.  Seeded change histories are applied
# step by step; after each step the replica's table is saved as NDJSON (the
# truth) and the Delta table refreshed; every version of every table is read
# by deltalake (QueryBuilder) and by Spark (one session, at the end) and must
# hold the same rows as the NDJSON of its step (a version written while an
# apply ran: each key at most once).  The scenarios are listed in
# tests/export/dv_refresh.py.  About 3 minutes on 2 cores, Spark included
# (Spark's reads of some 110 versions are most of it).
#
# Uses build/cdcstore (BUILD=dir to choose; built when missing); KEEP=1 keeps
# the work dir; DV_ONLY=1,5 runs only those scenarios; DV_NO_SPARK=1 skips
# Spark.  Prints one "ok ..." or "FAIL ..." line per check and exits
# non-zero on any FAIL.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
. tests/lib/venv.sh
venv_ensure pyarrow deltalake pyspark delta-spark

BUILD=${BUILD:-build}
[ -x "$BUILD/cdcstore" ] || make --no-print-directory BUILD="$BUILD" -j2 > /dev/null
WORK=$(mktemp -d /tmp/cdcdvr.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
echo "work dir $WORK"
# a copy: a rebuild during the run then changes nothing under it
cp "$BUILD/cdcstore" "$WORK/cdcstore"
nice "$VENV_PY" tests/export/dv_refresh.py "$WORK/cdcstore" "$WORK"
