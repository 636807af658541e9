# cdcstore build.  `make` builds the library (static and shared) and the
# command into build/; `make test` runs the whole suite (unit, sanitizer and
# end-to-end tests); `make demo` runs the main job on an embedded example.
# `make deps` installs the Debian packages the build and the tests need.

PREFIX ?= /usr/local
CC ?= cc
BUILD ?= build
PKGS := rocksdb rdkafka libcjson liburing libpq libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
WARN := -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE
CFLAGS ?= -O2 -g
ALL_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -fPIC -fvisibility=hidden -Iinclude -Istore $(PKG_CFLAGS) -DCDC_BUILDING_LIBRARY
LDLIBS := $(PKG_LIBS) -lzstd -lsnappy -lpthread -lm
# The cdcstore command and the unit tests take RocksDB from Debian's static
# archive (librocksdb-dev ships it) when it is there; the shared library
# libcdcstore.so keeps -lrocksdb.  Why: inside librocksdb.so every iterator
# step and write reaches RocksDB's thread-local perf context through
# __tls_get_addr (5-7% of the samples of a Parquet export); linked into the
# executable the same access is an offset from the thread pointer.
# Measured on 10,000,000 rows, 3 runs each, interleaved (load 1.2-1.5):
#   cdcstore export --db R --table public.bench --format parquet --output F
#   shared 4.07-5.39 s, 7.23-8.74 user s; static 3.46-3.97 s, 6.14-7.12 user s.
# (cdcstore apply of the narrow bench stream: the same either way.)
# ROCKSDB_STATIC=0 links the shared library everywhere.
# test_crash runs each of its lives from a constructor, before main: linked
# statically, RocksDB's own static objects may not be built yet by then, so
# that test keeps the shared library.
ROCKSDB_STATIC ?= 1
ROCKSDB_A := $(if $(filter 1,$(ROCKSDB_STATIC)),$(wildcard $(shell pkg-config --variable=libdir rocksdb 2>/dev/null)/librocksdb.a))
EXE_LDLIBS := $(if $(ROCKSDB_A),$(patsubst -lrocksdb,$(ROCKSDB_A),$(LDLIBS)) -lsnappy -lz -lbz2 -llz4 -lzstd -lstdc++,$(LDLIBS))
# The command (not the library, which leaves the allocator to its embedder)
# links jemalloc: decoding allocates many small objects on one thread that
# the apply thread frees; glibc's malloc took about a fifth of the samples of
# `cdcstore apply` under perf, jemalloc 8.5% (the profile in bench/RESULTS.md).
# Empty under the sanitizers, which bring their own allocator.
CLI_ALLOC ?= $(shell pkg-config --libs jemalloc 2>/dev/null)
# What only the command links: libmicrohttpd serves ingest's /metrics
# (cli/metrics.c); the library stays without it.
CLI_PKGS := libmicrohttpd
CLI_LIBS := $(shell pkg-config --libs $(CLI_PKGS) 2>/dev/null)
CLI_CFLAGS := $(shell pkg-config --cflags $(CLI_PKGS) 2>/dev/null)

LIB_SRCS := $(wildcard store/*.c ingest/*.c query/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CLI_SRCS := $(wildcard cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_SRCS := $(wildcard tests/unit/*.c)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

DEB_PKGS := build-essential pkg-config librocksdb-dev librdkafka-dev libcjson-dev liburing-dev libjemalloc-dev libmicrohttpd-dev \
	libcriterion-dev libpq-dev libcurl4-openssl-dev postgresql-15 postgresql-client-15 kcat curl jq maven openjdk-17-jdk-headless \
	gnuplot-nox time python3 python3-venv clang libzstd-dev libsnappy-dev

.PHONY: all lib deps test test-unit test-asan test-install test-status test-compat test-faults test-sanflags test-export test-e2e demo pipeline-demo install clean bench

all: lib $(BUILD)/cdcstore

lib: $(BUILD)/libcdcstore.a $(BUILD)/libcdcstore.so

$(BUILD)/obj/%.o: %.c include/cdcstore.h store/internal.h $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(CLI_OBJS): ALL_CFLAGS += $(CLI_CFLAGS)

$(BUILD)/libcdcstore.a: $(LIB_OBJS)
	@mkdir -p $(BUILD)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libcdcstore.so: $(LIB_OBJS)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libcdcstore.so.0 -o $@ $^ $(LDLIBS)

$(BUILD)/cdcstore: $(CLI_OBJS) $(BUILD)/libcdcstore.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJS) $(BUILD)/libcdcstore.a $(EXE_LDLIBS) $(CLI_LIBS) $(CLI_ALLOC)

# Unit tests link the static library (internal symbols included).
$(BUILD)/tests/test_crash: EXE_LDLIBS = $(LDLIBS)
$(BUILD)/tests/%: tests/unit/%.c tests/unit/testutil.h $(BUILD)/libcdcstore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $(WARN) -std=gnu11 -Iinclude -Istore $(PKG_CFLAGS) -Iingest -o $@ $< $(BUILD)/libcdcstore.a $(EXE_LDLIBS) -lcriterion

deps:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	missing=; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; fi

# tests/unit/run.sh prints each binary's name, a progress line every 10 s
# while it runs, and its result line with the time it took.
test-unit: all $(TEST_BINS)
	@bash tests/unit/run.sh $(TEST_BINS)

test-asan:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS=-fsanitize=address,undefined CLI_ALLOC= test-unit-asan

# The sanitizer flags a user would try first, without test-asan's
# -fno-sanitize-recover, must build under -Werror too (GCC's warnings differ
# with them: a NULL vsnprintf destination was one).
test-sanflags:
	$(MAKE) BUILD=build-sanflags CFLAGS="-O1 -g -fsanitize=address,undefined" \
	  LDFLAGS=-fsanitize=address,undefined CLI_ALLOC= all

# Criterion reports a test that leaks as passed: the sanitizers' own reports
# fail the run too (tests/unit/run.sh --asan; each binary's output in
# BIN.log, its name printed before it runs).
test-unit-asan: all $(TEST_BINS)
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 CDC_TEST_QUICK=1 \
	  bash tests/unit/run.sh --asan $(TEST_BINS)

test: deps
	$(MAKE) test-unit
	$(MAKE) test-install
	$(MAKE) test-status
	$(MAKE) test-compat
	$(MAKE) test-faults
	$(MAKE) test-asan
	$(MAKE) test-sanflags
	$(MAKE) test-query
	$(MAKE) test-export
	$(MAKE) test-e2e
	$(MAKE) test-fuzz

# The install through pkg-config, then the command as a newcomer meets it
# (tests/cli/run.sh: a few seconds).
test-install: all
	@bash tests/install_test.sh
	@bash tests/cli/run.sh

# `cdcstore status` on applied fixtures, ingest's /metrics without a broker
# and during an ingest from a mock broker (tests/cli/status_metrics.sh);
# the end-to-end suite checks /metrics during an ingest on the real stack.
test-status: all $(BUILD)/tests/mock_kafka
	@BUILD=$(BUILD) bash tests/cli/status_metrics.sh

# A Kafka broker in a process of its own (librdkafka's mock cluster) for
# test-status.
$(BUILD)/tests/mock_kafka: tests/cli/mock_kafka.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) $(WARN) -std=gnu11 $(PKG_CFLAGS) -o $@ $< $(PKG_LIBS)

# Faults an operator meets: a full disk (tests/faults/*.sh, one process each).
test-faults: all
	@set -e; for t in tests/faults/*.sh; do echo "== $$t"; bash $$t; done

# A replica written by an earlier build opens and reads the same.
test-compat: all
	@bash tests/compat/run.sh

# Parquet files read back by pyarrow and DuckDB (PyPI, in .cache/test-venv;
# never part of the build).  Delta tables are read by deltalake and Spark in
# the end-to-end suite (scenario 9b); deletion vectors (query/dv.c) by both
# here: the codec's vectors in a table written by hand (dv_readers.sh), and
# tables refreshed by `export --deletion-vectors` through random histories,
# every version against the replica (dv_refresh.sh, about 3 minutes).
test-export: all
	@BUILD=$(BUILD) bash tests/export/run_parquet.sh
	@BUILD=$(BUILD) bash tests/export/export_halves.sh
	@BUILD=$(BUILD) bash tests/export/dv_readers.sh
	@BUILD=$(BUILD) bash tests/export/dv_refresh.sh

test-e2e: all
	@if [ -f tests/e2e/run.sh ]; then bash tests/e2e/run.sh; else echo "end-to-end suite not present"; fi
	@bash tests/e2e/doctor.sh

# The build runs in a make started after `deps`: the pkg-config flags are
# read when a make starts, and on a fresh machine they exist only once deps
# has installed the packages.
demo: deps
	@$(MAKE) --no-print-directory all
	@bash tests/demo.sh

# The whole pipeline locally: PostgreSQL -> Debezium -> Kafka -> cdcstore ingest.
pipeline-demo: deps
	@$(MAKE) --no-print-directory all tests/stack/changegen
	@bash tests/e2e/pipeline-demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/cdcstore.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/libcdcstore.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libcdcstore.so $(DESTDIR)$(PREFIX)/lib/libcdcstore.so.0
	ln -sf libcdcstore.so.0 $(DESTDIR)$(PREFIX)/lib/libcdcstore.so
	install -m 755 $(BUILD)/cdcstore $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|0.1.0|' cdcstore.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/cdcstore.pc

clean:
	rm -rf build build-asan build-sanflags

-include tests/stack/stack.mk
-include tests/query/query.mk
-include bench/bench.mk
-include tests/fuzz/fuzz.mk
