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
  -DGPU_FEATURE_SUBGROUPS=WGPUFeatureName_Subgroups
WFLAGS := $(TARGET) $(SJLJ) -O2 -g0 -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
  -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_GETPID -D_WASI_EMULATED_PROCESS_CLOCKS -DWGLLM_BUILD -fvisibility=hidden $(FEATURES)
# the engine's own include paths (CMakeLists.txt's WGLLM_SRC_DIRS), the single-threaded pthread.h, Dawn's webgpu.h
INCS := -Iweb/include -Iinclude -Isrc -Isrc/gpu -Isrc/ops -Isrc/format -Isrc/tokenizer -Isrc/model -Isrc/arch \
  -Isrc/runtime -Isrc/api -Isrc/generated -Isrc/ref -Itests -I$(WEB_BUILD)/generated -Ithird_party/dawn/include -I$(WEB_BUILD)/include \
  -I$(WEB_BUILD)/pcre2

LIB_SRC := $(sort $(wildcard src/gpu/*.c src/ops/*.c src/format/*.c src/tokenizer/*.c src/model/*.c src/arch/*.c \
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
JS := $(WEB_BUILD)/wgllm.js $(WEB_BUILD)/webgpu.js $(WEB_BUILD)/wasi.js
# the demo page, and the bundled model beside it (its "the bundled model" button)
PAGE := $(WEB_BUILD)/index.html $(WEB_BUILD)/demo.js $(WEB_BUILD)/models/default.gguf $(WEB_BUILD)/wgllm.d.ts

.PHONY: all tests serve
all: $(WEB_BUILD)/wgllm.wasm $(JS) $(PAGE) $(WEB_BUILD)/wgllm-serve.wasm

# `wgllm serve` for node/lib/serve.mjs (Node's http as the transport): a program of its own beside wgllm.wasm (whose
# exports stay the public API the browser uses), the library without the browser API glue, the CLI's option
# parser and model opening (tools/cli/cli_util.c), and tools/serve/'s options, scheduler (stepped from JavaScript),
# request handler and OpenAI parsing, behind tools/serve/serve_wasm.c's exports. Not serve_http.c / serve_main.c:
# libmicrohttpd and threads are the native transport's.
SERVE_SRC := tools/cli/cli_util.c tools/serve/serve_options.c tools/serve/serve_sched.c tools/serve/serve_handler.c \
  tools/serve/serve_openai.c tools/serve/serve_wasm.c
SERVE_OBJ := $(filter-out $(O)/web/wgllm_web.o,$(LIB_OBJ)) $(patsubst %.c,$(O)/%.o,$(SERVE_SRC)) $(DEP_OBJ)
serve: $(WEB_BUILD)/wgllm-serve.wasm $(JS)
$(WEB_BUILD)/wgllm-serve.wasm: $(SERVE_OBJ) web/webgpu.imports
	$(CC_WASM) $(LDTARGET) -O2 -mexec-model=reactor -o $@ $(SERVE_OBJ) -lwasi-emulated-signal \
	  -lwasi-emulated-getpid -lwasi-emulated-process-clocks \
	  -Wl,--export=malloc -Wl,--export=free -Wl,--export-table \
	  -Wl,--allow-undefined-file=web/webgpu.imports -Wl,-z,stack-size=1048576 \
	  -Wl,--initial-memory=33554432 -Wl,--max-memory=4294967296 -Wl,--strip-debug
$(O)/tools/%.o: WFLAGS += -Itools/cli -Itools/serve

# The C test programs the browser tests run (tests/web/run.mjs), on the same objects (reactors whose main
# tests/web/cases.js calls through JSPI): the tokenizer
# tests, the chat templates' (the Jinja evaluator, whose errors unwind with setjmp/longjmp: web/sjlj.c) and the op
# conformance cases (test_ops --filter picks those that fit SwiftShader's time); tests/web/regex_spans.c measures
# PCRE2 against the browser's RegExp
TEST_PROGRAMS := test_tokenizer test_chat_template test_ops web/regex_spans
TEST_CORE := $(filter-out $(O)/web/wgllm_web.o,$(LIB_OBJ)) $(DEP_OBJ) $(O)/tests/harness.o $(O)/web/test_support.o \
  $(patsubst %.c,$(O)/%.o,$(sort $(wildcard src/ref/*.c)))
tests: $(patsubst %,$(WEB_BUILD)/tests/%.wasm,$(TEST_PROGRAMS))
$(WEB_BUILD)/tests/%.wasm: $(O)/tests/%.o $(TEST_CORE) web/webgpu.imports
	@mkdir -p $(@D)
	$(CC_WASM) $(LDTARGET) -O2 -mexec-model=reactor -o $@ $< $(TEST_CORE) -lwasi-emulated-signal -lwasi-emulated-getpid \
	  -lwasi-emulated-process-clocks -Wl,--allow-undefined-file=web/webgpu.imports -Wl,-z,stack-size=4194304 \
	  -Wl,--export=malloc -Wl,--export=free -Wl,--export-table -Wl,--export=__main_void -Wl,--export=exit \
	  -Wl,--initial-memory=33554432 -Wl,--max-memory=4294967296 -Wl,--strip-debug

# the kernel generator is a host program (as in the native build)
$(WEB_BUILD)/kernelgen: tools/kernelgen.c
	@mkdir -p $(@D)
	$(CC_HOST) -O2 -o $@ $<

KERNEL_TEMPLATES := $(sort $(wildcard kernels/*.wgsl))
$(WEB_BUILD)/generated/kernels_gen.c $(WEB_BUILD)/generated/kernel_ids.h: $(WEB_BUILD)/kernelgen $(KERNEL_TEMPLATES) \
    $(wildcard kernels/lib/*.wgsli)
	@mkdir -p $(WEB_BUILD)/generated
	$(WEB_BUILD)/kernelgen $(WEB_BUILD)/generated/kernels_gen.c $(WEB_BUILD)/generated/kernel_ids.h $(KERNEL_TEMPLATES)

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
