#!/usr/bin/env bash
# Side by side: gpuvpa's BM_RecommendAll/100000 and BM_HistogramAddSample against the Kubernetes
# VPA's own histogram code (pkg/recommender/util) doing the same work
# (vpa_histogram_bench_test.go), interleaved, ROUNDS times each; prints the medians and ratios.
#
#   bench/vpa/run.sh AUTOSCALER [BUILD_DIR] [ROUNDS]
#
# AUTOSCALER: a kubernetes/autoscaler checkout, or its bare git directory (read at HEAD). Needs
# go (Debian's golang-go) and no network: VPA's three histogram files are copied into a
# temporary module with two small stand-ins for the types their checkpoint methods name
# (HistogramCheckpoint, metav1.Time), so nothing is downloaded.
set -euo pipefail
src=${1:?usage: run.sh AUTOSCALER [BUILD_DIR] [ROUNDS]}
build=${2:-build}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

module=$work/vpa
util=$module/pkg/recommender/util
mkdir -p "$util" "$module/pkg/apis/autoscaling.k8s.io/v1" "$work/apimachinery/pkg/apis/meta/v1"
for f in histogram.go histogram_options.go decaying_histogram.go; do
  path=vertical-pod-autoscaler/pkg/recommender/util/$f
  if [ -d "$src/.git" ] || [ -f "$src/HEAD" ]; then
    git -C "$src" show "HEAD:$path" > "$util/$f"
  else
    cp "$src/$path" "$util/$f"
  fi
done
cp "$here/vpa_histogram_bench_test.go" "$util/"
revision=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)

cat > "$module/go.mod" <<MOD
module k8s.io/autoscaler/vertical-pod-autoscaler

go 1.19

require k8s.io/apimachinery v0.0.0
replace k8s.io/apimachinery => ../apimachinery
MOD
cat > "$module/pkg/apis/autoscaling.k8s.io/v1/types.go" <<'GO'
// Stand-in for the one VPA API type the histogram's checkpoint methods use.
package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type HistogramCheckpoint struct {
	ReferenceTimestamp metav1.Time
	BucketWeights      map[int]uint32
	TotalWeight        float64
}
GO
printf 'module k8s.io/apimachinery\n\ngo 1.19\n' > "$work/apimachinery/go.mod"
cat > "$work/apimachinery/pkg/apis/meta/v1/time.go" <<'GO'
// Stand-in for metav1.Time, as the histogram's checkpoint methods use it.
package v1

import "time"

type Time struct{ time.Time }

func NewTime(t time.Time) Time { return Time{t} }
GO

export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local GOCACHE=${GOCACHE:-$work/gocache}
(cd "$module" && go test -c -o "$work/vpa.test" ./pkg/recommender/util)

ours=() theirs=()
for r in $(seq "$rounds"); do
  ours+=("$("$build/bin/recommender_bench" \
    --benchmark_filter='BM_RecommendAll/100000|BM_HistogramAddSample' --benchmark_format=csv \
    2>/dev/null | grep '^"BM_')")
  theirs+=("$("$work/vpa.test" -test.run '^$' -test.bench . -test.benchtime 2s | grep '^Benchmark')")
done

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# ns per operation from each round's output, one name at a time.
gp() { printf '%s\n' "${ours[@]}" | grep "^\"$1\"" | awk -F, '{print $3 * ($5 == "ms" ? 1e6 : ($5 == "us" ? 1e3 : 1))}' | median; }
vp() { printf '%s\n' "${theirs[@]}" | awk -v n="$1" '$1 ~ "^"n"(-[0-9]+)?$" {print $3}' | median; }

echo "VPA histogram code at kubernetes/autoscaler $revision, $(go version | cut -d' ' -f3); medians of $rounds interleaved rounds"
printf '%-40s %14s %14s %8s\n' "work" "gpuvpa ns" "VPA ns" "VPA/gpuvpa"
row() { awk -v w="$1" -v g="$2" -v v="$3" 'BEGIN {printf "%-40s %14.1f %14.1f %7.2fx\n", w, g, v, v / g}'; }
row "recommend 100,000 workloads (8 pct x 2)" "$(gp BM_RecommendAll/100000)" "$(vp BenchmarkRecommendAll100000)"
row "AddSample, VRAM exponential buckets" "$(gp BM_HistogramAddSample/0)" "$(vp BenchmarkAddSampleVram)"
row "AddSample, SM linear buckets" "$(gp BM_HistogramAddSample/1)" "$(vp BenchmarkAddSampleSm)"
