#!/usr/bin/env bash
# README command (1): install dependencies, build, and run the whole pipeline on one machine
# with no cluster:
#   1. the recommender on the bundled demo fleet (7 days of 7 workloads), charging its usage to
#      the ledger;
#   2. the planner in Report mode: the cheapest allocation per workload, proposals into the
#      ledger, owner reports into out/;
#   3. the scaler's replay of a queue-arrival trace (the nightly training jobs of
#      research/nightly-train) through KEDA/HPA scale-to-zero, its metered period into the
#      ledger;
#   4. showback per cost center from the ledger, and the demo week as FOCUS rows (focus.csv).
# Prints where the outputs are and three lines: fleet idle tax, proposed monthly savings,
# metered vs reserved for the scale-to-zero workload. Re-running is safe: the ledger ignores
# rows it already holds.
set -euo pipefail
cd "$(dirname "$0")/.."
out=out
mkdir -p build "$out"
echo "gpuvpa demo: installing dependencies (Debian packages; quiet unless something is missing)"
bash deploy/setup-deps.sh >build/demo-setup.log 2>&1 || { tail -30 build/demo-setup.log; exit 1; }
echo "gpuvpa demo: building gpuvpa and gpuvpa-scaler (log: build/demo-build.log)"
if ! { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build -j2 --target gpuvpa gpuvpa-scaler; } >build/demo-build.log 2>&1; then
  tail -40 build/demo-build.log
  echo "gpuvpa demo: the build failed (whole log: build/demo-build.log)" >&2
  exit 1
fi

# The checkpoint lives next to the ledger: the two together say what is already charged.
ledger="$out/ledger.db"
checkpoint="$out/checkpoint"
# step LOG COMMAND...: runs it with its output in LOG; on failure shows the end of LOG.
step() {
  local log="$1"
  shift
  if ! "$@" >"$log" 2>&1; then
    tail -20 "$log"
    echo "gpuvpa demo: failed: $* (output: $log)" >&2
    exit 1
  fi
}
echo "gpuvpa demo: 1/4 recommender on the demo fleet"
step build/demo-trace.log build/bin/gpuvpa demo-trace --out build/demo-fleet.csv
step "$out/recommend.txt" build/bin/gpuvpa recommend --trace build/demo-fleet.csv \
  --checkpoint "$checkpoint" --ledger "$ledger"
echo "gpuvpa demo: 2/4 planner (Report mode) and owner reports"
step "$out/plan.txt" build/bin/gpuvpa plan --checkpoint "$checkpoint" --ledger "$ledger" \
  --policy deploy/config/demo-policy.yaml \
  --report "$out" --format html,md,json,csv
echo "gpuvpa demo: 3/4 scaler replay of the nightly training queue (scale-to-zero, metered)"
step build/demo-arrivals.log build/bin/gpuvpa-scaler demo-arrivals --out build/demo-arrivals.csv
step "$out/scale-to-zero.txt" build/bin/gpuvpa-scaler replay --arrivals build/demo-arrivals.csv \
  --service-column service_seconds --target 5 --max-replicas 1 --gpu-per-replica 4 \
  --gpu-model H100-80GB --ledger "$ledger" --namespace research --scaled-object nightly-train \
  --cost-center research
echo "gpuvpa demo: 4/4 showback per cost center"
step "$out/showback.txt" build/bin/gpuvpa showback --ledger "$ledger"
step "$out/showback.csv" build/bin/gpuvpa showback --ledger "$ledger" --format csv
# The demo fleet's week (its trace starts 2026-11-02) as FOCUS rows, one per workload and day.
step "$out/focus.csv" build/bin/gpuvpa showback --ledger "$ledger" --format focus \
  --from 2026-11-02 --to 2026-11-09 --step 1d

echo
build/bin/gpuvpa showback --ledger "$ledger" --format summary | sed 's/^/  /'
echo
echo "outputs in $(pwd)/$out:"
echo "  report.html        owner report: charts, evidence and the exact change per workload"
echo "  report.md          the same for a pull request (report.json, report.csv: machine-readable)"
echo "  showback.csv       cost, idle tax, savings and metering per cost center (showback.txt: table)"
echo "  focus.csv          the demo week as FOCUS 1.2 rows (FinOps tools), one per workload and day"
echo "  ledger.db          the ledger (SQLite): build/bin/gpuvpa showback --ledger $out/ledger.db"
echo "  cost API           build/bin/gpuvpa cost-api --ledger $out/ledger.db --token-file FILE serves"
echo "                     http://127.0.0.1:9003/allocation?window=2026-11-02T00:00:00Z,2026-11-09T00:00:00Z&aggregate=namespace"
echo "  checkpoint         the recommender's histograms (gpuvpa plan --checkpoint $out/checkpoint)"
echo "  recommend.txt, plan.txt, scale-to-zero.txt: what each step printed"
