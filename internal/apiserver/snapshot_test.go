package apiserver

import (
	"fmt"
	"path/filepath"
	"testing"

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
