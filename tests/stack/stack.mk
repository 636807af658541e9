# tests/stack/stack.mk: targets for the end-to-end test stack (PostgreSQL 15,
# Kafka 4.3 KRaft, Kafka Connect with Debezium 3.6.1, all as plain processes
# on loopback ports) and its change generator. Included by the top-level
# Makefile; see tests/stack/README.md.

STACK_SH := tests/stack/stack.sh

.PHONY: stack-deps stack-up stack-down stack-status

# Fetch the Java artifacts into .cache/stack-java (once; skipped when present).
stack-deps:
	@bash $(STACK_SH) deps

# Start everything and wait until it is ready (fetches the artifacts first).
stack-up:
	@bash $(STACK_SH) up

# Stop everything; nothing of the stack is left running.
stack-down:
	@bash $(STACK_SH) down

stack-status:
	@bash $(STACK_SH) status

# The change generator: its own flags, not the library's CFLAGS.
tests/stack/changegen: tests/stack/changegen.c
	$(CC) -O2 -Wall -Wextra -Werror $$(pkg-config --cflags libpq) -o $@ $< $$(pkg-config --libs libpq)
