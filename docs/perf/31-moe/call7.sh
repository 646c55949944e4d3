#!/usr/bin/env bash
# Device call 7 of docs/perf/31-moe: call 6's runs (call6.sh) on call 6's build plus the router's top-k in the
# experts' gate/up GEMV ("_moer") and the q and k head norms in one dispatch. Carry .gl, build-pack/moe5.tar.xz (as
# call 5's) and bench/peers/llamacpp/dist.
PACK=build-pack/moe5.tar.xz bash docs/perf/31-moe/call6.sh
