#!/usr/bin/env bash
# Device call 1 (H200): the upload's first half only (carry .gl, build-pack/node.xz.00 and build-pack/quant.tar.xz:
# llama.cpp's quantizer and its CPU libraries); call 2 follows at once on the same warm machine.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
nvidia-smi -L; ls -la build-pack
