#!/usr/bin/env bash
# tests/install_test.sh (make test-install): installs cdcstore into a
# temporary prefix and builds a small program against the installed copy
# through pkg-config, as an embedding user would; the program applies the
# pipeline document's events and checks the view.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/cdcinstall.XXXXXX)
trap 'rm -rf "$T"' EXIT
make -C "$ROOT" -s install PREFIX="$T/prefix" >/dev/null
export PKG_CONFIG_PATH=$T/prefix/lib/pkgconfig
cat > "$T/embed.c" <<'C'
#include <cdcstore.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    cdc_store_t *st;
    cdc_error_t e = {0};
    if (cdc_store_open(argv[1], NULL, &st, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
    cdc_apply_result_t r;
    if (cdc_store_apply_file(st, argv[2], NULL, &r, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
    cdc_iter_t *it;
    cdc_row_t row;
    if (cdc_iter_open(st, "public.orders", NULL, &it, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
    int n = 0;
    while (cdc_iter_next(it, &row, &e) == 1) {
        printf("%s", row.key_json);
        for (size_t i = 0; i < row.ncols; i++) printf(" %.*s", (int)row.lens[i], row.values[i] ? row.values[i] : "NULL");
        printf("\n");
        n++;
    }
    cdc_iter_close(it);
    cdc_store_close(st);
    (void)argc;
    return n == 3 ? 0 : 1;
}
C
for kind in shared static; do
    if [ $kind = shared ]; then
        cc -o "$T/embed-$kind" "$T/embed.c" $(pkg-config --cflags --libs cdcstore) -Wl,-rpath,"$T/prefix/lib"
    else
        cc -o "$T/embed-$kind" "$T/embed.c" $(pkg-config --cflags cdcstore) "$T/prefix/lib/libcdcstore.a" $(pkg-config --libs --static cdcstore)
    fi
    out=$("$T/embed-$kind" "$T/db-$kind" "$ROOT/tests/data/doc/events.jsonl")
    expect='{"order_id":1} 1 shipped 25.00
{"order_id":3} 3 paid 60.00
{"order_id":4} 4 paid 15.00'
    [ "$out" = "$expect" ] || { echo "install test ($kind): unexpected output:"; echo "$out"; exit 1; }
    echo "ok   install: program built against the installed $kind library through pkg-config"
done
# only the API is exported from the shared library
if nm -D --defined-only "$T/prefix/lib/libcdcstore.so.0" | awk '{print $3}' | grep -v '^cdc_' | grep -v '^_' | grep -q .; then
    echo "install test: symbols other than cdc_* are exported:"; nm -D --defined-only "$T/prefix/lib/libcdcstore.so.0" | grep -v ' cdc_'; exit 1
fi
echo "ok   install: the shared library exports only cdc_* symbols"
echo "3 passed, 0 failed"
