#!/usr/bin/env bash
# Device call 4 (H200): call 1 again (a fresh machine: the upload's first half; carry .gl, build-pack/node.xz.00,
# build-pack/quant.tar.xz); call 5 follows at once.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
nvidia-smi -L; ls -la build-pack
