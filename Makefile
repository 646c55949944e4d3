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

run: build
	./scripts/run_main.sh $(BUILD)

test: build
	cd $(BUILD) && ctest --output-on-failure -j 2

# the library (versioned soname), include/wgllm.h, the CLI, Dawn beside the library, pkg-config and CMake files
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

asan: $(STAMP)
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DWGLLM_ASAN=ON && cmake --build build-asan -j $(JOBS)

clean:
	rm -rf $(BUILD) build-asan
