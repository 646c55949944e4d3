# The browser build (make web): libwgllm's own sources, cJSON and PCRE2 (Debian's source packages, fetched by
# scripts/fetch_web.sh) compiled with clang --target=wasm32-wasi against wasi-libc and linked by lld into
# $(WEB_BUILD)/wgllm.wasm, next to the JavaScript that runs it (web/*.js copied as they are). The wasm imports
# exactly the webgpu.h functions the engine calls (module "env", listed in web/webgpu.imports: anything else
# undefined fails the link; web/webgpu.js defines them), WASI's calls (web/wasi.js) and web/wgllm_web.c's host calls
# (module "wgllm_host", web/wgllm.js), and exports the public API (include/wgllm.h), the glue of web/wgllm_web.c,
# malloc and free. Run from the repository root (make web does): make -f web/web.mk WEB_BUILD=build-web -j 2
WEB_BUILD ?= build-web
CC_WASM ?= clang
CC_HOST ?= cc
TP := third_party/web/src
O := $(WEB_BUILD)/obj

# wasi-libc's headers and libraries only (not the host's /usr/include beside them)
TARGET := --target=wasm32-wasi -nostdlibinc -isystem /usr/include/wasm32-wasi
LDTARGET := --target=wasm32-wasi -L/usr/lib/wasm32-wasi
# setjmp/longjmp (the Jinja evaluator's error unwinding) on WebAssembly exceptions: web/include/setjmp.h, web/sjlj.c
SJLJ := -mexception-handling -mllvm -wasm-enable-sjlj
# src/gpu/gpu.h's feature values are native Dawn's numbering; web/webgpu.js follows the header's
FEATURES := -DGPU_FEATURE_TIMESTAMP_QUERY=WGPUFeatureName_TimestampQuery -DGPU_FEATURE_SHADER_F16=WGPUFeatureName_ShaderF16 \
  -DGPU_FEATURE_SUBGROUPS=WGPUFeatureName_Subgroups '-DGPU_FEATURE_SUBGROUP_MATRIX=((WGPUFeatureName)0x50037)'
WFLAGS := $(TARGET) $(SJLJ) -O2 -g0 -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
  -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_GETPID -D_WASI_EMULATED_PROCESS_CLOCKS -DWGLLM_BUILD -fvisibility=hidden $(FEATURES)
# the engine's own include paths (CMakeLists.txt's WGLLM_SRC_DIRS), the single-threaded pthread.h, Dawn's webgpu.h
INCS := -Iweb/include -Iinclude -Isrc -Isrc/base -Isrc/gpu -Isrc/ops -Isrc/format -Isrc/tokenizer -Isrc/grammar -Isrc/chat -Isrc/model -Isrc/arch \
  -Isrc/runtime -Isrc/api -Isrc/generated -Isrc/ref -Itests -Itools/common -Itools/cli -I$(WEB_BUILD)/generated -Ithird_party/dawn/include -I$(WEB_BUILD)/include \
  -I$(WEB_BUILD)/pcre2

LIB_SRC := $(sort $(wildcard src/base/*.c src/gpu/*.c src/ops/*.c src/format/*.c src/tokenizer/*.c src/grammar/*.c src/chat/*.c src/model/*.c src/arch/*.c \
  src/runtime/*.c src/api/*.c))
# the browser's seams: file access (src/format/mapped_file.c's mmap replaced by reads through WASI, which web/wasi.js
# serves from File objects, URLs or ArrayBuffers) and the API glue
LIB_SRC := $(filter-out src/format/mapped_file.c,$(LIB_SRC)) web/mapped_file_web.c web/wgllm_web.c web/sjlj.c
PCRE2_SRC := $(addprefix $(TP)/pcre2/src/,pcre2_auto_possess.c pcre2_compile.c pcre2_config.c pcre2_context.c \
  pcre2_convert.c pcre2_dfa_match.c pcre2_error.c pcre2_extuni.c pcre2_find_bracket.c pcre2_jit_compile.c \
  pcre2_maketables.c pcre2_match.c pcre2_match_data.c pcre2_newline.c pcre2_ord2utf.c pcre2_pattern_info.c \
  pcre2_script_run.c pcre2_serialize.c pcre2_string_utils.c pcre2_study.c pcre2_substitute.c pcre2_substring.c \
  pcre2_tables.c pcre2_ucd.c pcre2_valid_utf.c pcre2_xclass.c)
# Debian's build options (debian/rules: Unicode, 8-bit), without the JIT (no machine code in wasm)
PCRE2_FLAGS := -DHAVE_CONFIG_H -DPCRE2_CODE_UNIT_WIDTH=8 -DSUPPORT_UNICODE -DHAVE_STDINT_H -DHAVE_INTTYPES_H \
  -DHAVE_STRING_H -DHAVE_STDLIB_H -DHAVE_MEMMOVE -DHAVE_STRERROR -DPCRE2_STATIC -I$(WEB_BUILD)/pcre2 \
  -I$(TP)/pcre2/src

LIB_OBJ := $(patsubst %.c,$(O)/%.o,$(LIB_SRC)) $(O)/generated/kernels_gen.o
DEP_OBJ := $(O)/cjson/cJSON.o $(patsubst $(TP)/pcre2/src/%.c,$(O)/pcre2/%.o,$(PCRE2_SRC)) $(O)/pcre2/pcre2_chartables.o
# the developer code (src/dev/: synthetic models, the GGUF writer) for wgllm-bench.wasm and the test programs only;
# only they see its headers
DEV_OBJ := $(patsubst %.c,$(O)/%.o,$(sort $(wildcard src/dev/*.c))) $(O)/generated/kernels_dev_gen.o
$(O)/src/dev/%.o $(O)/bench/%.o $(O)/tests/%.o $(O)/generated/kernels_dev_gen.o: WFLAGS += -Isrc/dev
JS := $(WEB_BUILD)/wgllm.js $(WEB_BUILD)/webgpu.js $(WEB_BUILD)/wasi.js
# the demo page, and the bundled model beside it (its "the bundled model" button)
PAGE := $(WEB_BUILD)/index.html $(WEB_BUILD)/demo.js $(WEB_BUILD)/models/default.gguf $(WEB_BUILD)/wgllm.d.ts

.PHONY: all tests programs node
all: $(WEB_BUILD)/wgllm.wasm $(JS) $(PAGE)

# Every wasm program links the engine's objects (without the API glue of wgllm.wasm), cJSON, PCRE2 and
# web/wasm_cwd.c (the working directory from the host's environment), as a reactor whose main the host calls
# through JSPI (node/lib/runner.mjs, tests/web/cases.js): the exports and limits below
PROG_CORE := $(filter-out $(O)/web/wgllm_web.o,$(LIB_OBJ)) $(DEP_OBJ) $(O)/web/wasm_cwd.o
PROG_LINK := -O2 -mexec-model=reactor -lwasi-emulated-signal -lwasi-emulated-getpid -lwasi-emulated-process-clocks \
  -Wl,--allow-undefined-file=web/webgpu.imports -Wl,-z,stack-size=4194304 -Wl,--export=malloc -Wl,--export=free \
  -Wl,--export-table -Wl,--export=__main_void -Wl,--export=exit -Wl,--initial-memory=33554432 \
  -Wl,--max-memory=4294967296 -Wl,--strip-debug

# The native CLI (tools/cli, `wgllm run ...`) and bench (bench/wgllm_bench.c, `wgllm bench ...`) from the same sources,
# for Node.js (node/, make -f web/web.mk node): the CLI's seams are web/cli_web.c (bench runs wgllm-bench.wasm through
# the host; serve is the npm package's) in place of tools/cli/cli_bench.c (exec) and tools/serve/ (libmicrohttpd)
# (tools/common/: the option parser, opening a model, progress lines, files, shared with bench and serve)
TOOLS_COMMON_SRC := $(sort $(wildcard tools/common/*.c))
CLI_SRC := $(filter-out tools/cli/cli_bench.c,$(sort $(wildcard tools/cli/*.c))) $(TOOLS_COMMON_SRC) web/cli_web.c
$(O)/web/cli_web.o $(O)/tools/cli/main.o: WFLAGS += -Itools/serve
programs: $(WEB_BUILD)/wgllm-cli.wasm $(WEB_BUILD)/wgllm-bench.wasm $(WEB_BUILD)/wgllm-serve.wasm
$(WEB_BUILD)/wgllm-cli.wasm: $(patsubst %.c,$(O)/%.o,$(CLI_SRC)) $(PROG_CORE) web/webgpu.imports
	$(CC_WASM) $(LDTARGET) -o $@ $(patsubst %.c,$(O)/%.o,$(CLI_SRC)) $(PROG_CORE) $(PROG_LINK)
BENCH_OBJ := $(O)/bench/wgllm_bench.o $(O)/tools/common/cli_options.o $(O)/tools/common/cli_progress.o $(DEV_OBJ)
$(WEB_BUILD)/wgllm-bench.wasm: $(BENCH_OBJ) $(PROG_CORE) web/webgpu.imports
	$(CC_WASM) $(LDTARGET) -o $@ $(BENCH_OBJ) $(PROG_CORE) $(PROG_LINK)

# `wgllm serve` for node/lib/serve.mjs (Node's http as the transport): the option parser and model opening of
# tools/common/ and tools/serve/'s options, scheduler (stepped from JavaScript's event loop, no thread),
# request handler and OpenAI parsing behind tools/serve/serve_wasm.c's exports; not serve_http.c / serve_main.c
# (libmicrohttpd and threads: the native transport). A reactor without main: JavaScript calls the exports.
SERVE_SRC := $(TOOLS_COMMON_SRC) tools/serve/serve_options.c tools/serve/serve_sched.c tools/serve/serve_handler.c \
  tools/serve/serve_openai.c tools/serve/serve_embed.c tools/serve/serve_wasm.c
SERVE_NO_MAIN := -Wl,--export=__main_void -Wl,--export=exit
$(O)/tools/serve/%.o: WFLAGS += -Itools/serve
$(WEB_BUILD)/wgllm-serve.wasm: $(patsubst %.c,$(O)/%.o,$(SERVE_SRC)) $(PROG_CORE) web/webgpu.imports
	$(CC_WASM) $(LDTARGET) -o $@ $(patsubst %.c,$(O)/%.o,$(SERVE_SRC)) $(PROG_CORE) \
	  $(filter-out $(SERVE_NO_MAIN),$(PROG_LINK))

# The npm package (node/package.json): the wasm programs, wgllm.wasm and web/*.js staged into node/wasm and node/web
# (ignored by git), from where `npm pack` in node/ takes them
NODE_WASM := wgllm.wasm wgllm-cli.wasm wgllm-bench.wasm wgllm-serve.wasm
NODE_JS := wgllm.js webgpu.js wasi.js wgllm.d.ts
node: $(addprefix node/wasm/,$(NODE_WASM)) $(addprefix node/web/,$(NODE_JS))
node/wasm/%.wasm: $(WEB_BUILD)/%.wasm
	@mkdir -p $(@D)
	cp $< $@
node/web/%: web/%
	@mkdir -p $(@D)
	cp $< $@

# The C test programs the browser tests run (tests/web/run.mjs), on the same objects (reactors whose main
# tests/web/cases.js calls through JSPI): the tokenizer
# tests, the chat templates' (the Jinja evaluator, whose errors unwind with setjmp/longjmp: web/sjlj.c) and the op
# conformance cases (test_ops --filter picks those that fit SwiftShader's time); tests/web/regex_spans.c measures
# PCRE2 against the browser's RegExp
TEST_PROGRAMS := test_tokenizer test_chat_template test_ops web/regex_spans
TEST_CORE := $(PROG_CORE) $(DEV_OBJ) $(O)/tests/harness.o $(O)/web/test_support.o $(patsubst %.c,$(O)/%.o,$(sort $(wildcard src/ref/*.c)))
tests: $(patsubst %,$(WEB_BUILD)/tests/%.wasm,$(TEST_PROGRAMS))
$(WEB_BUILD)/tests/%.wasm: $(O)/tests/%.o $(TEST_CORE) web/webgpu.imports
	@mkdir -p $(@D)
	$(CC_WASM) $(LDTARGET) -o $@ $< $(TEST_CORE) $(PROG_LINK)

# the kernel generator is a host program (as in the native build)
$(WEB_BUILD)/kernelgen: tools/kernelgen.c
	@mkdir -p $(@D)
	$(CC_HOST) -O2 -o $@ $<

KERNEL_TEMPLATES := $(sort $(wildcard kernels/*.wgsl))
# (the dev=1 variants into kernels_dev_gen.c, for the developer objects only: DEV_OBJ)
$(WEB_BUILD)/generated/kernels_gen.c $(WEB_BUILD)/generated/kernel_ids.h $(WEB_BUILD)/generated/kernels_dev_gen.c: \
    $(WEB_BUILD)/kernelgen $(KERNEL_TEMPLATES) $(wildcard kernels/lib/*.wgsli)
	@mkdir -p $(WEB_BUILD)/generated
	$(WEB_BUILD)/kernelgen $(WEB_BUILD)/generated/kernels_gen.c $(WEB_BUILD)/generated/kernel_ids.h \
	  $(WEB_BUILD)/generated/kernels_dev_gen.c $(KERNEL_TEMPLATES)

$(WEB_BUILD)/pcre2/pcre2.h: $(TP)/pcre2/src/pcre2.h.generic
	@mkdir -p $(@D)
	cp $< $@
$(WEB_BUILD)/pcre2/config.h: $(TP)/pcre2/src/config.h.generic
	@mkdir -p $(@D)
	cp $< $@
$(WEB_BUILD)/pcre2/pcre2_chartables.c: $(TP)/pcre2/src/pcre2_chartables.c.dist
	@mkdir -p $(@D)
	cp $< $@
PCRE2_HDRS := $(WEB_BUILD)/pcre2/pcre2.h $(WEB_BUILD)/pcre2/config.h $(WEB_BUILD)/include/cjson/cJSON.h
# the engine includes <cjson/cJSON.h>, as Debian installs it
$(WEB_BUILD)/include/cjson/cJSON.h: $(TP)/cjson/cJSON.h
	@mkdir -p $(@D)
	cp $< $@

$(O)/%.o: %.c $(WEB_BUILD)/generated/kernel_ids.h $(PCRE2_HDRS)
	@mkdir -p $(@D)
	$(CC_WASM) $(WFLAGS) $(INCS) -DPCRE2_STATIC -MMD -c $< -o $@
$(O)/generated/kernels_gen.o: $(WEB_BUILD)/generated/kernels_gen.c
	@mkdir -p $(@D)
	$(CC_WASM) $(WFLAGS) $(INCS) -c $< -o $@
$(O)/generated/kernels_dev_gen.o: $(WEB_BUILD)/generated/kernels_dev_gen.c
	@mkdir -p $(@D)
	$(CC_WASM) $(WFLAGS) $(INCS) -c $< -o $@
$(O)/cjson/cJSON.o: $(TP)/cjson/cJSON.c
	@mkdir -p $(@D)
	$(CC_WASM) $(TARGET) -O2 -std=c89 -fvisibility=hidden -c $< -o $@
$(O)/pcre2/%.o: $(TP)/pcre2/src/%.c $(PCRE2_HDRS)
	@mkdir -p $(@D)
	$(CC_WASM) $(TARGET) -O2 -fvisibility=hidden $(PCRE2_FLAGS) -c $< -o $@
$(O)/pcre2/pcre2_chartables.o: $(WEB_BUILD)/pcre2/pcre2_chartables.c $(PCRE2_HDRS)
	@mkdir -p $(@D)
	$(CC_WASM) $(TARGET) -O2 -fvisibility=hidden $(PCRE2_FLAGS) -c $< -o $@

# exports: every WGLLM_API function (default visibility) and the glue's; imports: web/webgpu.imports (module "webgpu")
# and WASI. The stack is 1 MiB (the engine keeps GPU_ERR_LEN messages and small tables on it).
$(WEB_BUILD)/wgllm.wasm: $(LIB_OBJ) $(DEP_OBJ) web/webgpu.imports
	$(CC_WASM) $(LDTARGET) -O2 -mexec-model=reactor -o $@ $(LIB_OBJ) $(DEP_OBJ) -lwasi-emulated-signal \
	  -Wl,--no-entry -Wl,--export-dynamic -Wl,--export=malloc -Wl,--export=free -Wl,--export-table \
	  -Wl,--allow-undefined-file=web/webgpu.imports -Wl,-z,stack-size=1048576 \
	  -Wl,--initial-memory=33554432 -Wl,--max-memory=4294967296 -Wl,--strip-debug

$(WEB_BUILD)/%.js: web/%.js
	@mkdir -p $(@D)
	cp $< $@
$(WEB_BUILD)/wgllm.d.ts: web/wgllm.d.ts
	@mkdir -p $(@D)
	cp $< $@
$(WEB_BUILD)/index.html: web/index.html
	@mkdir -p $(@D)
	cp $< $@
$(WEB_BUILD)/models/default.gguf: models/default.gguf
	@mkdir -p $(@D)
	cp $< $@

-include $(shell find $(O) -name '*.d' 2>/dev/null)
