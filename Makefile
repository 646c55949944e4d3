# Front door: bootstraps dependencies when needed, configures and builds with CMake, runs the main job or tests.
BUILD ?= build
JOBS ?= $(shell nproc)
STAMP := third_party/.bootstrap-v2

PREFIX ?= /usr/local

.PHONY: all build run test clean bootstrap asan install
all: build

$(STAMP): scripts/bootstrap.sh scripts/fetch_tokenizers.sh
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

clean:
	rm -rf $(BUILD) build-asan
