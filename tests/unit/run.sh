#!/usr/bin/env bash
# tests/unit/run.sh [--asan] BIN...: runs the Criterion test binaries one
# after another (make test-unit, make test-unit-asan), each with --jobs 2,
# and says how far it got: the binary's name and the tests it lists before it
# starts, a line every 10 s while it runs (tests done so far), and its
# result line with the time it took.  A run of the crash tests takes a
# minute, longer under the sanitizers: without these lines the stage looks
# hung.
#
# Without --asan the tests' own output (their notes, the failures) goes to
# the terminal as Criterion prints it.  With --asan it goes to BIN.log and
# is shown only when the binary fails, or when the log holds a sanitizer
# report: Criterion counts a test that leaks as passed, so the reports of
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer fail the
# run too.  Stops at the first binary that fails (exit 1).
set -uo pipefail
ASAN=0
if [[ ${1:-} == --asan ]]; then
    ASAN=1
    shift
fi
TICK=${CDC_TEST_TICK:-10}
label=""
((ASAN)) && label="(asan) "

# The lines Criterion writes for every test at --verbose: counted, not shown.
per_test='^\[(RUN |PASS|----\] Criterion v|====\] Running)'

for t in "$@"; do
    name=$(basename "$t")
    n=$("$t" --list 2>/dev/null | sed -n 's/^[^ ]*: \([0-9][0-9]*\) tests\{0,1\}$/\1/p' | awk '{s += $1} END {print s + 0}')
    # --list names a parameterised test once: more may run than it lists.
    word=tests
    ((n == 1)) && word=test
    echo "== $label$name: $n $word listed"
    log=$t.log
    start=$SECONDS
    # The binary's output, through a loop that counts the tests done and
    # prints a progress line every TICK seconds of silence.
    : >"$log"
    "$t" --jobs 2 --verbose >"$log" 2>&1 &
    pid=$!
    done_n=0 last=$SECONDS partial="" running=1 line=""
    exec 3<"$log"
    while :; do
        # A line being written is read in parts: keep them until its end.
        if IFS= read -r line <&3; then
            line=$partial$line
            partial=""
            if [[ $line =~ ^\[(PASS|FAIL)\] ]]; then done_n=$((done_n + 1)); fi
            if ((!ASAN)) && ! [[ $line =~ $per_test || $line =~ ^\[====\]\ Synthesis ]]; then
                printf '%s\n' "$line"
                last=$SECONDS
            fi
            continue
        fi
        partial+=$line
        ((running)) || break
        # Read once more after the end, for what the binary wrote last.
        kill -0 "$pid" 2>/dev/null || running=0
        if ((running && SECONDS - last >= TICK)); then
            if ((done_n <= n)); then
                echo "   ... $label$name: $done_n of $n tests done, $((SECONDS - start)) s"
            else
                echo "   ... $label$name: $done_n tests done, $((SECONDS - start)) s"
            fi
            last=$SECONDS
        fi
        ((running)) && sleep 0.2
    done
    [[ -n $partial && $ASAN == 0 ]] && printf '%s\n' "$partial"
    exec 3<&-
    wait "$pid"
    rc=$?
    result=$(grep '^\[====\] Synthesis' "$log" | tail -n 1 | sed 's/^\[====\] Synthesis: //; s/ *$//')
    echo "== $label$name: ${result:-no result line (exit status $rc)}, $((SECONDS - start)) s"
    if ((rc != 0)); then
        ((ASAN)) && grep -Ev "$per_test" "$log"
        echo "$label$name failed (exit status $rc); its output is in $log"
        exit 1
    fi
    if ((ASAN)) && grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$log"; then
        grep -E -A25 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$log" | head -80
        echo "sanitizer report in $t (the whole output: $log)"
        exit 1
    fi
done
