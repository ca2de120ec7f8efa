// Command nodesim measures how many nodes and pods a server sustains: for each level it starts a
// fresh idplane (one server, or three replicas on a three-member etcd cluster) or loads a running
// server given its admin kubeconfig and client CA, creates the level's pods as the admin, then
// runs that many nodes against it. Each node is idplane's own agent (agent.RunNode: node status
// and Lease, pods, objects, tokens, volumes, runtime specs) with a client certificate the tool
// minted and its files under a scratch root, so a change to the agent changes the simulation.
// Once every node has written its pods' volumes it measures a steady window: open watches,
// request rate and client-side latency by kind, errors, and the servers' memory (per node and per
// watch) and CPU. A level passes when the p99 latency of every kind of request stays under the
// threshold without errors.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/idplane/idplane/bench/internal/loadphase"
	"github.com/idplane/idplane/bench/internal/toolmain"
	"github.com/idplane/idplane/internal/testing/etcdcluster"
)

type config struct {
	idplane         string
	replicas        int
	levels          []int
	podsPerNode     int
	namespaces      int
	serviceAccounts int
	sharedObjects   int
	payload         int
	tokenExpiration int64
	duration        time.Duration
	ramp            time.Duration
	settle          time.Duration
	readyTimeout    time.Duration
	setupTimeout    time.Duration
	startTimeout    time.Duration
	leaseDuration   time.Duration
	statusReport    time.Duration
	threshold       time.Duration
	keepGoing       bool
	keepLogs        bool
	jsonFile        string
	// perObjectWatches keeps the agents' per-object secret and configmap watches where the
	// server offers the bulk watch.
	perObjectWatches bool
	// kubeconfig, with the client CA's certificate and key, names a server the tool did not
	// start; idplane and replicas are then unused.
	kubeconfig   string
	clientCACert string
	clientCAKey  string
	// scratchRoot, when set, keeps the nodes' files under it instead of a removed temporary
	// directory.
	scratchRoot string
	// podCertificate, when set, is the signer of a podCertificate source added to every pod.
	podCertificate string
	// pprofAddr, when set, is a loopback address serving the tool's own profiles.
	pprofAddr string
	// gcPercent is the tool's own GOGC.
	gcPercent int
}

func main() {
	// The etcd cluster of the replica runs starts its members by running this binary again.
	etcdcluster.RunMemberIfChild()
	toolmain.Main("nodesim", parseFlags, run)
}

func run(ctx context.Context, cfg config) error {
	// The agents and client-go log every retry, ended watch and, when a level stops its nodes,
	// every cancelled renewal; the figures and the error list say what matters. A discarding
	// logger silences errors too, which klog's own output would still copy to stderr.
	klog.SetSlogLogger(slog.New(slog.DiscardHandler))
	if cfg.gcPercent > 0 {
		debug.SetGCPercent(cfg.gcPercent)
	}
	if cfg.pprofAddr != "" {
		if err := servePprof(cfg.pprofAddr); err != nil {
			return err
		}
	}

	var results []levelResult
	failed := false
	for _, nodes := range cfg.levels {
		target := fmt.Sprintf("%d replica(s)", cfg.replicas)
		if cfg.kubeconfig != "" {
			target = "the server of " + cfg.kubeconfig
		}
		fmt.Fprintf(os.Stderr, "nodesim: %s, %d nodes, %d pods\n", target, nodes, nodes*cfg.podsPerNode)
		r, err := runLevel(ctx, cfg, nodes)
		if err != nil {
			return fmt.Errorf("level of %d nodes: %w", nodes, err)
		}
		printLevel(os.Stdout, r)
		results = append(results, r)
		if !r.Pass {
			failed = true
			if !cfg.keepGoing {
				break
			}
		}
	}
	fmt.Println()
	printSummary(os.Stdout, results, cfg.threshold)
	if cfg.jsonFile != "" {
		if err := toolmain.WriteJSON(cfg.jsonFile, report{Config: describe(cfg), Levels: results}); err != nil {
			return err
		}
	}
	if failed {
		return errors.New("a level failed: see its lines above")
	}
	return nil
}

func parseFlags(args []string) (config, error) {
	var cfg config
	var levels string
	fs := flag.NewFlagSet("nodesim", flag.ContinueOnError)
	fs.StringVar(&cfg.idplane, "idplane", "", "idplane binary to launch (required without -kubeconfig); every level gets fresh servers and data")
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "admin kubeconfig of a running server (loopback only) to load instead of starting idplane; needs -client-ca-cert and -client-ca-key")
	fs.StringVar(&cfg.clientCACert, "client-ca-cert", "", "with -kubeconfig: the certificate of a CA the server trusts for client certificates; the tool mints the nodes' identities (CN=system:node:<name>, O=system:nodes) from it")
	fs.StringVar(&cfg.clientCAKey, "client-ca-key", "", "with -kubeconfig: that CA's private key")
	fs.StringVar(&cfg.scratchRoot, "scratch-root", "", "keep the nodes' files (pods' volumes and runtime specs) under this directory, level-<nodes>/<node>/; empty: a temporary directory removed after each level")
	fs.StringVar(&cfg.podCertificate, "pod-certificate", "", "signer of a podCertificate source (ECDSA P-256 key, credential bundle "+credentialBundle+") added to every pod in a projected volume of its own, e.g. idplane.io/spiffe; the report then gives the PodCertificateRequests created and pods/s and p50/p99 from a node's start to its pods' files")
	fs.BoolVar(&cfg.perObjectWatches, "per-object-watches", false, "the agents watch each secret and configmap on its own, as stock kubelets do, even where the server serves the node's bulk watch (node.idplane.io nodereadables): for comparing the two")
	fs.IntVar(&cfg.replicas, "replicas", 1, "1: one server on its embedded etcd; 3: three replicas on a three-member etcd cluster")
	fs.StringVar(&levels, "nodes", "50,100,200", "comma-separated numbers of simulated nodes, one level each")
	fs.IntVar(&cfg.podsPerNode, "pods-per-node", 10, "pods bound to every node")
	fs.IntVar(&cfg.namespaces, "namespaces", 10, "namespaces the pods are spread over")
	fs.IntVar(&cfg.serviceAccounts, "service-accounts", 5, "service accounts per namespace the pods run as")
	fs.IntVar(&cfg.sharedObjects, "shared-objects", 0, "when > 0, the pods of a namespace share this many secrets and configmaps; 0 gives every pod its own")
	fs.IntVar(&cfg.payload, "payload-bytes", 256, "size of every secret's and configmap's value")
	fs.Int64Var(&cfg.tokenExpiration, "token-expiration", 600, "expirationSeconds of a projected token every pod carries besides kube-api-access; 0 leaves it out")
	fs.DurationVar(&cfg.duration, "duration", time.Minute, "length of the steady window of every level")
	fs.DurationVar(&cfg.ramp, "ramp", 20*time.Second, "the nodes start evenly spread over this time")
	fs.DurationVar(&cfg.settle, "settle", 5*time.Second, "wait between the last node turning ready and the steady window")
	fs.DurationVar(&cfg.readyTimeout, "ready-timeout", 5*time.Minute, "a level fails when its nodes are not all ready by then")
	fs.DurationVar(&cfg.setupTimeout, "setup-timeout", 10*time.Minute, "bound of creating a level's objects")
	fs.DurationVar(&cfg.startTimeout, "start-timeout", 2*time.Minute, "bound of starting the servers (and etcd members)")
	fs.DurationVar(&cfg.leaseDuration, "lease-duration", 40*time.Second, "node Lease duration; renewed every quarter of it (the agent's default)")
	fs.DurationVar(&cfg.statusReport, "status-report", 5*time.Minute, "the agent's status report frequency: a node's status is written this often when unchanged (the agent's default)")
	fs.DurationVar(&cfg.threshold, "p99", 100*time.Millisecond, "a level passes when the p99 of every kind of request stays under this")
	fs.BoolVar(&cfg.keepGoing, "keep-going", false, "run the remaining levels after one fails")
	fs.BoolVar(&cfg.keepLogs, "keep-logs", false, "keep every level's server and etcd logs in its temporary directory (the data is removed)")
	// At 2,000 nodes the tool's heap is over a gigabyte live, and each of its collections takes
	// a core for seconds; on one machine that CPU comes from the server being measured.
	fs.IntVar(&cfg.gcPercent, "client-gc-percent", 0, "the tool's own GOGC, apart from the servers it starts (which inherit the GOGC environment variable); 0 keeps the environment's. Larger values collect the simulated nodes' heap less often, taking less CPU from a server on the same machine, at the cost of the tool's memory")
	fs.StringVar(&cfg.pprofAddr, "pprof-addr", "", "serve the tool's own profiles (/debug/pprof/) on this loopback host:port, to see what the simulated nodes cost the client")
	fs.StringVar(&cfg.jsonFile, "json", "", "also write every level's figures as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	switch {
	case cfg.kubeconfig == "" && cfg.idplane == "":
		errs = append(errs, errors.New("-idplane is required, or -kubeconfig for a running server"))
	case cfg.kubeconfig != "" && cfg.idplane != "":
		errs = append(errs, errors.New("-idplane and -kubeconfig exclude each other: start a server, or load a running one"))
	case cfg.kubeconfig != "" && (cfg.clientCACert == "" || cfg.clientCAKey == ""):
		errs = append(errs, errors.New("-kubeconfig needs -client-ca-cert and -client-ca-key to mint the nodes' identities"))
	case cfg.kubeconfig == "" && (cfg.clientCACert != "" || cfg.clientCAKey != ""):
		errs = append(errs, errors.New("-client-ca-cert and -client-ca-key go with -kubeconfig; a started server's CA is read from its data"))
	case cfg.kubeconfig != "" && cfg.replicas != 1:
		errs = append(errs, errors.New("-replicas applies to servers the tool starts, not with -kubeconfig"))
	}
	if cfg.replicas != 1 && cfg.replicas != 3 {
		errs = append(errs, fmt.Errorf("-replicas %d: only 1 or 3", cfg.replicas))
	}
	var err error
	if cfg.levels, err = loadphase.ParseLevels(levels); err != nil {
		errs = append(errs, fmt.Errorf("-nodes: %w", err))
	}
	for name, v := range map[string]int{"-pods-per-node": cfg.podsPerNode, "-namespaces": cfg.namespaces, "-service-accounts": cfg.serviceAccounts} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1", name))
		}
	}
	if cfg.sharedObjects < 0 || cfg.payload < 0 || cfg.gcPercent < 0 {
		errs = append(errs, errors.New("-shared-objects, -payload-bytes and -client-gc-percent must not be negative"))
	}
	if cfg.tokenExpiration != 0 && (cfg.tokenExpiration < 600 || cfg.tokenExpiration > math.MaxUint32) {
		errs = append(errs, fmt.Errorf("-token-expiration %d: the API takes 600 s to 2^32 s, or 0 for no extra token", cfg.tokenExpiration))
	}
	for name, d := range map[string]time.Duration{
		"-duration": cfg.duration, "-ready-timeout": cfg.readyTimeout, "-setup-timeout": cfg.setupTimeout,
		"-start-timeout": cfg.startTimeout, "-status-report": cfg.statusReport, "-p99": cfg.threshold,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	if cfg.pprofAddr != "" {
		if err := checkPprofAddr(cfg.pprofAddr); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.ramp < 0 || cfg.settle < 0 {
		errs = append(errs, errors.New("-ramp and -settle must not be negative"))
	}
	if cfg.leaseDuration < 4*time.Second {
		errs = append(errs, fmt.Errorf("-lease-duration %s: at least 4s, renewed every quarter", cfg.leaseDuration))
	}
	return cfg, errors.Join(errs...)
}

func (c config) plan(nodes int) plan {
	return plan{
		nodes: nodes, podsPerNode: c.podsPerNode, namespaces: c.namespaces, serviceAccounts: c.serviceAccounts,
		sharedObjects: c.sharedObjects, tokenExpiration: c.tokenExpiration, podCertificate: c.podCertificate,
	}
}

// describe is the configuration as the JSON report records it.
func describe(c config) map[string]string {
	return map[string]string{
		"idplane": c.idplane, "replicas": fmt.Sprint(c.replicas), "podsPerNode": fmt.Sprint(c.podsPerNode),
		"namespaces": fmt.Sprint(c.namespaces), "serviceAccounts": fmt.Sprint(c.serviceAccounts),
		"sharedObjects": fmt.Sprint(c.sharedObjects), "payloadBytes": fmt.Sprint(c.payload),
		"tokenExpiration": fmt.Sprint(c.tokenExpiration), "duration": c.duration.String(), "ramp": c.ramp.String(),
		"leaseDuration": c.leaseDuration.String(), "statusReport": c.statusReport.String(),
		"kubeconfig": c.kubeconfig, "podCertificateSigner": c.podCertificate, "p99Threshold": c.threshold.String(),
		"perObjectWatches": fmt.Sprint(c.perObjectWatches), "clientGCPercent": fmt.Sprint(c.gcPercent), "levels": strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c.levels)), ","), "[]"),
	}
}
