// Command snapshotload measures `idplane snapshot save` at scale: it launches a fresh server,
// populates it with the standard populate (by default 47,100 objects: 100 namespaces, 1,000
// nodes, 20,000 secrets, 20,000 pods bound to the nodes and each mounting a secret, 3,000 PVs and
// 3,000 PVCs), keeps a light paced load of secret GETs running, and takes snapshots: how long each
// takes, how large the archive is, and the p50/p99 of the light load before and during each.
//
// Every request goes to a server it launched on the loopback interface, every phase is bounded,
// and the server is stopped before the tool exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/launch"
	"github.com/idplane/idplane/bench/internal/loadclient"
	"github.com/idplane/idplane/bench/internal/loadphase"
	"github.com/idplane/idplane/bench/internal/procstat"
	"github.com/idplane/idplane/bench/internal/toolmain"
)

const tool = "snapshotload"

type config struct {
	idplane                                        string
	namespaces, nodes, secrets, pods, pvs, pvcs    int
	concurrency                                    int
	rps                                            int
	baseline                                       time.Duration
	runs                                           int
	startTimeout, populateTimeout, snapshotTimeout time.Duration
	jsonFile                                       string
	// scheduled, when set, measures the server's own scheduled snapshots at this interval
	// instead of `idplane snapshot save`.
	scheduled time.Duration
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet(tool, flag.ContinueOnError)
	fs.StringVar(&c.idplane, "idplane", "", "idplane binary to launch (required)")
	fs.IntVar(&c.namespaces, "namespaces", 100, "namespaces of the populate")
	fs.IntVar(&c.nodes, "nodes", 1000, "nodes")
	fs.IntVar(&c.secrets, "secrets", 20000, "secrets, spread over the namespaces")
	fs.IntVar(&c.pods, "pods", 20000, "pods, spread over the namespaces and nodes, each mounting a secret")
	fs.IntVar(&c.pvs, "pvs", 3000, "persistent volumes")
	fs.IntVar(&c.pvcs, "pvcs", 3000, "persistent volume claims, spread over the namespaces")
	fs.IntVar(&c.concurrency, "concurrency", 16, "workers of the populate")
	fs.IntVar(&c.rps, "rps", 50, "rate of the light load: secret GETs per second, paced (not closed-loop)")
	fs.DurationVar(&c.baseline, "baseline", 10*time.Second, "window of the light load without a snapshot, before each snapshot")
	fs.IntVar(&c.runs, "runs", 3, "snapshots to take; medians are reported")
	fs.DurationVar(&c.startTimeout, "start-timeout", time.Minute, "give up if the server is not ready by then")
	fs.DurationVar(&c.populateTimeout, "populate-timeout", 20*time.Minute, "hard limit of the populate")
	fs.DurationVar(&c.snapshotTimeout, "snapshot-timeout", 5*time.Minute, "hard limit of one snapshot")
	fs.StringVar(&c.jsonFile, "json", "", "also write the figures to this file")
	fs.DurationVar(&c.scheduled, "scheduled", 0, "measure the server's scheduled snapshots (--snapshot-schedule at this interval, which must exceed -baseline plus a snapshot) instead of `idplane snapshot save`")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.idplane == "" {
		return c, errors.New("-idplane is required")
	}
	if c.namespaces < 1 || c.nodes < 1 || c.rps < 1 || c.runs < 1 || c.concurrency < 1 {
		return c, errors.New("-namespaces, -nodes, -rps, -runs and -concurrency must be positive")
	}
	return c, nil
}

func main() { toolmain.Main(tool, parse, run) }

// figures are what one snapshot measured.
type figures struct {
	SnapshotSeconds float64 `json:"snapshotSeconds"`
	ArchiveMiB      float64 `json:"archiveMiB"`
	BaselineP50Ms   float64 `json:"baselineP50Ms"`
	BaselineP99Ms   float64 `json:"baselineP99Ms"`
	DuringP50Ms     float64 `json:"duringP50Ms"`
	DuringP99Ms     float64 `json:"duringP99Ms"`
	DuringMaxMs     float64 `json:"duringMaxMs"`
	DuringRequests  int     `json:"duringRequests"`
	Errors          int     `json:"errors"`
	LoadAverage     float64 `json:"loadAverage"`
}

type report struct {
	Objects         int       `json:"objects"`
	PopulateSeconds float64   `json:"populateSeconds"`
	PopulateErrors  int       `json:"populateErrors"`
	Runs            []figures `json:"runs"`
	Median          figures   `json:"median"`
}

func run(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp("", "snapshotload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var args []string
	if c.scheduled > 0 {
		args = []string{"--snapshot-schedule", c.scheduled.String(), "--snapshot-dir", filepath.Join(dir, "snapshots"), "--snapshot-retention=1"}
	}
	srv, err := launch.LaunchServer(ctx, launch.ServerOptions{Binary: c.idplane, Dir: dir, Timeout: c.startTimeout, Tool: tool, Args: args})
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg, err := loadclient.RESTConfig(srv.Kubeconfig, tool)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var rep report
	begin := time.Now()
	if rep.Objects, rep.PopulateErrors, err = populate(ctx, cs, c); err != nil {
		return err
	}
	rep.PopulateSeconds = time.Since(begin).Seconds()
	fmt.Printf("populated %d objects in %.1f s (%d errors)\n", rep.Objects, rep.PopulateSeconds, rep.PopulateErrors)

	load := startLightLoad(ctx, cs, c)
	defer load.stop()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "run\tsnapshot s\tarchive MiB\tbaseline p50/p99 ms\tduring p50/p99/max ms\tduring requests\terrors\tload avg\t")
	for i := range c.runs {
		measureOne := measure
		if c.scheduled > 0 {
			measureOne = measureScheduled
		}
		f, err := measureOne(ctx, c, dir, i, load)
		if err != nil {
			return err
		}
		rep.Runs = append(rep.Runs, f)
		printRow(w, fmt.Sprint(i+1), f)
	}
	rep.Median = median(rep.Runs)
	printRow(w, "median", rep.Median)
	w.Flush()
	if c.jsonFile != "" {
		return toolmain.WriteJSON(c.jsonFile, rep)
	}
	return nil
}

func printRow(w io.Writer, name string, f figures) {
	fmt.Fprintf(w, "%s\t%.2f\t%.1f\t%.1f / %.1f\t%.1f / %.1f / %.1f\t%d\t%d\t%.1f\t\n", name, f.SnapshotSeconds, f.ArchiveMiB,
		f.BaselineP50Ms, f.BaselineP99Ms, f.DuringP50Ms, f.DuringP99Ms, f.DuringMaxMs, f.DuringRequests, f.Errors, f.LoadAverage)
}

// measure waits one baseline window, then takes one snapshot with the binary as an operator
// would, and reads the light load's latencies of both windows.
func measure(ctx context.Context, c config, dir string, i int, load *lightLoad) (figures, error) {
	var f figures
	baseStart := time.Now()
	select {
	case <-time.After(c.baseline):
	case <-ctx.Done():
		return f, ctx.Err()
	}
	archive := filepath.Join(dir, fmt.Sprintf("snapshot-%d.tar", i))
	sctx, cancel := context.WithTimeout(ctx, c.snapshotTimeout)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(sctx, c.idplane, "snapshot", "save", archive, "--data-dir", filepath.Join(dir, "data")).CombinedOutput()
	end := time.Now()
	if err != nil {
		return f, fmt.Errorf("snapshot save: %w\n%s", err, out)
	}
	info, err := os.Stat(archive)
	if err != nil {
		return f, err
	}
	// Let requests started during the snapshot finish before they are read.
	time.Sleep(time.Second)
	base, baseErrs := load.window(baseStart, start)
	during, duringErrs := load.window(start, end)
	f = figures{
		SnapshotSeconds: end.Sub(start).Seconds(), ArchiveMiB: procstat.MiB(info.Size()),
		BaselineP50Ms: ms(loadphase.Percentile(base, 50)), BaselineP99Ms: ms(loadphase.Percentile(base, 99)),
		DuringP50Ms: ms(loadphase.Percentile(during, 50)), DuringP99Ms: ms(loadphase.Percentile(during, 99)),
		DuringRequests: len(during), Errors: baseErrs + duringErrs,
	}
	if len(during) > 0 {
		f.DuringMaxMs = ms(during[len(during)-1])
	}
	f.LoadAverage, _ = procstat.LoadAverage()
	return f, os.Remove(archive)
}

// measureScheduled waits for the server's next scheduled snapshot, timing it from its first
// temporary file to the last one's disappearance, and reads the light load's latencies of that
// window and of -baseline before it.
func measureScheduled(ctx context.Context, c config, dir string, _ int, load *lightLoad) (figures, error) {
	var f figures
	snapDir := filepath.Join(dir, "snapshots")
	inProgress := func() bool {
		m, _ := filepath.Glob(filepath.Join(snapDir, ".idplane-snapshot-*.tmp*"))
		return len(m) > 0
	}
	poll := func(cond func() bool, limit time.Duration) error {
		deadline := time.Now().Add(limit)
		for !cond() {
			if time.Now().After(deadline) {
				return fmt.Errorf("no scheduled snapshot change within %v", limit)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Millisecond):
			}
		}
		return nil
	}
	// Begin between two snapshots, so that the baseline before the next one holds none.
	if err := poll(func() bool { return !inProgress() }, c.snapshotTimeout); err != nil {
		return f, err
	}
	if err := poll(inProgress, c.scheduled+c.snapshotTimeout); err != nil {
		return f, err
	}
	start := time.Now()
	if err := poll(func() bool { return !inProgress() }, c.snapshotTimeout); err != nil {
		return f, err
	}
	end := time.Now()
	names, err := filepath.Glob(filepath.Join(snapDir, "idplane-snapshot-*.tar"))
	if err != nil || len(names) == 0 {
		return f, fmt.Errorf("no archive in %s after a scheduled snapshot: %v", snapDir, err)
	}
	slices.Sort(names)
	info, err := os.Stat(names[len(names)-1])
	if err != nil {
		return f, err
	}
	time.Sleep(time.Second)
	base, baseErrs := load.window(start.Add(-c.baseline), start)
	during, duringErrs := load.window(start, end)
	f = figures{
		SnapshotSeconds: end.Sub(start).Seconds(), ArchiveMiB: procstat.MiB(info.Size()),
		BaselineP50Ms: ms(loadphase.Percentile(base, 50)), BaselineP99Ms: ms(loadphase.Percentile(base, 99)),
		DuringP50Ms: ms(loadphase.Percentile(during, 50)), DuringP99Ms: ms(loadphase.Percentile(during, 99)),
		DuringRequests: len(during), Errors: baseErrs + duringErrs,
	}
	if len(during) > 0 {
		f.DuringMaxMs = ms(during[len(during)-1])
	}
	f.LoadAverage, _ = procstat.LoadAverage()
	return f, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(runs []figures) figures {
	pick := func(get func(figures) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = get(r)
		}
		return loadphase.Median(xs)
	}
	return figures{
		SnapshotSeconds: pick(func(f figures) float64 { return f.SnapshotSeconds }),
		ArchiveMiB:      pick(func(f figures) float64 { return f.ArchiveMiB }),
		BaselineP50Ms:   pick(func(f figures) float64 { return f.BaselineP50Ms }),
		BaselineP99Ms:   pick(func(f figures) float64 { return f.BaselineP99Ms }),
		DuringP50Ms:     pick(func(f figures) float64 { return f.DuringP50Ms }),
		DuringP99Ms:     pick(func(f figures) float64 { return f.DuringP99Ms }),
		DuringMaxMs:     pick(func(f figures) float64 { return f.DuringMaxMs }),
		DuringRequests:  int(pick(func(f figures) float64 { return float64(f.DuringRequests) })),
		Errors:          int(pick(func(f figures) float64 { return float64(f.Errors) })),
		LoadAverage:     pick(func(f figures) float64 { return f.LoadAverage }),
	}
}

// lightLoad GETs random secrets at a fixed rate, each request in its own goroutine, so that a
// slow answer delays no later request (no coordinated omission).
type lightLoad struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []sample
}

type sample struct {
	at      time.Time
	latency time.Duration
	failed  bool
}

func startLightLoad(ctx context.Context, cs kubernetes.Interface, c config) *lightLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &lightLoad{cancel: cancel}
	l.wg.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(c.rps))
		defer tick.Stop()
		rng := mathrand.New(mathrand.NewPCG(uint64(time.Now().UnixNano()), 1))
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			i := rng.IntN(max(c.secrets, 1))
			l.wg.Go(func() {
				start := time.Now()
				_, err := cs.CoreV1().Secrets(namespace(i, c)).Get(ctx, fmt.Sprintf("s-%d", i), metav1.GetOptions{})
				if ctx.Err() != nil {
					return
				}
				l.mu.Lock()
				l.samples = append(l.samples, sample{at: start, latency: time.Since(start), failed: err != nil})
				l.mu.Unlock()
			})
		}
	})
	return l
}

func (l *lightLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// window returns the sorted latencies of the requests started in [from, to), and how many failed.
func (l *lightLoad) window(from, to time.Time) ([]time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lat []time.Duration
	failed := 0
	for _, s := range l.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			lat = append(lat, s.latency)
			if s.failed {
				failed++
			}
		}
	}
	slices.Sort(lat)
	return lat, failed
}

func namespace(i int, c config) string { return fmt.Sprintf("ns-%d", i%c.namespaces) }

// populate creates the objects: namespaces and nodes first, then everything else by c.concurrency
// workers. It returns the count of objects created and of failures.
func populate(ctx context.Context, cs kubernetes.Interface, c config) (int, int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.populateTimeout)
	defer cancel()
	core := cs.CoreV1()
	created := 0
	for i := range c.namespaces {
		if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i)}}, metav1.CreateOptions{}); err != nil {
			return 0, 0, fmt.Errorf("creating namespace %d: %w", i, err)
		}
		created++
	}
	// Pods need their namespace's default service account, which a controller creates.
	for i := range c.namespaces {
		for {
			if _, err := core.ServiceAccounts(fmt.Sprintf("ns-%d", i)).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return 0, 0, fmt.Errorf("waiting for the default service account of ns-%d: %w", i, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	payload := make([]byte, 256)
	type step struct {
		count int
		op    func(ctx context.Context, i int) error
	}
	qty := resource.MustParse("1Gi")
	steps := []step{
		{c.nodes, func(ctx context.Context, i int) error {
			_, err := core.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}, metav1.CreateOptions{})
			return err
		}},
		{c.secrets, func(ctx context.Context, i int) error {
			_, err := core.Secrets(namespace(i, c)).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}, Data: map[string][]byte{"k": payload}}, metav1.CreateOptions{})
			return err
		}},
		{c.pvs, func(ctx context.Context, i int) error {
			_, err := core.PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%d", i)},
				Spec: corev1.PersistentVolumeSpec{
					Capacity: corev1.ResourceList{corev1.ResourceStorage: qty}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: fmt.Sprintf("/srv/pv-%d", i)}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
		{c.pvcs, func(ctx context.Context, i int) error {
			_, err := core.PersistentVolumeClaims(namespace(i, c)).Create(ctx, &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pvc-%d", i)},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: qty}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
		{c.pods, func(ctx context.Context, i int) error {
			secret := fmt.Sprintf("s-%d", i%max(c.secrets, 1))
			_, err := core.Pods(namespace(i, c)).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i)},
				Spec: corev1.PodSpec{
					NodeName:   fmt.Sprintf("node-%d", i%c.nodes),
					Containers: []corev1.Container{{Name: "c", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}}},
					Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
				},
			}, metav1.CreateOptions{})
			return err
		}},
	}
	errs := 0
	var firstErr error
	for _, s := range steps {
		if s.count == 0 {
			continue
		}
		r := loadphase.Run(ctx, c.concurrency, loadphase.Bound{Count: s.count, Limit: c.populateTimeout}, func(ctx context.Context, _ *mathrand.Rand, i int) error {
			return s.op(ctx, i)
		})
		created += len(r.Latencies) - r.Errors
		errs += r.Errors
		if firstErr == nil {
			firstErr = r.FirstError
		}
		if r.TimedOut || ctx.Err() != nil {
			return created, errs, fmt.Errorf("the populate did not finish in %v", c.populateTimeout)
		}
	}
	if errs > 0 {
		fmt.Fprintf(os.Stderr, "%s: %d creates failed; the first: %v\n", tool, errs, firstErr)
	}
	return created, errs, nil
}
