#!/usr/bin/env bash
# README command (1): install dependencies, build, and run the recommender on the bundled demo
# fleet (7 days of 7 workloads; no cluster needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target gpuvpa
build/bin/gpuvpa demo-trace --out build/demo-fleet.csv
build/bin/gpuvpa recommend --trace build/demo-fleet.csv --checkpoint build/demo-fleet.ckpt "$@"
