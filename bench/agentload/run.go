package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/launch"
	"github.com/idplane/idplane/bench/internal/loadclient"
	"github.com/idplane/idplane/bench/internal/procstat"
)

// auditSettle is how long the tool waits after a window before reading the audit log, so that
// requests received just before the window's end have been written.
const auditSettle = 500 * time.Millisecond

// measure runs one complete measurement: a fresh server and agent in a temporary directory,
// the pods, the steady window. Both processes are stopped and the directory removed (unless -keep) before
// it returns.
func measure(ctx context.Context, cfg config) (runResult, error) {
	dir, err := os.MkdirTemp("", "agentload-")
	if err != nil {
		return runResult{}, fmt.Errorf("creating temporary directory: %w", err)
	}
	if cfg.keep {
		fmt.Fprintf(os.Stderr, "agentload: keeping %s (server and agent logs, audit log)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	user := "system:node:" + cfg.nodeName
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy(user)), 0o600); err != nil {
		return runResult{}, fmt.Errorf("writing the audit policy: %w", err)
	}
	auditLog := filepath.Join(dir, "audit.log")
	srv, err := launch.LaunchServer(ctx, launch.ServerOptions{
		Binary: cfg.idplane, Dir: dir, Timeout: cfg.startTimeout, Tool: "idplane-agentload",
		Args: []string{"--audit-log-path", auditLog, "--audit-policy-file", policy, "--approve-kubelet-serving"},
	})
	if err != nil {
		return runResult{}, err
	}
	fmt.Fprintf(os.Stderr, "agentload: server ready after %s\n", srv.StartToReady.Round(time.Millisecond))

	res, err := measureWith(ctx, cfg, srv, dir)
	if _, stopErr := srv.Stop(); err == nil && stopErr != nil {
		err = stopErr
	}
	if err != nil {
		return runResult{}, err
	}
	reqs, err := readAuditLog(auditLog, user)
	if err != nil {
		return runResult{}, err
	}
	res.addRequests(reqs, cfg)
	return res, nil
}

// measureWith joins the agent to srv, runs the pods and the steady window and stops the agent.
// It leaves the request counts to the caller, who reads the audit log once the server is gone.
func measureWith(ctx context.Context, cfg config, srv *launch.Server, dir string) (runResult, error) {
	restCfg, err := loadclient.RESTConfig(srv.Kubeconfig, "idplane-agentload")
	if err != nil {
		return runResult{}, err
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return runResult{}, fmt.Errorf("building the admin client: %w", err)
	}
	bootstrap := filepath.Join(dir, "bootstrap.kubeconfig")
	out, err := exec.CommandContext(ctx, cfg.idplane, "token", "create", "--kubeconfig", srv.Kubeconfig, "--ttl", "1h").Output()
	if err != nil {
		return runResult{}, fmt.Errorf("idplane token create: %w", exitDetail(err))
	}
	if err := os.WriteFile(bootstrap, out, 0o600); err != nil {
		return runResult{}, fmt.Errorf("writing the bootstrap kubeconfig: %w", err)
	}
	rootDir := filepath.Join(dir, "agent")
	agentArgs := []string{"agent", "--bootstrap-kubeconfig", bootstrap, "--node-name", cfg.nodeName, "--root-dir", rootDir,
		"--node-ip", "127.0.0.1", "--hostname", cfg.nodeName}
	agent, err := launch.Start("agent", filepath.Join(dir, "agent.log"), nil, cfg.idplane, agentArgs...)
	if err != nil {
		return runResult{}, err
	}
	res, err := drive(ctx, cfg, cs, agent, rootDir)
	if _, stopErr := agent.Stop(); err == nil && stopErr != nil {
		err = stopErr
	}
	if err == nil && cfg.restartWindow > 0 {
		err = restartAgent(ctx, cfg, &res, filepath.Join(dir, "agent-restarted.log"), agentArgs)
	}
	if err != nil {
		return runResult{}, err
	}
	res.ServerStartMs = ms(srv.StartToReady)
	return res, nil
}

// drive waits for the agent's Node, creates the pods and measures the steady window.
func drive(ctx context.Context, cfg config, cs kubernetes.Interface, agent *launch.Process, rootDir string) (runResult, error) {
	var res runResult
	if err := waitNodeReady(ctx, cs, cfg, agent); err != nil {
		return res, err
	}
	res.AgentStartToNodeReadyMs = ms(time.Since(agent.Started))
	fmt.Fprintf(os.Stderr, "agentload: node %s ready after %s\n", cfg.nodeName, time.Since(agent.Started).Round(time.Millisecond))

	w := &workload{cs: cs, nodeName: cfg.nodeName, podsDir: filepath.Join(rootDir, "pods"), agentExited: agent.Exited(), cfg: cfg}
	namespaces, err := w.prepareNamespaces(ctx)
	if err != nil {
		return res, err
	}
	mem, err := procstat.ReadMemory(agent.PID())
	if err != nil {
		return res, err
	}
	res.AgentIdleRSSMiB = procstat.MiB(mem.RSS)

	fmt.Fprintf(os.Stderr, "agentload: creating %d pods at %g/s\n", cfg.pods, cfg.rate)
	cpu0, err := procstat.CPU(agent.PID())
	if err != nil {
		return res, err
	}
	res.rampFrom = time.Now()
	ramp, err := w.createPods(ctx, namespaces)
	res.rampTo = time.Now()
	if err != nil {
		return res, err
	}
	cpu1, err := procstat.CPU(agent.PID())
	if err != nil {
		return res, err
	}
	res.Ramp = ramp.figures()
	res.Ramp.AgentCPUSeconds = (cpu1 - cpu0).Seconds()
	res.Ramp.AgentCPUPercent = 100 * (cpu1 - cpu0).Seconds() / ramp.elapsed.Seconds()
	res.Ramp.MachineLoadAvg1m = loadAverage()
	fmt.Fprintf(os.Stderr, "agentload: %d token files, %d errors; p50 %.1f ms, p99 %.1f ms\n",
		len(ramp.latencies), ramp.errors, res.Ramp.P50Ms, res.Ramp.P99Ms)

	// The agent reports on a pod's status after writing its files: the window starts once those
	// reports are in, or after -file-timeout.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, cfg.fileTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := w.credentialsReady(ctx, namespaces)
		return n >= len(ramp.latencies), err
	})
	if err != nil && ctx.Err() == nil && !wait.Interrupted(err) {
		return res, err
	}
	fmt.Fprintf(os.Stderr, "agentload: steady window of %s\n", cfg.steady)
	res.steadyFrom = time.Now()
	cpu0, err = procstat.CPU(agent.PID())
	if err != nil {
		return res, err
	}
	select {
	case <-time.After(cfg.steady):
	case <-agent.Exited():
		return res, agent.Failure("the agent exited during the steady window")
	case <-ctx.Done():
		return res, ctx.Err()
	}
	cpu1, err = procstat.CPU(agent.PID())
	if err != nil {
		return res, err
	}
	res.steadyTo = time.Now()
	if mem, err = procstat.ReadMemory(agent.PID()); err != nil {
		return res, err
	}
	window := res.steadyTo.Sub(res.steadyFrom)
	res.Steady = steadyFigures{
		Seconds:          window.Seconds(),
		AgentCPUPercent:  100 * (cpu1 - cpu0).Seconds() / window.Seconds(),
		AgentRSSMiB:      procstat.MiB(mem.RSS),
		AgentAnonMiB:     procstat.MiB(mem.Anon),
		AgentHWMMiB:      procstat.MiB(mem.HWM),
		MachineLoadAvg1m: loadAverage(),
	}
	if res.Steady.CredentialsReady, err = w.credentialsReady(ctx, namespaces); err != nil {
		return res, err
	}
	// The window's last requests reach the log a moment after their responses.
	return res, sleepUntil(ctx, time.Now().Add(auditSettle))
}

// restartAgent starts the agent again on the same root directory, for the restart window, and
// stops it; the caller counts what it asked of the server in that window.
func restartAgent(ctx context.Context, cfg config, res *runResult, logPath string, args []string) error {
	fmt.Fprintf(os.Stderr, "agentload: restarting the agent for %s\n", cfg.restartWindow)
	res.restartFrom = time.Now()
	agent, err := launch.Start("agent", logPath, nil, cfg.idplane, args...)
	if err != nil {
		return err
	}
	select {
	case <-time.After(cfg.restartWindow):
	case <-agent.Exited():
		return agent.Failure("the restarted agent exited")
	case <-ctx.Done():
		agent.Kill()
		return ctx.Err()
	}
	res.restartTo = time.Now()
	res.Restart = &restartFigures{Seconds: res.restartTo.Sub(res.restartFrom).Seconds()}
	if _, err := agent.Stop(); err != nil {
		return err
	}
	return sleepUntil(ctx, time.Now().Add(auditSettle))
}

var errAgentExited = errors.New("the agent exited")

// waitNodeReady waits until the agent's Node is registered and Ready.
func waitNodeReady(ctx context.Context, cs kubernetes.Interface, cfg config, agent *launch.Process) error {
	last := errors.New("no answer yet")
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cfg.startTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-agent.Exited():
			return false, errAgentExited
		default:
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, cfg.nodeName, metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		last = errors.New("registered but not Ready")
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, errAgentExited):
		return agent.Failure("the agent exited before its Node was ready")
	default:
		return agent.Failure(fmt.Sprintf("node %s not ready within %s: %v", cfg.nodeName, cfg.startTimeout, last))
	}
}

// exitDetail adds a failed command's standard error to its error.
func exitDetail(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return err
}

// loadAverage is the machine's one-minute load average, or -1 when unknown.
func loadAverage() float64 {
	l, err := procstat.LoadAverage()
	if err != nil {
		return -1
	}
	return l
}
