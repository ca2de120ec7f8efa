package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// report is the JSON file: the configuration and every level's figures.
type report struct {
	Config map[string]string `json:"config"`
	Levels []levelResult     `json:"levels"`
}

// summaryKinds are the request kinds the summary table shows one by one.
var summaryKinds = []string{"lease update", "node status", "token request", "pod status"}

func printLevel(w io.Writer, r levelResult) {
	fmt.Fprintf(w, "== %s, %d nodes, %d pods, %d open watches: setup %d objects in %.1f s, %d/%d nodes ready after %.1f s\n",
		targetName(r), r.Nodes, r.Pods, r.Watches, r.Setup.Objects, r.Setup.Seconds, r.Ready, r.Nodes, r.StartupSeconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "phase\tkind\trequests\terrors\treq/s\tp50 ms\tp99 ms\tmax ms\t\n")
	for _, ph := range []struct {
		name string
		f    phaseFigures
	}{{phaseStartup, r.Startup}, {phaseSteady, r.Steady}} {
		for _, k := range append(ph.f.Kinds, ph.f.All) {
			if k.Requests == 0 && k.Kind == "all" && ph.f.Seconds == 0 {
				continue
			}
			kind := k.Kind
			if k.Watch {
				kind += " (to headers)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.1f\t\n", ph.name, kind, k.Requests, k.Errors, k.RPS, k.P50Ms, k.P99Ms, k.MaxMs)
		}
	}
	tw.Flush()
	if len(r.Servers) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "process\tidle RSS MiB (objects only)\tRSS MiB (end)\tpeak RSS MiB\tCPU %% of a core\t\n")
		for i, p := range r.Servers {
			fmt.Fprintf(tw, "server %d\t%.0f\t%.0f\t%.0f\t%s\t\n", i, p.IdleRSSMiB, p.RSSMiB, p.PeakRSSMiB, figure(p.CPUPercent))
		}
		for i, p := range r.Etcd {
			fmt.Fprintf(tw, "etcd %d\t%.0f\t%.0f\t%.0f\t%s\t\n", i, p.IdleRSSMiB, p.RSSMiB, p.PeakRSSMiB, figure(p.CPUPercent))
		}
		fmt.Fprintf(tw, "nodesim (client)\t\t%.0f\t\t%.0f\t\n", r.ClientRSSMiB, r.ClientCPUPercent)
		tw.Flush()
	}
	fmt.Fprintf(w, "server memory (%s): %s KiB per node, %s KiB per open watch\n", r.MemoryNote, figure(r.ServerRSSPerNodeKiB), figure(r.ServerRSSPerWatchKiB))
	printHeld(w, r)
	if r.ClientRSSPerNodeKiB != nil {
		fmt.Fprintf(w, "nodesim's own memory: %.0f MiB before the nodes, %.0f MiB at the end: %.0f KiB per simulated node; %d goroutines\n",
			r.ClientIdleRSSMiB, r.ClientRSSMiB, *r.ClientRSSPerNodeKiB, r.ClientGoroutines)
	}
	if c := r.PodCertificates; c != nil {
		fmt.Fprintf(w, "pod certificates (%s): %d PodCertificateRequests created (%.2f per pod); %d pods with files at %.1f pods/s over the start-up; node start → files p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
			c.Signer, c.Requests, c.RequestsPerPod, c.PodsWithFiles, c.PodsPerSecond, c.P50Ms, c.P99Ms, c.MaxMs)
	}
	fmt.Fprintf(w, "machine load average (1 min): %.2f at the start of the window, %.2f at its end\n", r.LoadAverage[0], r.LoadAverage[1])
	for _, s := range r.SlowSeconds {
		fmt.Fprintf(w, "slow requests in second %d of the window: %d %v\n", s.Second, s.Requests, s.Kinds)
	}
	if r.LogDir != "" {
		fmt.Fprintf(w, "logs: %s\n", r.LogDir)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error (%d×): %s\n", e.Count, e.Message)
	}
	verdict := "FAIL"
	if r.Pass {
		verdict = "PASS"
	}
	fmt.Fprintf(w, "%s: %s\n\n", verdict, r.Verdict)
}

func printSummary(w io.Writer, results []levelResult, threshold time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"target", "nodes", "pods", "watches", "req/s", "p50 ms", "p99 ms"}
	for _, k := range summaryKinds {
		header = append(header, k+" p50/p99")
	}
	header = append(header, "server RSS MiB", "KiB/node", "KiB/watch", "watches/node", "live KiB/node", "live KiB/watch", "live×GC KiB/node", "etcd RSS MiB", "server CPU %", "client CPU %", fmt.Sprintf("p99 < %s", threshold))
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range results {
		row := []string{targetName(r), fmt.Sprint(r.Nodes), fmt.Sprint(r.Pods), fmt.Sprint(r.Watches),
			fmt.Sprintf("%.0f", r.Steady.All.RPS), fmt.Sprintf("%.1f", r.Steady.All.P50Ms), fmt.Sprintf("%.1f", r.Steady.All.P99Ms)}
		for _, name := range summaryKinds {
			cell := "-"
			for _, k := range r.Steady.Kinds {
				if k.Kind == name {
					cell = fmt.Sprintf("%.1f/%.1f", k.P50Ms, k.P99Ms)
				}
			}
			row = append(row, cell)
		}
		row = append(row, joinFigures(r.Servers, func(p procFigures) *float64 { return &p.RSSMiB }),
			figure(r.ServerRSSPerNodeKiB), figure(r.ServerRSSPerWatchKiB),
			fmt.Sprintf("%.1f", float64(r.Watches)/float64(max(r.Nodes, 1))),
			heldFigure(r.Held, func(h *heldFigures) *float64 { return &h.PerNodeKiB }),
			heldFigure(r.Held, func(h *heldFigures) *float64 { return h.PerWatchKiB }),
			heldFigure(r.Held, func(h *heldFigures) *float64 { return &h.RSSPerNodeKiB }),
			joinFigures(r.Etcd, func(p procFigures) *float64 { return &p.RSSMiB }),
			joinFigures(r.Servers, func(p procFigures) *float64 { return p.CPUPercent }),
			fmt.Sprintf("%.0f", r.ClientCPUPercent))
		verdict := "no"
		if r.Pass {
			verdict = "yes"
		}
		row = append(row, verdict)
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

// printHeld says what the nodes' connections and watches held on the servers, or why it is not
// known.
func printHeld(w io.Writer, r levelResult) {
	h := r.Held
	if h == nil {
		if r.HeldNote != "" {
			fmt.Fprintf(w, "server live memory held by the nodes: %s\n", r.HeldNote)
		}
		return
	}
	fmt.Fprintf(w, "server live memory held by the nodes' connections and watches (heap + stacks in use after a forced GC, nodes running less nodes stopped; what they stored is in both): "+
		"%.1f MiB heap + %.1f MiB stacks: %.1f KiB per node (%.1f watches per node), %s KiB per watch; "+
		"as RSS sees it (the heap goal's difference plus the stacks', × %s of the live figure; the goal is %.2f× the live heap): %.1f KiB per node, %s KiB per watch; "+
		"%.0f watches above the servers' baseline, %s\n",
		h.HeapMiB, h.StacksMiB, h.PerNodeKiB, h.WatchesPerNode, figure1(h.PerWatchKiB), figure2(h.Headroom), h.GoalRatio, h.RSSPerNodeKiB, figure1(h.RSSPerWatchKiB), h.ServerWatches, r.HeldNote)
}

// heldFigure shows one of the held figures, "n/a" without them.
func heldFigure(h *heldFigures, f func(*heldFigures) *float64) string {
	if h == nil {
		return "n/a"
	}
	return figure(f(h))
}

// figure1 is figure with one decimal.
func figure1(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", *v)
}

// figure2 is figure with two decimals.
func figure2(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *v)
}

// joinFigures shows one figure per process, slash-separated; "-" for none.
func joinFigures(procs []procFigures, f func(procFigures) *float64) string {
	if len(procs) == 0 {
		return "-"
	}
	parts := make([]string, len(procs))
	for i, p := range procs {
		parts[i] = figure(f(p))
	}
	return strings.Join(parts, "/")
}

// figure shows a figure the tool may not know: "n/a" when it does not.
func figure(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", *v)
}

// targetName is how the output names a level's server(s).
func targetName(r levelResult) string {
	if r.Target == "started" {
		return fmt.Sprintf("%d replica(s)", r.Replicas)
	}
	return r.Target
}
