# tests/query/query.mk: the query shim's tests against a real PostgreSQL 15
# (started and stopped by the script), included by the main Makefile.
.PHONY: test-query bench-query

test-query: all
	@bash tests/query/run.sh

# Timings on QUERY_BENCH_ROWS rows (default 10,000,000): hash, reconcile,
# export against PostgreSQL's COPY TO.  Not part of `make test`.
bench-query: all
	@bash tests/query/bench.sh
