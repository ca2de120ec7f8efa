package etcdprogress

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"testing"
	"time"

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

// TestLatestRevisions: each case writes to a fresh store, then asks about prefixes a
// (/registry/a/) and b (/registry/b/), listing at most two keys of each.
func TestLatestRevisions(t *testing.T) {
	cases := []struct {
		name string
		// write writes to the store and returns the revisions the reader must report for a and b.
		write func(s *store) map[string]int64
	}{
		{"no keys", func(s *store) map[string]int64 { return map[string]int64{"a": 0, "b": 0} }},
		{"newest existing key", func(s *store) map[string]int64 {
			s.put("/registry/a/1")
			a := s.put("/registry/a/2")
			b := s.put("/registry/b/1")
			return map[string]int64{"a": a, "b": b}
		}},
		{"an update counts", func(s *store) map[string]int64 {
			s.put("/registry/a/1")
			s.put("/registry/a/2")
			return map[string]int64{"a": s.put("/registry/a/1"), "b": 0}
		}},
		{"a delete does not count", func(s *store) map[string]int64 {
			a := s.put("/registry/a/1")
			s.put("/registry/a/2")
			s.del("/registry/a/2")
			return map[string]int64{"a": a, "b": 0}
		}},
		{"other prefixes do not count", func(s *store) map[string]int64 {
			a := s.put("/registry/a/1")
			s.put("/registry/ab/1")
			s.put("/registry/c/1")
			return map[string]int64{"a": a, "b": 0}
		}},
		{"more keys than the bound: the store's revision", func(s *store) map[string]int64 {
			for i := range 3 {
				s.put(fmt.Sprintf("/registry/a/%d", i))
			}
			b := s.put("/registry/b/1")
			return map[string]int64{"a": s.put("/registry/c/1"), "b": b}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &store{t: t, c: startEtcd(t)}
			want := tc.write(s)
			r := &Reader{kv: s.c, prefixes: map[string]string{"a": "/registry/a/", "b": "/registry/b/", "c": "/registry/c/"}, limit: 2}
			current, got, err := r.LatestRevisions(context.Background(), []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, want) {
				t.Errorf("LatestRevisions = %v, want %v", got, want)
			}
			if stored := s.put("/registry/c/last") - 1; current != stored {
				t.Errorf("current revision %d, want %d", current, stored)
			}
		})
	}
}

// TestLatestRevisionsOfNoPrefix: asked about no prefix, the reader still tells the store's
// revision.
func TestLatestRevisionsOfNoPrefix(t *testing.T) {
	s := &store{t: t, c: startEtcd(t)}
	want := s.put("/registry/a/1")
	current, latest, err := NewReader(s.c, map[string]string{"a": "/registry/a/"}).LatestRevisions(context.Background(), nil)
	if err != nil || current != want || len(latest) != 0 {
		t.Errorf("LatestRevisions = %d, %v, %v; want %d, none, no error", current, latest, err, want)
	}
}

func TestLatestRevisionsFails(t *testing.T) {
	c := startEtcd(t)
	r := NewReader(c, map[string]string{"a": "/registry/a/"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := r.LatestRevisions(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("reading with the context ended: got %v, want context.Canceled", err)
	}
	if _, _, err := r.LatestRevisions(context.Background(), []string{"z"}); err == nil {
		t.Error("reading a prefix never named: no error")
	}
}

type store struct {
	t *testing.T
	c *clientv3.Client
}

func (s *store) put(key string) int64 {
	s.t.Helper()
	resp, err := s.c.Put(context.Background(), key, "v")
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.Header.Revision
}

func (s *store) del(key string) {
	s.t.Helper()
	if _, err := s.c.Delete(context.Background(), key); err != nil {
		s.t.Fatal(err)
	}
}
