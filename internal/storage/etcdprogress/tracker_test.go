package etcdprogress

import (
	"context"
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
	put("/registry/pods/ns/before")
	start, err := CurrentRevision(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	tr := Start(watchCtx, c, map[string]string{"pods": "/registry/pods/", "persistentvolumes": "/registry/persistentvolumes/"}, start)

	check := func(step string, want map[string]int64) {
		t.Helper()
		waitCtx, done := context.WithTimeout(ctx, 5*time.Second)
		defer done()
		got, err := tr.LatestRevisions(waitCtx)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for name, rev := range want {
			if got[name] != rev {
				t.Errorf("%s: %s = %d, want %d (all: %v)", step, name, got[name], rev, got)
			}
		}
	}
	check("nothing written since start: idle prefixes do not stall", map[string]int64{"pods": 0, "persistentvolumes": 0})
	pod := put("/registry/pods/ns/a")
	check("a pod written", map[string]int64{"pods": pod, "persistentvolumes": 0})
	put("/registry/secrets/ns/s")
	check("writes elsewhere do not count", map[string]int64{"pods": pod, "persistentvolumes": 0})
	pv := put("/registry/persistentvolumes/pv1")
	resp, err := c.Delete(ctx, "/registry/pods/ns/a")
	if err != nil {
		t.Fatal(err)
	}
	check("a delete counts as a write", map[string]int64{"pods": resp.Header.Revision, "persistentvolumes": pv})
}

func TestLatestRevisionsHonoursContext(t *testing.T) {
	c := startEtcd(t)
	watchCtx, stop := context.WithCancel(context.Background())
	defer stop()
	tr := Start(watchCtx, c, map[string]string{"pods": "/registry/pods/"}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.LatestRevisions(ctx); err == nil {
		t.Error("LatestRevisions with a cancelled context succeeded")
	}
}
