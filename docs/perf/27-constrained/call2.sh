#!/usr/bin/env bash
# Device call 2 (H200) of docs/perf/27-constrained: call 1 again (call1.sh, the same runs) on a build after the guard
# became one bounded walk (4a1529c) and the forward pass went ahead of the mask (96ee84d). Carry .gl,
# third_party/tokenizers/llama3 and build-pack/constrained2.tar.xz (the stripped build-dev call1.sh lists, at 96ee84d).
PACK=build-pack/constrained2.tar.xz exec bash "$(dirname "$0")/call1.sh"
