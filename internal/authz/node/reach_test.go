package node

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

type pair struct {
	node string
	key  objKey
}

// TestReachSetMatchesAMap applies random additions and withdrawals, enough to grow,
// shrink and clean every shard many times, and compares the set with a plain map of
// counts after each step.
func TestReachSetMatchesAMap(t *testing.T) {
	s := newReachSet()
	counts := map[pair]int32{}
	rng := rand.New(rand.NewPCG(7, 7))
	var universe []pair
	for i := range 3000 {
		universe = append(universe, pair{
			node: "n" + strconv.Itoa(i%17),
			key:  objKey{kind(i % int(numKinds)), "ns" + strconv.Itoa(i%5), "obj" + strconv.Itoa(i%600)},
		})
	}
	// Pairs that differ only in how the key splits, or only in kind, must not be confused.
	universe = append(universe,
		pair{"ab", objKey{kindSecret, "c", "d"}}, pair{"a", objKey{kindSecret, "bc", "d"}},
		pair{"a", objKey{kindSecret, "b", "cd"}}, pair{"a", objKey{kindConfigMap, "b", "cd"}},
	)
	check := func(step int) {
		for _, p := range universe {
			if got, want := s.has(p.node, p.key.kind, p.key.namespace, p.key.name), counts[p] > 0; got != want {
				t.Fatalf("step %d: has(%v) = %v, want %v", step, p, got, want)
			}
		}
	}
	for step := range 60_000 {
		p := universe[rng.IntN(len(universe))]
		delta := int32(1)
		if counts[p] > 0 && rng.IntN(2) == 0 {
			delta = -1
		}
		s.addLocked(p.node, p.key, delta)
		counts[p] += delta
		if step%5000 == 0 {
			check(step)
		}
	}
	for p, n := range counts {
		s.addLocked(p.node, p.key, -n)
		delete(counts, p)
	}
	check(-1)
	for i := range s.shards {
		if live := s.use[i].live; live != 0 {
			t.Errorf("shard %d: %d live slots after withdrawing everything", i, live)
		}
	}
}

func TestReachSetWithdrawingTooMuch(t *testing.T) {
	s := newReachSet()
	k := objKey{kindSecret, "ns", "s"}
	s.addLocked("n", k, -1)
	if s.has("n", kindSecret, "ns", "s") {
		t.Error("withdrawing an absent pair added it")
	}
	s.addLocked("n", k, 2)
	s.addLocked("n", k, -1)
	if !s.has("n", kindSecret, "ns", "s") {
		t.Error("pair with one path left is gone")
	}
}

// TestReachSetConcurrentReaders has readers look up pairs that are always present while a
// writer churns others, forcing rehashes; run with -race.
func TestReachSetConcurrentReaders(t *testing.T) {
	s := newReachSet()
	var stable []pair
	for i := range 500 {
		p := pair{"n" + strconv.Itoa(i%7), objKey{kindSecret, "ns", "stable" + strconv.Itoa(i)}}
		stable = append(stable, p)
		s.addLocked(p.node, p.key, 1)
	}
	var (
		stop   atomic.Bool
		wg     sync.WaitGroup
		missed atomic.Int64
	)
	for r := range 2 {
		wg.Go(func() {
			for i := r; !stop.Load(); i++ {
				p := stable[i%len(stable)]
				if !s.has(p.node, p.key.kind, p.key.namespace, p.key.name) {
					missed.Add(1)
				}
			}
		})
	}
	for i := range 20_000 {
		k := objKey{kindConfigMap, "ns", "churn" + strconv.Itoa(i%900)}
		s.addLocked("n"+strconv.Itoa(i%7), k, 1)
		if i >= 450 {
			j := i - 450
			s.addLocked("n"+strconv.Itoa(j%7), objKey{kindConfigMap, "ns", "churn" + strconv.Itoa(j%900)}, -1)
		}
	}
	stop.Store(true)
	wg.Wait()
	if n := missed.Load(); n != 0 {
		t.Errorf("readers missed present pairs %d times", n)
	}
}
