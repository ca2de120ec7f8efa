package etcdprogress

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	dir := t.TempDir()
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(dir, "data")
	client := url.URL{Scheme: "unix", Path: filepath.Join(dir, "c.sock")}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	peer := filepath.Join(dir, "p.sock")
	cfg.ListenPeerUrls = []url.URL{{Scheme: "unix", Host: peer}}
	cfg.AdvertisePeerUrls = []url.URL{{Scheme: "unix", Path: peer}}
	cfg.InitialCluster = cfg.Name + "=" + cfg.AdvertisePeerUrls[0].String()
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cfg.LogLevel = "fatal"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("etcd not ready")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client.String()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestLatestRevisions(t *testing.T) {
	c := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := func(key string) int64 {
		t.Helper()
		resp, err := c.Put(ctx, key, "v")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	del := func(key string) {
		t.Helper()
		if _, err := c.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	before := put("/registry/pods/ns/before")
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	tr := Start(watchCtx, c, map[string]string{"pods": "/registry/pods/", "persistentvolumes": "/registry/persistentvolumes/"})
	check := checker(t, tr)

	check("keys from before the start count; an empty prefix does not stall", map[string]int64{"pods": before, "persistentvolumes": 0})
	a := put("/registry/pods/ns/a")
	check("a pod written", map[string]int64{"pods": a, "persistentvolumes": 0})
	put("/registry/secrets/ns/s")
	check("writes elsewhere do not count", map[string]int64{"pods": a})
	pv := put("/registry/persistentvolumes/pv1")
	put("/registry/pods/ns/b")
	del("/registry/pods/ns/b")
	check("a deleted key no longer counts", map[string]int64{"pods": a, "persistentvolumes": pv})
	del("/registry/pods/ns/a")
	check("down to the keys from before the start", map[string]int64{"pods": before})
	a2 := put("/registry/pods/ns/a")
	put("/registry/pods/ns/b")
	b2 := put("/registry/pods/ns/b")
	check("rewritten keys count at their last write", map[string]int64{"pods": b2})
	del("/registry/pods/ns/b")
	check("an earlier write of a deleted key does not count", map[string]int64{"pods": a2})
	del("/registry/persistentvolumes/pv1")
	check("no keys left", map[string]int64{"persistentvolumes": 0})
}

func checker(t *testing.T, tr *Tracker) func(string, map[string]int64) {
	return func(step string, want map[string]int64) {
		t.Helper()
		waitCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		var got map[string]int64
		var err error
		// The first answer may come before the first listing.
		for got, err = tr.LatestRevisions(waitCtx); errors.Is(err, ErrUnavailable); got, err = tr.LatestRevisions(waitCtx) {
			time.Sleep(time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for name, rev := range want {
			if got[name] != rev {
				t.Errorf("%s: %s = %d, want %d (all: %v)", step, name, got[name], rev, got)
			}
		}
	}
}

func TestLatestRevisionsHonoursContext(t *testing.T) {
	c := startEtcd(t)
	watchCtx, stop := context.WithCancel(context.Background())
	defer stop()
	tr := Start(watchCtx, c, map[string]string{"pods": "/registry/pods/"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.LatestRevisions(ctx); err == nil {
		t.Error("LatestRevisions with a cancelled context succeeded")
	}
}

// faultyStore breaks the watches and listings of a real etcd on demand.
type faultyStore struct {
	*clientv3.Client
	mu        sync.Mutex
	listFails bool
	broken    chan struct{} // closed to end every open watch with a compaction error
}

func (s *faultyStore) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	s.mu.Lock()
	fails := s.listFails && key != "/"
	s.mu.Unlock()
	if fails {
		return nil, errors.New("injected listing failure")
	}
	return s.Client.Get(ctx, key, opts...)
}

func (s *faultyStore) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	real := s.Client.Watch(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		for {
			select {
			case resp, ok := <-real:
				if !ok {
					return
				}
				select {
				case out <- resp:
				case <-ctx.Done():
					return
				}
			case <-broken:
				select {
				case out <- clientv3.WatchResponse{CompactRevision: 1}:
				case <-ctx.Done():
				}
				return
			}
		}
	}()
	return out
}

// set changes the faults: whether listings fail, and, with breakWatches, ends the open watches.
func (s *faultyStore) set(listFails, breakWatches bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listFails = listFails
	if breakWatches {
		close(s.broken)
		s.broken = make(chan struct{})
	}
}

func TestTrackerRecoversFromAFailedWatch(t *testing.T) {
	backoff := restartBackoff()
	backoff.Duration, backoff.Cap = time.Millisecond, 10*time.Millisecond
	c := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store := &faultyStore{Client: c, broken: make(chan struct{})}
	tr := start(ctx, store, map[string]string{"pods": "/registry/pods/"}, backoff)
	check := checker(t, tr)
	first, err := c.Put(ctx, "/registry/pods/ns/a", "v")
	if err != nil {
		t.Fatal(err)
	}
	check("before the fault", map[string]int64{"pods": first.Header.Revision})

	store.set(true, true)
	for {
		_, err := tr.LatestRevisions(ctx)
		if errors.Is(err, ErrUnavailable) {
			break
		}
		if err != nil {
			t.Fatalf("while the watch is down: %v, want ErrUnavailable", err)
		}
		time.Sleep(time.Millisecond)
	}
	// Down, the tracker answers at once rather than making callers wait for it.
	if _, err := tr.LatestRevisions(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("while listings fail: %v, want ErrUnavailable", err)
	}
	written, err := c.Put(ctx, "/registry/pods/ns/b", "v")
	if err != nil {
		t.Fatal(err)
	}
	store.set(false, false)
	check("after recovery, writes made while down count", map[string]int64{"pods": written.Header.Revision})
	if _, err := c.Delete(ctx, "/registry/pods/ns/b"); err != nil {
		t.Fatal(err)
	}
	check("the restarted watch follows deletes", map[string]int64{"pods": first.Header.Revision})
}

// instantStore answers every listing at once, empty, and reports each watch it opens; its
// watches end with their context.
type instantStore struct{ watching chan string }

func (s instantStore) Get(context.Context, string, ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	return &clientv3.GetResponse{Header: &etcdserverpb.ResponseHeader{Revision: 1}}, nil
}

func (s instantStore) Watch(ctx context.Context, key string, _ ...clientv3.OpOption) clientv3.WatchChan {
	s.watching <- key
	ch := make(chan clientv3.WatchResponse)
	go func() {
		<-ctx.Done()
		close(ch)
	}()
	return ch
}

func (s instantStore) RequestProgress(context.Context) error { return nil }

// Followers that list before Start has set up every prefix do not race with it (the race
// detector reported Start's writes to the prefix map against a follower's).
func TestStartWithFollowersAlreadyListing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefixes := map[string]string{}
	for i := range 16 {
		prefixes[fmt.Sprintf("r%d", i)] = fmt.Sprintf("/registry/r%d/", i)
	}
	store := instantStore{watching: make(chan string)}
	Start(ctx, store, prefixes)
	for range prefixes {
		<-store.watching // the follower has listed and published its state
	}
}
