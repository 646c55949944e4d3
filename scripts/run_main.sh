#!/usr/bin/env bash
# The main job `make run` runs: the GPU report, then text generated on the GPU from the bundled default model
# (a 3.7M-parameter Llama trained on the King James Bible, see tools/train_default/README.md) with a fixed seed.
set -euo pipefail
BUILD="${1:-build}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$BUILD/wgllm" info --gpu | sed -n 1,5p
echo
"$BUILD/wgllm" run -m "$ROOT/models/default" -p "In the beginning" -n 120 --seed 1 --stats
