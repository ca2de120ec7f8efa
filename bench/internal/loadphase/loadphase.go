// Package loadphase runs the phases of idplane's load tools and summarises them: workers issue
// requests until a count or a time limit is reached, and the latency of every request is kept, so
// that percentiles are exact rather than estimated from a histogram.
package loadphase

import (
	"context"
	"fmt"
	"math"
	mathrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bound says when a phase stops: after Count operations when Count > 0 (Limit then only guards
// against a server too slow to finish), otherwise after Limit.
type Bound struct {
	Count int
	Limit time.Duration
}

// Op performs the i-th request of a phase; rng belongs to the calling worker, so it needs no lock.
type Op func(ctx context.Context, rng *mathrand.Rand, i int) error

// Result is what a phase measured.
type Result struct {
	// Latencies holds the time of every operation, failed ones included, in ascending order.
	Latencies []time.Duration
	Errors    int
	// FirstError is the first error any worker saw, nil when there was none.
	FirstError error
	Elapsed    time.Duration
	// TimedOut is set when a count-bound phase hit its limit before the count.
	TimedOut bool
}

// Run runs op on workers goroutines until b is reached or ctx ends. Every index below b.Count goes
// to exactly one worker, so an op may write to a slice slot of its own without a lock. Operations
// already started when the limit passes are allowed to finish.
func Run(ctx context.Context, workers int, b Bound, op Op) Result {
	var (
		next      atomic.Int64
		firstErr  error
		errOnce   sync.Once
		wg        sync.WaitGroup
		samples   = make([][]time.Duration, workers)
		errCounts = make([]int, workers)
		seed      = uint64(time.Now().UnixNano())
	)
	begin := time.Now()
	stopAt := begin.Add(b.Limit)
	for w := range workers {
		wg.Go(func() {
			rng := mathrand.New(mathrand.NewPCG(seed, uint64(w)))
			for ctx.Err() == nil && time.Now().Before(stopAt) {
				i := int(next.Add(1) - 1)
				if b.Count > 0 && i >= b.Count {
					return
				}
				start := time.Now()
				err := op(ctx, rng, i)
				samples[w] = append(samples[w], time.Since(start))
				if err != nil {
					errCounts[w]++
					errOnce.Do(func() { firstErr = err })
				}
			}
		})
	}
	wg.Wait()
	r := Result{Latencies: slices.Concat(samples...), FirstError: firstErr, Elapsed: time.Since(begin)}
	slices.Sort(r.Latencies)
	for _, n := range errCounts {
		r.Errors += n
	}
	r.TimedOut = b.Count > 0 && len(r.Latencies) < b.Count
	return r
}

// RPS is the number of operations per second of wall time.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Latencies)) / r.Elapsed.Seconds()
}

// Percentile is the p-th percentile of the phase's latencies; see Percentile.
func (r Result) Percentile(p float64) time.Duration { return Percentile(r.Latencies, p) }

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of ascending samples: the
// smallest sample that at least p percent of all samples do not exceed.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// Multiplying first keeps integral ranks exact: 0.07*100 is slightly above 7, 7*100/100 is 7.
	rank := int(math.Ceil(p * float64(len(sorted)) / 100))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// Median returns the middle value, or the mean of the two middle values for an even count.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// ParseLevels reads a comma-separated list of concurrency levels, one phase each.
func ParseLevels(s string) ([]int, error) {
	var levels []int
	for _, field := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("concurrency %q is not a positive number", field)
		}
		levels = append(levels, n)
	}
	return levels, nil
}
