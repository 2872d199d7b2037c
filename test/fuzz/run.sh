#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan) and runs each for FUZZ_SECONDS (default 60)
# from a copy of its checked-in seed corpus, FUZZ_JOBS (default 2) harnesses at a time. Any crash,
# leak, sanitizer report or harness abort fails the run; the reproducer is left in
# <build>/crashes. The build is build-fuzz (configured here), or FUZZ_BUILD_DIR: a tree already
# configured with GPUVPA_FUZZ=ON, such as build-asan from `GPUVPA_SANITIZE=ON test/run_tests.sh`.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-2}"
build="${FUZZ_BUILD_DIR:-build-fuzz}"
harnesses=(trace_row allocation allocation_query checkpoint config scaled_object timestamp prometheus_response
  ledger_spool prometheus_api dcgm_exposition plan kube ledger_rpc cgroup pod_resources)
if [ "$build" = build-fuzz ]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGPUVPA_FUZZ=ON -DGPUVPA_BUILD_TESTS=OFF -DGPUVPA_BUILD_BENCH=OFF >/dev/null
elif ! grep -q '^GPUVPA_FUZZ:BOOL=ON$' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "FUZZ_BUILD_DIR=$build: not a build configured with -DGPUVPA_FUZZ=ON" >&2
  exit 2
fi
cmake --build "$build" -j2 --target "${harnesses[@]/%/_fuzz}"
mkdir -p "$build/crashes"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

# fuzz_one H: runs harness H for the time given; its log is $build/H.log, its exit status the
# harness's.
fuzz_one() {
  local h="$1" work="$build/corpus/$1"
  mkdir -p "$work"
  cp -n test/fuzz/corpus/"$h"/* "$work"/ 2>/dev/null || true
  "$build/bin/${h}_fuzz" -max_total_time="$seconds" -print_final_stats=1 -max_len=65536 \
    -artifact_prefix="$build/crashes/${h}-" "$work" >"$build/$h.log" 2>&1
}
# report H RC: prints what H did; on failure its log's end, and stops the run.
report() {
  local h="$1" rc="$2"
  echo "== fuzz $h for ${seconds}s"
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$build/$h.log" || true
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$build/$h.log"
    echo "fuzz $h FAILED (exit $rc; reproducer in $build/crashes)"
    wait
    exit 1
  fi
}

declare -A running=() # pid -> harness
# reap_one: waits for one running harness and reports it.
reap_one() {
  local rc=0 done_pid
  wait -n -p done_pid || rc=$?
  report "${running[$done_pid]}" "$rc"
  unset "running[$done_pid]"
}
for h in "${harnesses[@]}"; do
  while [ "${#running[@]}" -ge "$jobs" ]; do reap_one; done
  fuzz_one "$h" &
  running[$!]="$h"
done
while [ "${#running[@]}" -gt 0 ]; do reap_one; done
