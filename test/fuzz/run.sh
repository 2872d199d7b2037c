#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan) into build-fuzz and runs each for
# FUZZ_SECONDS (default 60) from a copy of its checked-in seed corpus. Any crash, leak,
# sanitizer report or harness abort fails the run; the reproducer is left in build-fuzz/crashes.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${FUZZ_SECONDS:-60}"
harnesses=(trace_row allocation allocation_query checkpoint config scaled_object timestamp prometheus_response
  ledger_spool prometheus_api dcgm_exposition plan kube ledger_rpc cgroup pod_resources)
cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPUVPA_FUZZ=ON -DGPUVPA_BUILD_TESTS=OFF -DGPUVPA_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j2 --target "${harnesses[@]/%/_fuzz}"
mkdir -p build-fuzz/crashes
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
for h in "${harnesses[@]}"; do
  work="build-fuzz/corpus/$h"
  mkdir -p "$work"
  cp -n test/fuzz/corpus/"$h"/* "$work"/ 2>/dev/null || true
  echo "== fuzz $h for ${seconds}s"
  log="build-fuzz/$h.log"
  rc=0
  build-fuzz/bin/"${h}_fuzz" -max_total_time="$seconds" -print_final_stats=1 -max_len=65536 \
    -artifact_prefix="build-fuzz/crashes/${h}-" "$work" >"$log" 2>&1 || rc=$?
  grep -E "^stat::(number_of_executed_units|peak_rss_mb)" "$log" || true
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$log"
    echo "fuzz $h FAILED (exit $rc; reproducer in build-fuzz/crashes)"
    exit 1
  fi
done
