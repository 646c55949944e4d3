#!/usr/bin/env bash
# The main job `make run` runs: generation from the bundled default model once it exists; until then the
# GPU report.
set -euo pipefail
BUILD="${1:-build}"
exec "$BUILD/wgllm" info --gpu
