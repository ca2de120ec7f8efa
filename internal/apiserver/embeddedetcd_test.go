package apiserver

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The embedded member snapshots every embeddedSnapshotCount writes and keeps few raft entries:
// what was written across several snapshots must all be there after a restart.
func TestEmbeddedEtcdKeepsWritesAcrossSnapshots(t *testing.T) {
	dir := t.TempDir()
	const writes = 2*embeddedSnapshotCount + embeddedSnapshotCount/2
	ctx := context.Background()

	e, err := startEmbeddedEtcd(dir)
	if err != nil {
		t.Fatal(err)
	}
	client, err := newEtcdClient([]string{e.clientURL}, "", "", "")
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	for i := range writes {
		if _, err := client.Put(ctx, fmt.Sprintf("/test/%05d", i), fmt.Sprint(i)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	client.Close()
	e.Close()
	snaps, err := filepath.Glob(filepath.Join(dir, "etcd", "data", "member", "snap", "*.snap"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no raft snapshot after %d writes (%v): the snapshot count is not applied", writes, err)
	}

	e, err = startEmbeddedEtcd(dir)
	if err != nil {
		t.Fatalf("restarting: %v", err)
	}
	defer e.Close()
	client, err = newEtcdClient([]string{e.clientURL}, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(ctx, "/test/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != writes {
		t.Fatalf("%d keys after a restart, want %d", len(resp.Kvs), writes)
	}
	for i, kv := range resp.Kvs {
		if want := fmt.Sprint(i); string(kv.Value) != want {
			t.Fatalf("key %s = %q, want %q", kv.Key, kv.Value, want)
		}
	}
}
