#!/usr/bin/env bash
# Runs libFuzzer targets built by `make fuzz-build` (tests/fuzz/fuzz.mk), each
# for FUZZ_SECONDS, one after the other, and prints the executions of each.
#
#   tests/fuzz/run.sh [TARGET...]        (default: decode kcat key apply)
#
# Environment: FUZZ_SECONDS (60) per target (0: only run the corpus and the
# regressions once, no fuzzing), FUZZ_BUILD (build-fuzz), FUZZ_MAX_LEN
# (65536 bytes: a few records), FUZZ_RSS_MB (2048), FUZZ_TIMEOUT (30 s for
# one input), FUZZ_CORPUS_MAX (1000: a larger found corpus is merged down to
# the inputs that keep its coverage before the run, since replaying it
# counts against the run's time), CDC_FUZZ_STRICT=1 (check the known findings of README.md too:
# no leak suppressions, no skipped checks; fails until they are fixed).
#
# Each target starts from its committed seeds (tests/fuzz/corpus/TARGET) and
# the findings saved before (tests/fuzz/regressions/TARGET, run at the start
# with the seeds: they must pass), and adds what it finds to
# FUZZ_BUILD/corpus/TARGET, which later
# runs start from too.  The full log is FUZZ_BUILD/logs/TARGET.log; a crash
# leaves its input in FUZZ_BUILD/artifacts/TARGET/ and its report on the
# terminal.  Exit status 1 when any target crashed (all targets run anyway),
# 2 when one is not built.
set -u
cd "$(dirname "$0")/../.."

SECONDS_PER=${FUZZ_SECONDS:-60}
BUILD=${FUZZ_BUILD:-build-fuzz}
MAX_LEN=${FUZZ_MAX_LEN:-65536}
RSS_MB=${FUZZ_RSS_MB:-2048}
TIMEOUT=${FUZZ_TIMEOUT:-30}
CORPUS_MAX=${FUZZ_CORPUS_MAX:-1000}
PROGRESS_EVERY=10
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(decode kcat key apply)

for t in "${targets[@]}"; do
    if [ ! -x "$BUILD/fuzz_$t" ]; then
        echo "fuzz: $BUILD/fuzz_$t is not built (make fuzz-build)" >&2
        exit 2
    fi
done

# A fixed seed (FUZZ_SEED, default 1) makes each run the same sequence of
# mutations from the same corpus, so a finding reproduces; only how far the
# sequence gets in the time given depends on the machine.
if [ "$SECONDS_PER" -gt 0 ]; then limit=(-max_total_time="$SECONDS_PER"); else limit=(-runs=0); fi
limit+=(-seed="${FUZZ_SEED:-1}")
if [ -w /dev/shm ]; then tmpbase=/dev/shm; else tmpbase=${TMPDIR:-/tmp}; fi
scratch=$(mktemp -d "$tmpbase/cdcfuzz-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# LeakSanitizer suppressions: leaks not cdcstore's (lsan.supp), and the
# known findings' (known.supp) unless strict.
cp tests/fuzz/lsan.supp "$scratch/lsan.supp"
if [ "${CDC_FUZZ_STRICT:-0}" = 1 ]; then
    echo "fuzz: strict: the known findings are checked too"
else
    cat tests/fuzz/known.supp >>"$scratch/lsan.supp"
fi
lsan_default="suppressions=$scratch/lsan.supp:print_suppressions=0"

# The last status line libFuzzer printed ("#4096 pulse cov: ... exec/s: ...").
status_line() { grep -aE '^#[0-9]+' "$1" 2>/dev/null | tail -1; }

failed=()
summary=()
for t in "${targets[@]}"; do
    work="$BUILD/corpus/$t"
    art="$BUILD/artifacts/$t"
    log="$BUILD/logs/$t.log"
    mkdir -p "$work" "$art" "$(dirname "$log")"
    dirs=("$work" "tests/fuzz/corpus/$t")
    [ -d "tests/fuzz/regressions/$t" ] && dirs+=("tests/fuzz/regressions/$t")
    mkdir -p "$scratch/$t"
    have=$(find "$work" -type f | wc -l)
    if [ "$have" -gt "$CORPUS_MAX" ]; then
        mkdir -p "$scratch/merged-$t"
        if CDC_FUZZ_TMPDIR="$scratch/$t" LSAN_OPTIONS="suppressions=$scratch/lsan.supp" \
            "$BUILD/fuzz_$t" -merge=1 -max_len="$MAX_LEN" -rss_limit_mb="$RSS_MB" -timeout="$TIMEOUT" \
            "$scratch/merged-$t" "$work" >"$BUILD/logs/$t.merge.log" 2>&1; then
            rm -rf "$work" && mv "$scratch/merged-$t" "$work"
            echo "== fuzz $t: found corpus merged from $have to $(find "$work" -type f | wc -l) inputs"
        else
            echo "== fuzz $t: merging the found corpus failed (see $BUILD/logs/$t.merge.log); fuzzing on"
        fi
    fi
    if [ "$SECONDS_PER" -gt 0 ]; then what="${SECONDS_PER}s"; else what="the corpus once"; fi
    echo "== fuzz $t: $what, max_len $MAX_LEN, rss limit ${RSS_MB} MB (log: $log)"
    start=$(date +%s)
    CDC_FUZZ_TMPDIR="$scratch/$t" \
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    LSAN_OPTIONS=${LSAN_OPTIONS:-$lsan_default} \
        "$BUILD/fuzz_$t" "${limit[@]}" -max_len="$MAX_LEN" -rss_limit_mb="$RSS_MB" \
        -timeout="$TIMEOUT" -print_final_stats=1 -dict=tests/fuzz/debezium.dict \
        -artifact_prefix="$art/" "${dirs[@]}" >"$log" 2>&1 &
    pid=$!
    next=$((start + PROGRESS_EVERY))
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        now=$(date +%s)
        if [ "$now" -ge "$next" ]; then
            echo "   [$t $((now - start))s] $(status_line "$log")"
            next=$((now + PROGRESS_EVERY))
        fi
    done
    wait "$pid"
    rc=$?
    secs=$(( $(date +%s) - start ))
    execs=$(grep -a 'stat::number_of_executed_units' "$log" | tail -1 | awk '{print $2}')
    [ -z "$execs" ] && execs=$(status_line "$log" | sed -E 's/^#([0-9]+).*/\1/')
    [ -z "$execs" ] && execs=0
    corpus=$(find "$work" -type f | wc -l)
    rate=$(( secs > 0 ? execs / secs : execs ))
    if [ "$rc" -ne 0 ]; then
        failed+=("$t")
        result="CRASH (exit $rc)"
        echo "!! fuzz $t crashed (exit $rc); the report:"
        # From the first report line to the end of the log, bounded.
        first=$(grep -anE '==[0-9]+==ERROR|runtime error:|FUZZ CHECK FAILED|ERROR: libFuzzer|deadly signal|ALARM: working on the last Unit' "$log" \
            | head -1 | cut -d: -f1)
        if [ -n "$first" ]; then tail -n +"$first" "$log" | head -80; else tail -40 "$log"; fi
        grep -a 'Test unit written to' "$log" | sed 's/^/!! /'
        echo "!! reproduce: $BUILD/fuzz_$t <the input above>; minimize: $BUILD/fuzz_$t -minimize_crash=1 -runs=10000 <input>"
    else
        result="ok"
    fi
    summary+=("$(printf '%-8s %12s executions in %4ss (%6s/s), corpus %5s inputs: %s' "$t" "$execs" "$secs" "$rate" "$corpus" "$result")")
done

echo "== fuzz summary"
for s in "${summary[@]}"; do echo "   $s"; done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]}"
    exit 1
fi
echo "fuzz: all targets ran without a crash"
