// Package etcdcluster runs a three-member etcd cluster for tests: each member is its own process
// (etcd's embed package inside the test binary, run again), members talk to each other and to
// clients over mutual TLS on loopback ports, and a test can stop, kill and restart any member on
// its data directory.
package etcdcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idplane/idplane/internal/pki"
)

// Size is the number of members: the smallest cluster that survives the loss of one.
const Size = 3

// stopTimeout bounds how long a member may take to exit after a signal.
const stopTimeout = 30 * time.Second

// Cluster is a running etcd cluster.
type Cluster struct {
	// CAFile verifies the members' certificates; ClientCertFile and ClientKeyFile are a client
	// certificate the members accept.
	CAFile, ClientCertFile, ClientKeyFile string

	members   []*member
	clientTLS *tls.Config
}

type member struct {
	cfg     memberConfig
	logPath string
	// stopped says the member was stopped on purpose, so waiting for health skips it.
	stopped bool
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// Start creates a CA and certificates in dir, starts the members with their data under dir and
// waits until every one of them serves linearizable reads. ctx bounds the wait; Close stops them.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	c := &Cluster{}
	if err := c.writeCertificates(dir); err != nil {
		return nil, err
	}
	var err error
	c.clientTLS, err = transport.TLSInfo{CertFile: c.ClientCertFile, KeyFile: c.ClientKeyFile, TrustedCAFile: c.CAFile}.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	// Free ports are only free until someone takes them: a start that loses the race tries again
	// on new ones.
	for attempt := 1; ; attempt++ {
		err = c.start(ctx, dir)
		if err == nil {
			return c, nil
		}
		c.Close()
		if attempt == 3 || ctx.Err() != nil {
			return nil, err
		}
		if err := os.RemoveAll(filepath.Join(dir, "members")); err != nil {
			return nil, err
		}
	}
}

func (c *Cluster) start(ctx context.Context, dir string) error {
	ports, err := freePorts(2 * Size)
	if err != nil {
		return err
	}
	c.members = nil
	var initial []string
	for i := range Size {
		name := "m" + strconv.Itoa(i)
		m := &member{
			cfg: memberConfig{
				Name:      name,
				Dir:       filepath.Join(dir, "members", name),
				PeerURL:   "https://127.0.0.1:" + strconv.Itoa(ports[2*i]),
				ClientURL: "https://127.0.0.1:" + strconv.Itoa(ports[2*i+1]),
				CertFile:  filepath.Join(dir, name+".crt"),
				KeyFile:   filepath.Join(dir, name+".key"),
				CAFile:    c.CAFile,
			},
			logPath: filepath.Join(dir, name+".log"),
		}
		initial = append(initial, name+"="+m.cfg.PeerURL)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.cfg.InitialCluster = strings.Join(initial, ",")
		if err := os.MkdirAll(filepath.Dir(m.cfg.Dir), 0o700); err != nil {
			return err
		}
		if err := m.spawn(); err != nil {
			return err
		}
	}
	return c.WaitHealthy(ctx)
}

// writeCertificates makes a CA, one certificate per member that serves clients and peers and
// authenticates it to its peers, and one client certificate.
func (c *Cluster) writeCertificates(dir string) error {
	now := time.Now()
	ca, err := pki.EnsureCA(pki.Files{Dir: filepath.Join(dir, "ca")}, "etcd-ca", now)
	if err != nil {
		return err
	}
	c.CAFile = pki.Files{Dir: filepath.Join(dir, "ca")}.CACert()
	issue := func(name string, req pki.IssueRequest) error {
		req.Validity, req.Now = 24*time.Hour, now
		cert, key, err := pki.Issue(ca, req)
		if err != nil {
			return fmt.Errorf("issuing the etcd certificate %s: %w", name, err)
		}
		if err := pki.WriteFile(filepath.Join(dir, name+".crt"), cert, 0o600); err != nil {
			return err
		}
		return pki.WriteFile(filepath.Join(dir, name+".key"), key, 0o600)
	}
	for i := range Size {
		name := "m" + strconv.Itoa(i)
		err := issue(name, pki.IssueRequest{
			CommonName: name, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return err
		}
	}
	if err := issue("client", pki.IssueRequest{CommonName: "client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return err
	}
	c.ClientCertFile, c.ClientKeyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	return nil
}

// freePorts reserves n distinct loopback ports, all held open until every one is chosen.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Endpoints are the members' client URLs, in member order.
func (c *Cluster) Endpoints() []string {
	var urls []string
	for _, m := range c.members {
		urls = append(urls, m.cfg.ClientURL)
	}
	return urls
}

// LogPath is where member i's etcd log goes.
func (c *Cluster) LogPath(i int) string { return c.members[i].logPath }

// Stop sends member i the signal (SIGTERM for a clean stop, SIGKILL for a crash) and waits until
// its process has exited. A clean stop must exit with status 0.
func (c *Cluster) Stop(i int, sig syscall.Signal) error {
	m := c.members[i]
	if !m.running() {
		return fmt.Errorf("etcd member %s is not running", m.cfg.Name)
	}
	m.stopped = true
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signalling etcd member %s: %w", m.cfg.Name, err)
	}
	select {
	case <-m.exited:
	case <-time.After(stopTimeout):
		_ = m.cmd.Process.Kill()
		<-m.exited
		return fmt.Errorf("etcd member %s did not exit within %v of %v", m.cfg.Name, stopTimeout, sig)
	}
	if sig != syscall.SIGKILL && m.waitErr != nil {
		return fmt.Errorf("etcd member %s did not stop cleanly on %v: %w", m.cfg.Name, sig, m.waitErr)
	}
	return nil
}

// Restart starts the given stopped members again on their data directories and waits until every
// running member serves linearizable reads: members that bring back quorum are started together.
func (c *Cluster) Restart(ctx context.Context, members ...int) error {
	for _, i := range members {
		m := c.members[i]
		if m.running() {
			return fmt.Errorf("etcd member %s is still running", m.cfg.Name)
		}
		if err := m.spawn(); err != nil {
			return err
		}
	}
	return c.WaitHealthy(ctx)
}

// WaitHealthy waits until every running member answers a linearizable read, which needs a leader
// and a quorum, or until ctx ends.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	for _, m := range c.members {
		if m.cmd == nil || m.stopped {
			continue
		}
		for {
			select {
			case <-m.exited:
				return fmt.Errorf("etcd member %s exited: %v\n%s", m.cfg.Name, m.waitErr, tail(m.logPath, 20))
			default:
			}
			err := c.probe(ctx, m)
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("etcd member %s not healthy: %w (last error: %v)", m.cfg.Name, ctx.Err(), err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func (c *Cluster) probe(ctx context.Context, m *member) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cli, err := c.Client(m.cfg.ClientURL)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Get(ctx, "health")
	return err
}

// Leader is the index of the member that currently leads, as the running members see it.
func (c *Cluster) Leader(ctx context.Context) (int, error) {
	ids := map[uint64]int{}
	var leader uint64
	for i, m := range c.members {
		if !m.running() {
			continue
		}
		cli, err := c.Client(m.cfg.ClientURL)
		if err != nil {
			return -1, err
		}
		st, err := cli.Status(ctx, m.cfg.ClientURL)
		cli.Close()
		if err != nil {
			return -1, fmt.Errorf("status of etcd member %s: %w", m.cfg.Name, err)
		}
		ids[st.Header.MemberId] = i
		if st.Leader != 0 {
			leader = st.Leader
		}
	}
	if i, ok := ids[leader]; ok {
		return i, nil
	}
	return -1, errors.New("no running etcd member leads")
}

// Client connects to the given endpoints with the cluster's client certificate.
func (c *Cluster) Client(endpoints ...string) (*clientv3.Client, error) {
	// Retries against stopped members are expected here; the caller sees the errors that matter.
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: c.clientTLS, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %v: %w", endpoints, err)
	}
	return cli, nil
}

// Close kills every running member and waits for it to exit.
func (c *Cluster) Close() {
	for _, m := range c.members {
		if m.running() {
			m.stopped = true
			_ = m.cmd.Process.Kill()
			<-m.exited
		}
	}
}

func (m *member) running() bool {
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// spawn runs the test binary again as this member, its output appended to the member's log.
func (m *member) spawn() error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the test binary: %w", err)
	}
	cfg, err := json.Marshal(m.cfg)
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening etcd member log: %w", err)
	}
	// Should TestMain not call RunMemberIfChild, the child runs no test and exits at once.
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+string(cfg))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = memberProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting etcd member %s: %w", m.cfg.Name, err)
	}
	m.cmd, m.exited, m.waitErr, m.stopped = cmd, make(chan struct{}), nil, false
	go func() {
		m.waitErr = cmd.Wait()
		logFile.Close()
		close(m.exited)
	}()
	return nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
