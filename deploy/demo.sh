#!/usr/bin/env bash
# README command (1): install dependencies, build, run the recommender on the bundled demo fleet
# (7 days of 7 workloads; no cluster needed), charge its usage to a local ledger, plan the
# cheapest allocation per workload (proposals into the ledger, owner reports into out/) and print
# the showback per cost center. Re-running is safe: the ledger ignores rows it already holds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target gpuvpa
build/bin/gpuvpa demo-trace --out build/demo-fleet.csv
build/bin/gpuvpa recommend --trace build/demo-fleet.csv --checkpoint build/demo.ckpt \
  --ledger build/demo-ledger.db "$@"
echo
build/bin/gpuvpa plan --checkpoint build/demo.ckpt --ledger build/demo-ledger.db --report out
echo
build/bin/gpuvpa showback --ledger build/demo-ledger.db
echo
echo "owner report (open in a browser): $(pwd)/out/report.html"
