# shellcheck shell=bash
# tests/lib/venv.sh: the Python virtual environment the reader tests share,
# at $ROOT/.cache/test-venv (ROOT: the checkout; set before sourcing, else
# found from this file).  Source it, then `venv_ensure pkg...`: creates the
# venv when missing and installs the packages it lacks, quietly, printing one
# line per step.  VENV_PY is its python.  Idempotent: a second call with
# packages already there does not touch the network (one importlib.metadata
# look-up, about 50 ms).
#
# A bare name that VENV_PINS knows is installed at its pinned version (a venv
# holding another version gets the pinned one); a name VENV_PINS does not
# know is taken at any version; a name with a specifier ("duckdb>=1.1") is
# checked against it.  The pins were checked together: pyarrow, duckdb and
# deltalake read the same Parquet files and Delta tables, and pyspark 4.2.0
# with delta-spark 4.4.0 (the pair bench/run.sh uses; delta-spark 4.4 asks for
# pyspark <= 4.2.0) runs on Java 17.  VENV_CONSTRAINTS holds their
# dependencies at the versions checked with them.
#
#   venv_ensure pyarrow duckdb             # the Parquet readers
#   venv_ensure deltalake                  # Delta tables (with pyarrow)
#   venv_ensure pyspark delta-spark        # Spark + Delta (Java 17 on PATH)
#   venv_ensure "${VENV_READERS[@]}"       # every reader of tests/export/read_table.py
#
# The first Spark session then fetches the Delta jars from Maven Central into
# $ROOT/.cache/ivy (tests/export/read_table.py sets spark.jars.ivy there).
# Packages are installed one pip call each, under a lock, so that two tests
# starting at once do not install into the venv together.
: "${ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
VENV_DIR="$ROOT/.cache/test-venv"
VENV_PY="$VENV_DIR/bin/python"

VENV_PINS=(
    pyarrow==26.0.1
    numpy==2.4.6
    duckdb==2.0.1
    deltalake==1.6.6
    pyspark==4.2.0
    delta-spark==4.4.0
)
VENV_CONSTRAINTS=(
    arro3-core==0.9.1
    deprecated==1.3.1
    wrapt==2.5.2
    py4j==0.10.9.9
    importlib_metadata==8.7.1
    zipp==4.1.2
    typing_extensions==4.16.0
)
# shellcheck disable=SC2034 # for the callers
VENV_READERS=(pyarrow numpy duckdb deltalake pyspark delta-spark)

# What a package needs beside it, installed first (deltalake's own
# dependencies leave pyarrow out; delta-spark pulls pyspark).
_venv_with() {
    case $1 in
        deltalake) echo pyarrow ;;
        delta-spark) echo pyspark ;;
    esac
}

_venv_note() {
    case $1 in
        pyspark) echo " (large, ~1 min)" ;;
        pyarrow | deltalake | duckdb) echo " (~20 s)" ;;
    esac
}

# The specifier of a name: its pin when it has one, else the name itself.
_venv_spec() {
    local p
    case $1 in *[\<\>=!~]*) echo "$1"; return ;; esac
    for p in "${VENV_PINS[@]}"; do
        [ "${p%%==*}" = "$1" ] && { echo "$p"; return; }
    done
    echo "$1"
}

# Prints the specifiers among "$@" that the venv does not satisfy, then
# --checked--.
_venv_missing() {
    "$VENV_PY" - "$@" <<'EOF'
import re, sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1:]:
    name, op, want = re.match(r"([A-Za-z0-9._-]+)\s*(.*?)\s*([^<>=!~\s]*)$", spec).groups()
    try:
        have = version(name)
    except PackageNotFoundError:
        print(spec)
        continue
    if op == "==":
        ok = have == want
    elif op:
        from pip._vendor.packaging.requirements import Requirement
        ok = Requirement(spec).specifier.contains(have, prereleases=True)
    else:
        ok = True
    if not ok:
        print(spec)
print("--checked--")
EOF
}

# The specifiers the venv lacks into the array _venv_need (every one of them
# when the venv's python cannot tell).
_venv_need=()
_venv_check() {
    local out
    out=$(_venv_missing "$@" 2>/dev/null)
    if [[ $out == *--checked-- ]]; then
        mapfile -t _venv_need < <(printf '%s\n' "$out" | grep -vx -- '--checked--')
    else
        _venv_need=("$@")
    fi
}

venv_ensure() {
    local specs=() p w s cons rc=0
    for p in "$@"; do
        for w in $(_venv_with "${p%%[<>=!~]*}") "$p"; do
            s=$(_venv_spec "$w")
            [[ " ${specs[*]} " == *" $s "* ]] || specs+=("$s")
        done
    done
    if [ -x "$VENV_PY" ] && [ ${#specs[@]} -gt 0 ]; then
        _venv_check "${specs[@]}"
        [ ${#_venv_need[@]} -eq 0 ] && return 0
    fi
    mkdir -p "$ROOT/.cache"
    (
        flock 9
        if [ ! -x "$VENV_PY" ]; then
            echo "venv: creating $VENV_DIR"
            python3 -m venv "$VENV_DIR" || { echo "venv: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
        fi
        [ ${#specs[@]} -gt 0 ] || exit 0
        # Again under the lock: another test may have installed them meanwhile.
        _venv_check "${specs[@]}"
        cons="$VENV_DIR/constraints.txt"
        printf '%s\n' "${VENV_CONSTRAINTS[@]}" > "$cons"
        for s in "${_venv_need[@]}"; do
            echo "venv: installing $s$(_venv_note "${s%%[<>=!~]*}")..."
            "$VENV_PY" -m pip install -q --disable-pip-version-check -c "$cons" "$s" \
                > "$VENV_DIR/pip.log" 2>&1 ||
                { echo "venv: pip install $s failed:" >&2; tail -n 20 "$VENV_DIR/pip.log" >&2; exit 1; }
        done
    ) 9> "$ROOT/.cache/test-venv.lock" || rc=$?
    return $rc
}
