#!/usr/bin/env bash
# The main job `make run` runs: text generated on the GPU from the bundled default model (a 3.7M-parameter Llama
# trained on the King James Bible, see tools/train_default/README.md) with a fixed seed, then one summary line on
# stderr (tokens, times, why it stopped, the GPU). Nothing else: the build's output is in BUILD/make-run.log.
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
exec "$BUILD/wgllm" run -m "$ROOT/models/default" -p "In the beginning" -n 120 --seed 1 --stats
