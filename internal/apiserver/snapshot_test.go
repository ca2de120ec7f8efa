package apiserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idplane/idplane/internal/pki"
	"github.com/idplane/idplane/internal/snapshot"
)

// TestScheduledSnapshotsOnTheLeaderOnly: of two replicas on one etcd, both configured to take
// snapshots every second, only the one holding the controllers' lease does, and its archives
// restore.
func TestScheduledSnapshotsOnTheLeaderOnly(t *testing.T) {
	etcdURL := startSharedEtcd(t)
	withSnapshots := func(o *Options) {
		replicaOptions(etcdURL)(o)
		o.Snapshots.Schedule = "1s"
	}
	first := startTestServer(t, t.TempDir(), withSnapshots)
	second := startTestServer(t, t.TempDir(), withSnapshots)
	leader, others := waitLeader(t, first, second)
	leaderDir := filepath.Join(leader.dataDir, "snapshots")
	var archives []string
	eventually(t, "the leader has taken two scheduled snapshots", func() error {
		var err error
		if archives, err = snapshot.Archives(leaderDir); err != nil || len(archives) < 2 {
			return fmt.Errorf("archives in %s: %v (%v)", leaderDir, archives, err)
		}
		return nil
	})
	for _, r := range others {
		if got, _ := snapshot.Archives(filepath.Join(r.dataDir, "snapshots")); len(got) != 0 {
			t.Errorf("a replica that does not lead took snapshots: %v", got)
		}
	}
	if _, err := RestoreSnapshot(filepath.Join(leaderDir, archives[0]), filepath.Join(t.TempDir(), "restored")); err != nil {
		t.Errorf("restoring a scheduled snapshot: %v", err)
	}
}

// TestSnapshotSaveFindsTheEmbeddedEtcd: `snapshot save` reaches the embedded etcd from the data
// directory alone, also when the directory's path is too long for a socket and the socket lives
// elsewhere, and says what is wrong when no server runs there.
func TestSnapshotSaveFindsTheEmbeddedEtcd(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"short path", func(t *testing.T) string { return t.TempDir() }},
		{"long path", func(t *testing.T) string {
			return filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := tc.dir(t)
			if err := pki.WriteFile(filepath.Join(dataDir, "pki", "ca.key"), []byte("key"), 0o600); err != nil {
				t.Fatal(err)
			}
			etcd, err := startEmbeddedEtcd(dataDir)
			if err != nil {
				t.Fatal(err)
			}
			o := SnapshotSaveOptions{DataDir: dataDir, Path: filepath.Join(t.TempDir(), "s.tar")}
			if _, err := SaveSnapshot(context.Background(), o); err != nil {
				t.Errorf("snapshot save: %v", err)
			}
			etcd.Close()
			o.Path = filepath.Join(t.TempDir(), "stopped.tar")
			_, err = SaveSnapshot(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), "is `idplane server --data-dir "+dataDir+"` running?") {
				t.Errorf("snapshot save with no server: %v", err)
			}
		})
	}
}

// TestScheduledSnapshotFailuresKeepTheServer: scheduled snapshots into a directory that cannot
// exist fail, each failure is counted on /metrics, and the server goes on serving.
func TestScheduledSnapshotFailuresKeepTheServer(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startTestServer(t, filepath.Join(dir, "data"), func(o *Options) {
		o.Snapshots.Schedule = "1s"
		o.Snapshots.Dir = filepath.Join(blocker, "snapshots")
	})
	eventually(t, "two scheduled snapshots failed and were counted", func() error {
		v, _ := scrapeMetrics(t, s)("idplane_snapshot_scheduled_total", map[string]string{"result": "failure"})
		if v < 2 {
			return fmt.Errorf("failures counted: %v", v)
		}
		return nil
	})
	if _, err := s.client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the server stopped serving: %v", err)
	}
}
