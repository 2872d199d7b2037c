// gpuvpa's recommendation pass and histogram ingest, done by the Kubernetes VPA's own histogram
// code (pkg/recommender/util, copied beside this file at run time by run.sh, never into this
// repository): the same fleet as recommender_bench's BM_RecommendAll (100,000 workloads, a VRAM
// and an SM decaying histogram each, 48 half-hourly samples) and the same 8 percentiles per
// workload (VRAM p98, p50, p99, p10, p50, p98; SM p90, p99), and BM_HistogramAddSample's
// one-sample-a-second ingest.
package util

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

const gib = 1024.0 * 1024 * 1024

var start = time.Unix(1793577600, 0)

func vramOptions() HistogramOptions {
	o, err := NewExponentialHistogramOptions(1e12, 1e7, 1.05, 1e-4)
	if err != nil {
		panic(err)
	}
	return o
}

func smOptions() HistogramOptions {
	o, err := NewLinearHistogramOptions(1.0, 0.01, 1e-4)
	if err != nil {
		panic(err)
	}
	return o
}

type workload struct{ vram, sm Histogram }

func fleet(n int) []workload {
	rng := rand.New(rand.NewSource(3))
	vo, so := vramOptions(), smOptions()
	out := make([]workload, n)
	for w := range out {
		out[w] = workload{NewDecayingHistogram(vo, 24*time.Hour), NewDecayingHistogram(so, 24*time.Hour)}
		for h := 0; h < 48; h++ {
			t := start.Add(time.Duration(h) * 30 * time.Minute)
			out[w].vram.AddSample(math.Exp(math.Log(8*gib)+0.8*rng.NormFloat64()), 1, t)
			out[w].sm.AddSample(rng.Float64(), 1, t)
		}
	}
	return out
}

var sink float64

func BenchmarkRecommendAll100000(b *testing.B) {
	workloads := fleet(100000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, w := range workloads {
			for _, p := range [...]float64{0.98, 0.5, 0.99, 0.10, 0.50, 0.98} {
				sink += w.vram.Percentile(p)
			}
			sink += w.sm.Percentile(0.90) + w.sm.Percentile(0.99)
		}
	}
}

func benchmarkAddSample(b *testing.B, linear bool) {
	rng := rand.New(rand.NewSource(1))
	values := make([]float64, 1<<16)
	for i := range values {
		if linear {
			values[i] = rng.Float64()
		} else {
			values[i] = math.Exp(math.Log(8*gib) + 0.8*rng.NormFloat64())
		}
	}
	o := vramOptions()
	if linear {
		o = smOptions()
	}
	h := NewDecayingHistogram(o, 24*time.Hour)
	t := start
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.AddSample(values[i&(len(values)-1)], 1, t)
		t = t.Add(time.Second)
	}
}

func BenchmarkAddSampleVram(b *testing.B) { benchmarkAddSample(b, false) }
func BenchmarkAddSampleSm(b *testing.B)   { benchmarkAddSample(b, true) }
