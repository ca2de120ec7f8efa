package loadphase

import (
	"context"
	"errors"
	mathrand "math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ten := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i + 1)
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{name: "empty", sorted: nil, p: 50, want: 0},
		{name: "single sample is every percentile", sorted: []time.Duration{7}, p: 99, want: 7},
		{name: "p50 of ten is the fifth", sorted: ten, p: 50, want: 5},
		{name: "p90 of ten is the ninth", sorted: ten, p: 90, want: 9},
		{name: "p99 of ten rounds up to the largest", sorted: ten, p: 99, want: 10},
		{name: "p100 is the largest", sorted: ten, p: 100, want: 10},
		{name: "tiny p is the smallest", sorted: ten, p: 0.1, want: 1},
		{name: "p99 of a hundred", sorted: hundred, p: 99, want: 99},
		{name: "p7 of a hundred is exact despite float rounding", sorted: hundred, p: 7, want: 7},
		{name: "p50 of two is the lower", sorted: []time.Duration{1, 2}, p: 50, want: 1},
		{name: "p51 of two is the upper", sorted: []time.Duration{1, 2}, p: 51, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{name: "empty", xs: nil, want: 0},
		{name: "single", xs: []float64{4.5}, want: 4.5},
		{name: "odd count unsorted", xs: []float64{9, 1, 5}, want: 5},
		{name: "even count averages the middle two", xs: []float64{4, 1, 3, 2}, want: 2.5},
		{name: "outlier does not move it", xs: []float64{10, 11, 1000}, want: 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.xs...)
			if got := Median(tt.xs); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.xs[i] {
					t.Fatalf("Median reordered its input: %v, was %v", tt.xs, in)
				}
			}
		})
	}
}

func TestRun(t *testing.T) {
	errEven := errors.New("even")
	tests := []struct {
		name         string
		workers      int
		bound        Bound
		op           func(i int) error
		wantRequests int
		wantErrors   int
		wantTimedOut bool
	}{
		{name: "count bound, one worker", workers: 1, bound: Bound{Count: 10, Limit: time.Minute}, op: func(int) error { return nil }, wantRequests: 10},
		{name: "count bound, more workers than requests", workers: 8, bound: Bound{Count: 3, Limit: time.Minute}, op: func(int) error { return nil }, wantRequests: 3},
		{name: "failed requests count as requests and errors", workers: 4, bound: Bound{Count: 100, Limit: time.Minute},
			op: func(i int) error {
				if i%2 == 0 {
					return errEven
				}
				return nil
			}, wantRequests: 100, wantErrors: 50},
		{name: "limit reached before the count lets the started request finish", workers: 1, bound: Bound{Count: 10, Limit: 200 * time.Millisecond},
			op: func(int) error { time.Sleep(300 * time.Millisecond); return nil }, wantRequests: 1, wantTimedOut: true},
		{name: "zero limit runs nothing", workers: 4, bound: Bound{Count: 10}, op: func(int) error { return nil }, wantRequests: 0, wantTimedOut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := make([]int, max(tt.bound.Count, 1))
			r := Run(context.Background(), tt.workers, tt.bound, func(_ context.Context, _ *mathrand.Rand, i int) error {
				seen[i]++ // each index belongs to one worker, so no lock
				return tt.op(i)
			})
			if len(r.Latencies) != tt.wantRequests || r.Errors != tt.wantErrors || r.TimedOut != tt.wantTimedOut {
				t.Errorf("got %d requests, %d errors, timed out %t; want %d, %d, %t",
					len(r.Latencies), r.Errors, r.TimedOut, tt.wantRequests, tt.wantErrors, tt.wantTimedOut)
			}
			if (tt.wantErrors > 0) != (r.FirstError != nil) {
				t.Errorf("first error %v with %d errors", r.FirstError, tt.wantErrors)
			}
			if !slices.IsSorted(r.Latencies) {
				t.Errorf("latencies are not sorted: %v", r.Latencies)
			}
			for i, n := range seen[:tt.wantRequests] {
				if n != 1 {
					t.Errorf("index %d ran %d times", i, n)
				}
			}
		})
	}
}

func TestRPS(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want float64
	}{
		{name: "no time elapsed", r: Result{Latencies: make([]time.Duration, 5)}, want: 0},
		{name: "ten in two seconds", r: Result{Latencies: make([]time.Duration, 10), Elapsed: 2 * time.Second}, want: 5},
		{name: "nothing done", r: Result{Elapsed: time.Second}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.RPS(); got != tt.want {
				t.Errorf("RPS() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseLevels(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{in: "16", want: []int{16}},
		{in: "1, 4,16", want: []int{1, 4, 16}},
		{in: "", wantErr: true},
		{in: "4,", wantErr: true},
		{in: "0", wantErr: true},
		{in: "-2", wantErr: true},
		{in: "eight", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLevels(tt.in)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("ParseLevels(%q) = %v, %v; want %v, error %t", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
