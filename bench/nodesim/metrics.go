package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// residentMemoryMetric is the process collector's RSS gauge, which kube-apiserver and idplane
// both export on /metrics.
const residentMemoryMetric = "process_resident_memory_bytes"

// scrapeRSS reads a server's RSS from its /metrics, as the admin: the way to learn the memory of
// a server whose process the tool does not know. It fails when the admin may not read /metrics
// or the server does not export the gauge.
func scrapeRSS(ctx context.Context, admin kubernetes.Interface) (int64, error) {
	body, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading /metrics: %w", err)
	}
	return parseRSS(body)
}

// parseRSS finds the resident memory gauge in a Prometheus text exposition.
func parseRSS(body []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || name != residentMemoryMetric {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s %q: %w", residentMemoryMetric, value, err)
		}
		return int64(v), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/metrics has no %s", residentMemoryMetric)
}
