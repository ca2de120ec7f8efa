package serviceaccount

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// blockingStore answers each read of a key with the value the test releases that key with, and
// records the keys read in order.
type blockingStore struct {
	started chan string
	mu      sync.Mutex
	reads   []string
	release map[string]chan result
}

type result struct {
	val string
	err error
}

func newBlockingStore() *blockingStore {
	return &blockingStore{started: make(chan string), release: map[string]chan result{}}
}

func (b *blockingStore) read(_ context.Context, key string) (string, error) {
	b.mu.Lock()
	b.reads = append(b.reads, key)
	b.mu.Unlock()
	b.started <- key
	r := <-b.releaseOf(key)
	return r.val, r.err
}

// releaseOf is the channel that ends the running read of key.
func (b *blockingStore) releaseOf(key string) chan result {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.release[key] == nil {
		b.release[key] = make(chan result)
	}
	return b.release[key]
}

func (b *blockingStore) readCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.reads)
}

func wait(t *testing.T, r *sharedRead[string]) result {
	t.Helper()
	select {
	case <-r.done:
		return result{r.val, r.err}
	case <-time.After(time.Minute):
		t.Fatal("read never finished")
		return result{}
	}
}

// start joins the reads of key as get does, performing a read it leads on another goroutine, so
// that the test can tell when each call joined.
func start(s *sharedReads[string, string], key string) *sharedRead[string] {
	r, lead := s.join(key)
	if lead {
		go s.perform(key, r)
	}
	return r
}

func pending(r *sharedRead[string]) bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// TestSharedReadsNeverServeAnOlderRead: a request that arrives while a read runs is answered by
// the next read, never by the running one (which may predate a delete the request must see);
// requests arriving during one read share the next.
func TestSharedReadsNeverServeAnOlderRead(t *testing.T) {
	store := newBlockingStore()
	s := newSharedReads(store.read, time.Minute)

	first := start(s, "ns/sa")
	<-store.started
	// The account is replaced while the first read runs; these arrive after.
	second, third := start(s, "ns/sa"), start(s, "ns/sa")
	if second == first {
		t.Fatal("a request arriving during a read joined that read")
	}
	if second != third {
		t.Fatal("requests arriving during one read do not share the next")
	}
	store.releaseOf("ns/sa") <- result{val: "uid-old"}
	if got := wait(t, first); got.val != "uid-old" {
		t.Fatalf("first = %+v", got)
	}
	if !pending(second) {
		t.Fatal("a later request was answered before its own read ran")
	}
	<-store.started
	store.releaseOf("ns/sa") <- result{val: "uid-new"}
	for _, r := range []*sharedRead[string]{second, third} {
		if got := wait(t, r); got.val != "uid-new" {
			t.Fatalf("later request = %+v, want the read that started after it", got)
		}
	}
	if n := store.readCount(); n != 2 {
		t.Fatalf("%d reads, want 2", n)
	}
	s.mu.Lock()
	left := len(s.byKey)
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d keys still tracked after every read ended", left)
	}
}

// TestSharedReadsKeysAndErrors: reads of different keys run apart, an error reaches every request
// of its read, and a request whose context ends stops waiting without ending the read.
func TestSharedReadsKeysAndErrors(t *testing.T) {
	store := newBlockingStore()
	s := newSharedReads(store.read, time.Minute)

	a := start(s, "ns/a")
	if key := <-store.started; key != "ns/a" {
		t.Fatalf("read %q", key)
	}
	b := start(s, "ns/b")
	if key := <-store.started; key != "ns/b" {
		t.Fatal("a read of another key waited for ns/a's")
	}
	store.releaseOf("ns/b") <- result{val: "b"}
	if got := wait(t, b); got.val != "b" {
		t.Fatalf("b = %+v", got)
	}

	gone := errors.New("not found")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := s.get(ctx, "ns/a"); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request = %v", err)
	}
	store.releaseOf("ns/a") <- result{err: gone}
	if got := wait(t, a); !errors.Is(got.err, gone) {
		t.Fatalf("a = %+v, want the read's error", got)
	}
	// The cancelled request had queued a read; it still runs, harmlessly.
	<-store.started
	store.releaseOf("ns/a") <- result{val: "a"}

	// With no read running, a request performs its own.
	got := make(chan result, 1)
	go func() { v, err := s.get(context.Background(), "ns/c"); got <- result{v, err} }()
	if key := <-store.started; key != "ns/c" {
		t.Fatalf("read %q", key)
	}
	store.releaseOf("ns/c") <- result{val: "c"}
	if r := <-got; r.val != "c" || r.err != nil {
		t.Fatalf("c = %+v", r)
	}
}
