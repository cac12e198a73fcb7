#!/usr/bin/env bash
# Builds attograd and runs the main program: the attention demo (the d2l toy
# example end to end). Installs missing Debian packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh tests
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTOGRAD_BUILD_VIEWER=OFF
cmake --build build -j "$(nproc)" --target attention_demo
build/attention_demo
