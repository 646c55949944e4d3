#!/bin/bash
# Every pack of docs/perf/31-moe's calls 42-44 from a fresh checkout (build-pack/ is ignored by git and does not outlive
# a session): build-rel (Release, Dawn of third_party: run `make bootstrap` first), var42 (mkvars42.sh), m42 (main's
# CLI, library, test_moe, test_models, bench_kernels, stripped), fixtures (tests/data/models), models (models/), tok
# (third_party/tokenizers/gemma3, which test_moe reads). .gl's Debian packages: docs/perf/31-moe/README.md.
set -e
cd "$(dirname "$0")/../../.."
[ -f build-rel/CMakeCache.txt ] || cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build-rel -j"$(nproc)" > /tmp/mkpacks.log 2>&1 || { tail -20 /tmp/mkpacks.log; exit 1; }
bash docs/perf/31-moe/mkvars42.sh
rm -rf /tmp/m42 && mkdir -p /tmp/m42
cp build-rel/wgllm build-rel/test_moe build-rel/test_models build-rel/bench_kernels /tmp/m42/
cp -L build-rel/libwgllm.so.0 /tmp/m42/ && strip /tmp/m42/*
tar -C /tmp/m42 -cJf build-pack/m42.tar.xz .
tar -C tests/data -cJf build-pack/fixtures.tar.xz models
tar -cJf build-pack/models.tar.xz models
tar -cJf build-pack/tok.tar.xz third_party/tokenizers/gemma3
ls -la build-pack
