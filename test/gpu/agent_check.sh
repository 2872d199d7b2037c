#!/usr/bin/env bash
# Run ON THE GPU MACHINE (device tool; repository root; build-gpu/ carried from prepare.sh):
# starts gpuvpa-node-agent on the real NVML (labelled by pid: no kubelet there), runs known
# PyTorch workloads (workloads.py), scrapes /metrics every 0.5 s, and compares the agent's
# per-process figures with the truth. Results in $OUT (or /tmp/gpu-check): metrics scrapes,
# phases.csv, compare.txt, the agent's log.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/gpu-check}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,mig.mode.current --format=csv >"$out/gpu.csv" 2>&1
export LD_LIBRARY_PATH="$PWD/build-gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
port=19401
build-gpu/gpuvpa-node-agent --label-by pid --interval 0.25 --listen-http "127.0.0.1:$port" \
  >"$out/agent.log" 2>&1 &
agent=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -s "http://127.0.0.1:$port/readyz" >"$out/readyz.txt"
timeout 300 python3 test/gpu/workloads.py "$out" "http://127.0.0.1:$port/metrics" >"$out/workloads.log" 2>&1
rc=$?
kill "$agent" 2>/dev/null
wait "$agent" 2>/dev/null
if command -v promtool >/dev/null; then promtool check metrics <"$out/last-metrics.txt" >"$out/promtool.txt" 2>&1; fi
cat "$out/compare.txt" 2>/dev/null
exit $rc
