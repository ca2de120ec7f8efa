package apiserver

import (
	"errors"
	"slices"
	"testing"
)

// assemble runs steps the way start does: each pushes the cleanup of every part it opens, and
// the first that fails unwinds the stack at once; a successful assembly unwinds at shutdown.
func assemble(steps []fakeStep, closed *[]string) (shutdown func(), err error) {
	var closers closerStack
	defer func() {
		if err != nil {
			closers.unwind()
		}
	}()
	for _, s := range steps {
		for _, part := range s.opens {
			closers.push(func() { *closed = append(*closed, part) })
		}
		if s.fails {
			return nil, errors.New("step failed")
		}
	}
	return closers.unwind, nil
}

// fakeStep opens its parts, in order, and then fails or not.
type fakeStep struct {
	opens []string
	fails bool
}

func TestCloserStackUnwindsWhatWasOpenedNewestFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []fakeStep
		// wantClosed is what a failed assembly closes at once, or a successful one at shutdown.
		wantClosed []string
	}{{
		name:  "the first step fails: nothing was opened",
		steps: []fakeStep{{fails: true}, {opens: []string{"never"}}},
	}, {
		name: "a step fails halfway: what the steps before it opened closes, newest first",
		steps: []fakeStep{
			{opens: []string{"etcd"}},
			{},
			{opens: []string{"graph etcd client", "graph progress"}},
			{fails: true},
			{opens: []string{"never"}},
		},
		wantClosed: []string{"graph progress", "graph etcd client", "etcd"},
	}, {
		name: "a step fails after opening part of its own: that part closes first",
		steps: []fakeStep{
			{opens: []string{"etcd"}},
			{opens: []string{"graph etcd client", "graph progress"}, fails: true},
			{opens: []string{"never"}},
		},
		wantClosed: []string{"graph progress", "graph etcd client", "etcd"},
	}, {
		name:       "no step fails: nothing closes before shutdown, then everything, newest first",
		steps:      []fakeStep{{opens: []string{"etcd"}}, {}, {opens: []string{"graph etcd client", "graph progress"}}},
		wantClosed: []string{"graph progress", "graph etcd client", "etcd"},
	}, {
		name:  "nothing opened, no step fails: shutdown closes nothing",
		steps: []fakeStep{{}, {}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var closed []string
			shutdown, err := assemble(tc.steps, &closed)
			failed := slices.ContainsFunc(tc.steps, func(s fakeStep) bool { return s.fails })
			if (err != nil) != failed {
				t.Fatalf("assembly error %v, want one: %t", err, failed)
			}
			if !failed {
				if len(closed) != 0 {
					t.Fatalf("closed %q while the server runs", closed)
				}
				shutdown()
			}
			if !slices.Equal(closed, tc.wantClosed) {
				t.Errorf("closed %q, want %q", closed, tc.wantClosed)
			}
			if !failed {
				shutdown()
				if !slices.Equal(closed, tc.wantClosed) {
					t.Errorf("a second unwind closed more: %q, want %q", closed, tc.wantClosed)
				}
			}
		})
	}
}
