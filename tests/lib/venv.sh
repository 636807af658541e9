# tests/lib/venv.sh: the Python virtual environment the reader tests share,
# at $ROOT/.cache/test-venv (ROOT: the checkout; set before sourcing, else
# found from this file).  Source it, then `venv_ensure pkg...`: creates the
# venv when missing and installs the packages it lacks, quietly, printing one
# line per step.  VENV_PY is its python.  Idempotent: a second call with
# packages already there does not touch the network.
: "${ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
VENV_DIR="$ROOT/.cache/test-venv"
VENV_PY="$VENV_DIR/bin/python"

venv_ensure() {
    if [ ! -x "$VENV_PY" ]; then
        echo "venv: creating $VENV_DIR"
        mkdir -p "$ROOT/.cache"
        python3 -m venv "$VENV_DIR" || { echo "venv: python3 -m venv failed (apt-get install python3-venv)" >&2; return 1; }
    fi
    local missing=() p mod
    for p in "$@"; do
        mod=${p%%[<>=]*}
        mod=${mod//-/_}
        "$VENV_PY" -c "import $mod" 2>/dev/null || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "venv: installing ${missing[*]}"
    "$VENV_PY" -m pip install -q "${missing[@]}" || { echo "venv: pip install ${missing[*]} failed" >&2; return 1; }
}
