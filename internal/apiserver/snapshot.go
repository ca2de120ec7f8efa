package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/snapshot"
	"github.com/idplane/idplane/internal/snapshot/archive"
)

// embeddedEtcdMember is the embedded etcd's member name; a restored member gets the same.
const embeddedEtcdMember = "idplane"

// clientSocketPointer is the file, in <data-dir>/etcd, that names the embedded etcd's client
// socket when the data directory's path is too long for it to live there.
const clientSocketPointer = "client-socket"

func writeClientSocketPointer(etcdDir string, elsewhere bool, sock string) error {
	p := filepath.Join(etcdDir, clientSocketPointer)
	if !elsewhere {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", p, err)
		}
		return nil
	}
	if err := os.WriteFile(p, []byte(sock+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// embeddedEtcdEndpoint is the client URL of the embedded etcd a server on dataDir runs.
func embeddedEtcdEndpoint(dataDir string) (string, error) {
	etcdDir, err := filepath.Abs(filepath.Join(dataDir, "etcd"))
	if err != nil {
		return "", err
	}
	sock := filepath.Join(etcdDir, "client.sock")
	if b, err := os.ReadFile(filepath.Join(etcdDir, clientSocketPointer)); err == nil {
		sock = strings.TrimSpace(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if _, err := os.Stat(sock); err != nil {
		return "", fmt.Errorf("no embedded etcd socket at %s: is `idplane server --data-dir %s` running? (%w)", sock, dataDir, err)
	}
	return (&url.URL{Scheme: "unix", Path: sock}).String(), nil
}

// SnapshotSaveOptions say which control plane `idplane snapshot save` saves, and where to.
type SnapshotSaveOptions struct {
	// DataDir is the server's; its pki/ goes into the archive, and without EtcdServers the
	// snapshot is taken from the embedded etcd its running server listens on.
	DataDir string
	// EtcdServers and the files are the server's flags of the same names, for an external etcd.
	EtcdServers                           []string
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	Path                                  string
	Force                                 bool
}

// SaveSnapshot writes an archive of a running control plane's etcd and keys.
func SaveSnapshot(ctx context.Context, o SnapshotSaveOptions) (*archive.Manifest, error) {
	servers := o.EtcdServers
	if len(servers) == 0 {
		if o.EtcdCAFile != "" || o.EtcdCertFile != "" || o.EtcdKeyFile != "" {
			return nil, errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers")
		}
		ep, err := embeddedEtcdEndpoint(o.DataDir)
		if err != nil {
			return nil, err
		}
		servers = []string{ep}
	}
	src, err := snapshotSource(servers, o.EtcdCAFile, o.EtcdCertFile, o.EtcdKeyFile)
	if err != nil {
		return nil, err
	}
	return snapshot.Save(ctx, src, snapshot.SaveOptions{
		PKIDir: filepath.Join(o.DataDir, "pki"), Path: o.Path, Force: o.Force, Now: time.Now(),
	})
}

// RestoreSnapshot restores the archive at path into a new data directory laid out as a server with
// embedded etcd expects it.
func RestoreSnapshot(path, dataDir string) (*archive.Manifest, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	// The member advertises a fresh peer URL at each start; this one is where its socket would be.
	peer := (&url.URL{Scheme: "unix", Path: filepath.Join(abs, "etcd", "peer.sock")}).String()
	return snapshot.Restore(path, snapshot.Target{
		DataDir: abs, EtcdDir: filepath.Join("etcd", "data"), MemberName: embeddedEtcdMember, PeerURL: peer,
	})
}

func snapshotSource(servers []string, caFile, certFile, keyFile string) (snapshot.Source, error) {
	var tlsConfig *tls.Config
	if caFile != "" || certFile != "" {
		info := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile}
		var err error
		if tlsConfig, err = info.ClientConfig(); err != nil {
			return snapshot.Source{}, fmt.Errorf("etcd client TLS: %w", err)
		}
	}
	return snapshot.Source{Endpoints: servers, TLS: tlsConfig}, nil
}

// snapshotScheduler is the leader's scheduled snapshots, or nil when --snapshot-schedule is empty.
func (a *assembly) snapshotScheduler() (*snapshot.Scheduler, error) {
	so := a.o.Snapshots
	if so.Schedule == "" {
		return nil, nil
	}
	sched, err := snapshot.ParseSchedule(so.Schedule)
	if err != nil {
		return nil, err
	}
	src, err := snapshotSource(a.in.etcdServers, a.o.EtcdCAFile, a.o.EtcdCertFile, a.o.EtcdKeyFile)
	if err != nil {
		return nil, err
	}
	dir := so.Dir
	if dir == "" {
		dir = filepath.Join(a.o.DataDir, "snapshots")
	}
	pkiDir := filepath.Join(a.o.DataDir, "pki")
	// Every replica shows the metrics, at zero until it leads: an alert takes the maximum over replicas.
	snapshot.RegisterMetrics()
	return &snapshot.Scheduler{
		Schedule: sched, Dir: dir, Retention: so.Retention, Clock: clock.RealClock{},
		Save: func(ctx context.Context, path string) error {
			_, err := snapshot.Save(ctx, src, snapshot.SaveOptions{PKIDir: pkiDir, Path: path, Now: time.Now()})
			return err
		},
	}, nil
}
