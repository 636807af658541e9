# Benchmarks (issue 5), included by the main Makefile.
#   make bench                      the whole run: writes bench/RESULTS.md and bench/throughput.png
#   BENCH_EVENTS=100000 BENCH_KEYS=10000 make bench     a quick run
#   make bench-tools                only the two limit programs (decode_only, rocksdb_raw), the
#                                   producer of the Kafka backlog step (produce) and the query
#                                   step's read floor (scan_only)
# bench/run.sh builds cdcstore itself only through `make all` and reports it missing if that fails.

BENCH_OUT ?= bench/out
BENCH_CFLAGS ?= -O2 -g -Wall -Wextra -std=gnu11
# The limits use the allocator the cdcstore command links (see CLI_ALLOC in the Makefile), so that
# the ratios compare the work done, not two mallocs.
BENCH_ALLOC ?= $(shell pkg-config --libs jemalloc 2>/dev/null)

.PHONY: bench bench-tools

bench:
	bash bench/run.sh

bench-tools: $(BENCH_OUT)/bin/decode_only $(BENCH_OUT)/bin/rocksdb_raw $(BENCH_OUT)/bin/produce \
             $(BENCH_OUT)/bin/scan_only

$(BENCH_OUT)/bin/decode_only: bench/decode_only.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $$(pkg-config --cflags --libs libcjson 2>/dev/null || echo -lcjson) -lpthread -lm $(BENCH_ALLOC)

$(BENCH_OUT)/bin/rocksdb_raw: bench/rocksdb_raw.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $$(pkg-config --cflags --libs rocksdb 2>/dev/null || echo -lrocksdb) $(BENCH_ALLOC)

# The events file into a Kafka topic, for the backlog step (bench/backlog.sh).
$(BENCH_OUT)/bin/produce: bench/produce.c
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -o $@ $< $$(pkg-config --cflags --libs rdkafka libcjson 2>/dev/null || echo -lrdkafka -lcjson)

# The read floor of an export (tests/query/bench.sh): linked as the cdcstore command is, RocksDB
# and allocator included, so that it reads as fast as an export can.
$(BENCH_OUT)/bin/scan_only: bench/scan_only.c $(BUILD)/libcdcstore.a
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -Iinclude -o $@ $< $(BUILD)/libcdcstore.a $(EXE_LDLIBS) -lpthread $(CLI_ALLOC)
