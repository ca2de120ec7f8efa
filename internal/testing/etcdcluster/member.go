package etcdcluster

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// memberEnv carries a member's settings, as JSON, from the cluster to the process it starts.
const memberEnv = "IDPLANE_ETCDCLUSTER_MEMBER"

// memberConfig is one member's settings.
type memberConfig struct {
	Name           string `json:"name"`
	Dir            string `json:"dir"`
	PeerURL        string `json:"peerURL"`
	ClientURL      string `json:"clientURL"`
	InitialCluster string `json:"initialCluster"`
	// CertFile serves both the client and the peer port and authenticates the member to its peers.
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
	CAFile   string `json:"caFile"`
}

// RunMemberIfChild turns this process into an etcd member when the cluster started it for that,
// and then never returns. A package whose tests call Start calls it first thing in TestMain: the
// cluster starts its members by running the test binary again.
func RunMemberIfChild() {
	raw, ok := os.LookupEnv(memberEnv)
	if !ok {
		return
	}
	var cfg memberConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "etcd member: decoding %s: %v\n", memberEnv, err)
		os.Exit(2)
	}
	if err := runMember(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "etcd member %s: %v\n", cfg.Name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runMember serves until SIGTERM or SIGINT, then closes etcd cleanly. On a data directory that
// already holds a member, etcd restarts that member and ignores the initial cluster.
func runMember(c memberConfig) error {
	peer, err := url.Parse(c.PeerURL)
	if err != nil {
		return err
	}
	client, err := url.Parse(c.ClientURL)
	if err != nil {
		return err
	}
	tlsInfo := transport.TLSInfo{CertFile: c.CertFile, KeyFile: c.KeyFile, TrustedCAFile: c.CAFile, ClientCertAuth: true}

	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.Dir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster = c.InitialCluster
	cfg.InitialClusterToken = "idplane-etcdcluster"
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = tlsInfo, tlsInfo
	// A tenth of etcd's defaults: a lost leader is replaced within about a second, yet heartbeats
	// still have room on a loaded two-core machine.
	cfg.TickMs, cfg.ElectionMs = 50, 500
	cfg.LogLevel = "warn"

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("starting: %w", err)
	}
	defer e.Close()
	// A member of a cluster without quorum cannot be ready; it serves anyway and becomes ready
	// when enough peers come back, so readiness is the cluster's to check, not the member's.
	select {
	case err := <-e.Err():
		return fmt.Errorf("serving: %w", err)
	case <-signals:
		return nil
	}
}
