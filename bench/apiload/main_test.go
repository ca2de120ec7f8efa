package main

import (
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
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
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
			if got := median(tt.xs); got != tt.want {
				t.Errorf("median(%v) = %v, want %v", tt.xs, got, tt.want)
			}
			for i := range in {
				if in[i] != tt.xs[i] {
					t.Fatalf("median reordered its input: %v, was %v", tt.xs, in)
				}
			}
		})
	}
}
