#!/usr/bin/env bash
# README command (2): install dependencies, build with -Wall -Wextra -Werror, run every test.
# GPUVPA_SANITIZE=ON builds into build-asan with AddressSanitizer + UndefinedBehaviorSanitizer,
# with clang, and the libFuzzer harnesses in the same tree (test/fuzz/run.sh can run them from it
# with FUZZ_BUILD_DIR=build-asan instead of compiling the libraries a third time).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup-deps.sh --with-browser
sanitize="${GPUVPA_SANITIZE:-OFF}"
build_dir=build
bench=ON
extra=()
if [ "$sanitize" = "ON" ]; then
  build_dir=build-asan
  bench=OFF
  extra=(-DCMAKE_CXX_COMPILER=clang++ -DGPUVPA_FUZZ=ON)
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUVPA_WERROR=ON \
  -DGPUVPA_SANITIZE="$sanitize" -DGPUVPA_BUILD_BENCH="$bench" "${extra[@]}" >/dev/null
cmake --build "$build_dir" -j2
ctest --test-dir "$build_dir" --output-on-failure -j2
