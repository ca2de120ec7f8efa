package apiserver

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
)

// Unix socket paths are limited to 108 bytes on Linux; deeper data directories put the sockets in
// a private temporary directory instead.
const maxSocketPath = 100

// embeddedSnapshotCount and embeddedCatchUpEntries bound the raft log the embedded member holds
// in memory.
const (
	embeddedSnapshotCount  = 1000
	embeddedCatchUpEntries = 100
)

// embeddedEtcd is a single-member etcd inside this process. It listens only on unix sockets in a
// private directory, so several servers on one machine never clash over ports and no other local
// user can reach the store.
type embeddedEtcd struct {
	etcd      *embed.Etcd
	clientURL string
	tmpDir    string
}

func startEmbeddedEtcd(dataDir string) (*embeddedEtcd, error) {
	dir := filepath.Join(dataDir, "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd directory: %w", err)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	sockDir, tmpDir := absDir, ""
	if len(filepath.Join(sockDir, "client.sock")) > maxSocketPath {
		tmpDir, err = os.MkdirTemp("", "idplane-etcd-")
		if err != nil {
			return nil, fmt.Errorf("creating etcd socket directory: %w", err)
		}
		sockDir = tmpDir
	}
	clientSock := filepath.Join(sockDir, "client.sock")
	// `idplane snapshot save` finds the socket from the data directory: where it is elsewhere,
	// a file in the data directory names it.
	if err := writeClientSocketPointer(absDir, tmpDir != "", clientSock); err != nil {
		if tmpDir != "" {
			os.RemoveAll(tmpDir)
		}
		return nil, err
	}
	peerSock := filepath.Join(sockDir, "peer.sock")
	for _, s := range []string{clientSock, peerSock} {
		if err := os.Remove(s); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("removing stale socket %s: %w", s, err)
		}
	}
	// etcd listens on the host part of a unix URL but parses advertised URLs back from strings,
	// where a path must be the URL's path: each socket is named both ways.
	clientURL := url.URL{Scheme: "unix", Path: clientSock}
	peerListen := url.URL{Scheme: "unix", Host: peerSock}
	peerURL := url.URL{Scheme: "unix", Path: peerSock}

	cfg := embed.NewConfig()
	cfg.Name = embeddedEtcdMember
	cfg.Dir = filepath.Join(absDir, "data")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerListen}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	// One member elects itself: short ticks make it ready in milliseconds instead of a second.
	cfg.TickMs, cfg.ElectionMs = 10, 100
	// etcd keeps the raft log in memory from one snapshot to the next (10,000 writes by default)
	// plus entries for slow followers to catch up from (5,000). This member has no followers,
	// so snapshotting often and keeping few catch-up entries only bounds its memory (and the log
	// replayed at restart).
	cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = embeddedSnapshotCount, embeddedCatchUpEntries
	// etcd logs its own orderly shutdown at error level; start-up failures come back from
	// StartEtcd as errors, so only fatal conditions are worth its log.
	cfg.LogLevel = zapcore.FatalLevel.String()

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		if tmpDir != "" {
			os.RemoveAll(tmpDir)
		}
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s not ready after a minute", cfg.Dir)
	}
	return &embeddedEtcd{etcd: e, clientURL: clientURL.String(), tmpDir: tmpDir}, nil
}

func (e *embeddedEtcd) Close() {
	e.etcd.Close()
	if e.tmpDir != "" {
		os.RemoveAll(e.tmpDir)
	}
}
