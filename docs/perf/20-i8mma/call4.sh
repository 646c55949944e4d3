#!/usr/bin/env bash
# Device call 4 (H200): a fresh machine, the upload's first part (carry .gl and build-pack/node.xz.00); calls 5 and 6
# follow at once on it.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
nvidia-smi -L; ls -la build-pack
