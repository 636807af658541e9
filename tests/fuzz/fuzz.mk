# libFuzzer targets (tests/fuzz/README.md), included by the Makefile.
# `make fuzz` builds the library with clang, coverage instrumentation,
# AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/, links the
# four targets with libFuzzer and runs each for FUZZ_SECONDS (default 60);
# it fails when a target crashes.  `make test-fuzz` is the step of
# `make test`: each target for 60 s.

FUZZ_CC ?= clang
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= decode kcat key apply
# Library objects: no -Werror here, the gcc builds hold the library to it
# and clang warns differently; the targets themselves build with -Werror.
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-std=gnu11 -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -Iinclude -Istore $(PKG_CFLAGS)
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

.PHONY: fuzz fuzz-build test-fuzz clean-fuzz

fuzz: fuzz-build
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_BINS)

test-fuzz:
	$(MAKE) fuzz FUZZ_SECONDS=60

$(FUZZ_BUILD)/obj/%.o: %.c include/cdcstore.h store/internal.h $(wildcard */*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -DCDC_BUILDING_LIBRARY -c $< -o $@

$(FUZZ_BUILD)/libcdcstore.a: $(FUZZ_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

# fuzz_kcat.c includes ingest/filesrc.c (its scanner is static); the
# archive's filesrc.o is then not linked.
$(FUZZ_BUILD)/fuzz_kcat: ingest/filesrc.c

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libcdcstore.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Werror -Iingest -fsanitize=fuzzer -o $@ $< $(FUZZ_BUILD)/libcdcstore.a $(LDLIBS)

clean: clean-fuzz
clean-fuzz:
	rm -rf $(FUZZ_BUILD)
