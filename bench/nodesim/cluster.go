package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/bench/internal/launch"
	"github.com/idplane/idplane/bench/internal/loadclient"
	"github.com/idplane/idplane/internal/pki"
	"github.com/idplane/idplane/internal/testing/etcdcluster"
)

// replicaIssuer is the one service-account issuer replicas share, so that a token one of them
// issues is valid at the others.
const replicaIssuer = "https://nodesim.idplane.invalid"

// cluster is one level's API: a single server on its embedded etcd, or replicas on a
// three-member etcd cluster (one process per member, this binary run again).
type cluster struct {
	dir     string
	etcd    *etcdcluster.Cluster
	servers []*launch.Server
	// bases are the servers' client configurations without credentials, in server order: the
	// nodes' clients start from them.
	bases []*rest.Config
	// ca mints the nodes' client certificates.
	ca    *pki.CA
	admin kubernetes.Interface
	// metrics reach each server's /metrics and /debug/pprof as the admin, in server order.
	metrics []rest.Interface
	// foreign is a server the tool did not start: its processes are not the tool's to read, and
	// what a level creates there is deleted at the level's end.
	foreign bool
}

// connectCluster is a server the tool did not start: the admin kubeconfig's, with the client
// CA that server trusts to mint node identities.
func connectCluster(kubeconfig, caCert, caKey string) (*cluster, error) {
	cfg, err := loadclient.RESTConfig(kubeconfig, "idplane-nodesim")
	if err != nil {
		return nil, err
	}
	c := &cluster{foreign: true, bases: []*rest.Config{rest.AnonymousClientConfig(cfg)}}
	if c.admin, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("building the admin client: %w", err)
	}
	c.metrics = []rest.Interface{c.admin.CoreV1().RESTClient()}
	if c.ca, err = loadCAFiles(caCert, caKey); err != nil {
		return nil, err
	}
	return c, nil
}

// startCluster starts replicas servers (1 on the embedded etcd, more on an etcd cluster) in
// fresh directories under dir.
func startCluster(ctx context.Context, binary string, replicas int, dir string, timeout time.Duration) (*cluster, error) {
	c := &cluster{dir: dir}
	if err := c.start(ctx, binary, replicas, timeout); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) start(ctx context.Context, binary string, replicas int, timeout time.Duration) error {
	var args []string
	if replicas > 1 {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var err error
		if c.etcd, err = etcdcluster.Start(ctx, filepath.Join(c.dir, "etcd")); err != nil {
			return fmt.Errorf("starting the etcd cluster: %w", err)
		}
		args = []string{
			"--etcd-servers", strings.Join(c.etcd.Endpoints(), ","),
			"--etcd-cafile", c.etcd.CAFile, "--etcd-certfile", c.etcd.ClientCertFile, "--etcd-keyfile", c.etcd.ClientKeyFile,
			"--service-account-issuer", replicaIssuer,
		}
	}
	for i := range replicas {
		dir := filepath.Join(c.dir, "server-"+strconv.Itoa(i))
		if i > 0 {
			// Replicas share the first one's pki/: CA, service-account key, encryption config.
			if err := copyFiles(filepath.Join(serverDataDir(c.dir, 0), "pki"), filepath.Join(dir, "data", "pki")); err != nil {
				return err
			}
		} else if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		srv, err := launch.LaunchServer(ctx, launch.ServerOptions{
			Binary: binary, Dir: dir, Args: args, Timeout: timeout, Tool: "idplane-nodesim",
		})
		if err != nil {
			return fmt.Errorf("starting server %d: %w", i, err)
		}
		c.servers = append(c.servers, srv)
		cfg, err := loadclient.RESTConfig(srv.Kubeconfig, "idplane-nodesim")
		if err != nil {
			return err
		}
		c.bases = append(c.bases, rest.AnonymousClientConfig(cfg))
		admin, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("building the admin client of server %d: %w", i, err)
		}
		if i == 0 {
			c.admin = admin
		}
		c.metrics = append(c.metrics, admin.CoreV1().RESTClient())
	}
	var err error
	c.ca, err = loadCA(serverDataDir(c.dir, 0))
	return err
}

// serverDataDir is server i's --data-dir: launch keeps it in data/ of the server's directory.
func serverDataDir(dir string, i int) string {
	return filepath.Join(dir, "server-"+strconv.Itoa(i), "data")
}

// stop stops the servers, then the etcd members; it returns the servers' errors. A foreign
// server keeps running.
func (c *cluster) stop() error {
	var errs []error
	for i, s := range c.servers {
		if _, err := s.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("server %d: %w", i, err))
		}
	}
	if c.etcd != nil {
		c.etcd.Close()
	}
	return errors.Join(errs...)
}

// processes are the PIDs whose memory and CPU the figures report: the servers, then the etcd
// members (none for a single server, whose etcd runs inside it).
func (c *cluster) processes() (servers, etcd []int, err error) {
	for _, s := range c.servers {
		servers = append(servers, s.PID())
	}
	if c.etcd != nil {
		if etcd, err = etcdMemberPIDs(); err != nil {
			return nil, nil, err
		}
	}
	return servers, etcd, nil
}

// etcdMemberPIDs finds the etcd members among this process's children: they run this binary.
func etcdMemberPIDs() ([]int, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this binary: %w", err)
	}
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == self {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// copyFiles copies the regular files of src into dst, keeping their modes.
func copyFiles(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("reading %s: %w", src, err)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
