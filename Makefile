# Front door: bootstraps dependencies when needed, configures and builds with CMake, runs the main job or tests.
BUILD ?= build
JOBS ?= $(shell nproc)
STAMP := third_party/.bootstrap-v2

PREFIX ?= /usr/local

# make fuzz: the libFuzzer harnesses of tests/fuzz, built with clang + ASan + UBSan in FUZZ_BUILD, each run for
# FUZZ_SECONDS (FUZZ_TARGETS: a subset, e.g. "gguf encode"). make test-san: the whole test suite built with
# ASan + UBSan in SAN_BUILD and run with the LSan suppressions of tests/lsan.supp.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
SAN_BUILD ?= build-san
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all build run test clean bootstrap asan install fuzz fuzz-build test-san web node
all: build

$(STAMP): scripts/bootstrap.sh scripts/fetch_tokenizers.sh scripts/fetch_web.sh scripts/fetch_node.sh
	bash scripts/bootstrap.sh

bootstrap: $(STAMP)

$(BUILD)/CMakeCache.txt: $(STAMP) CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# make run: the build's output goes to $(BUILD)/make-run.log (shown when the build fails), then the generated text
# and one summary line
run:
	@mkdir -p $(BUILD); log=$(BUILD)/make-run.log; \
	if [ -t 2 ]; then printf 'building (log: %s) ...' "$$log" >&2; fi; \
	if $(MAKE) --no-print-directory build > "$$log" 2>&1; then \
	  if [ -t 2 ]; then printf '\r\033[K' >&2; fi; \
	else \
	  if [ -t 2 ]; then printf '\n' >&2; fi; \
	  cat "$$log" >&2; echo "make run: the build failed (its output above, and in $$log)" >&2; exit 1; \
	fi
	@./scripts/run_main.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j 2

# the library (versioned soname), include/wgllm.h, the CLI, Dawn beside the library, pkg-config and CMake files
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

asan: $(STAMP)
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DWGLLM_ASAN=ON && cmake --build build-asan -j $(JOBS)

fuzz-build: $(STAMP)
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWGLLM_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers

fuzz: fuzz-build
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# test_install is left out: it links the installed (sanitized) library into a program built without the
# sanitizer runtime, which ASan refuses to start; it checks packaging, which the ordinary suite covers. test_web and
# test_node and test_server_node too: the wasm builds are not sanitized (the same wasm as the ordinary suite's), so
# they would only run twice. test_ops_unrobust too: test_ops again on a subset of its cases with a Dawn toggle
# (the unsanitized Dawn's concern), the same host code test_ops runs under the sanitizers whole (some 8 minutes of
# CI's 90 saved).
test-san: $(STAMP)
	cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWGLLM_ASAN=ON
	cmake --build $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && $(SAN_ENV) ctest --output-on-failure -j 2 -E '^(test_install|test_web|test_node|test_server_node|test_ops_unrobust)$$'

# make web: the browser build (wgllm.wasm, the JavaScript module and the demo page) in WEB_BUILD: web/web.mk
WEB_BUILD ?= build-web
web: $(STAMP)
	$(MAKE) --no-print-directory -f web/web.mk WEB_BUILD=$(WEB_BUILD) -j $(JOBS)

# make node: the npm package of node/ (wgllm on Node.js over npm webgpu's dawn.node): the wasm library, CLI and bench
# built in WEB_BUILD and staged with web/*.js into node/wasm and node/web; then `cd node && npm pack`
node: $(STAMP)
	$(MAKE) --no-print-directory -f web/web.mk WEB_BUILD=$(WEB_BUILD) -j $(JOBS) all programs node

clean:
	rm -rf $(BUILD) build-asan $(FUZZ_BUILD) $(SAN_BUILD) $(WEB_BUILD) node/wasm node/web
