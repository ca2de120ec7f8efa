package main

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/promtext"
)

// residentMemoryMetric is the process collector's RSS gauge, which kube-apiserver and idplane
// both export on /metrics.
const residentMemoryMetric = "process_resident_memory_bytes"

// scrapeRSS reads a server's RSS from its /metrics, as the admin: the way to learn the memory of
// a server whose process the tool does not know. It fails when the admin may not read /metrics
// or the server does not export the gauge.
func scrapeRSS(ctx context.Context, admin kubernetes.Interface) (int64, error) {
	m, err := promtext.Scrape(ctx, admin.CoreV1().RESTClient())
	if err != nil {
		return 0, err
	}
	v, err := m.Value(residentMemoryMetric)
	if err != nil {
		return 0, err
	}
	return int64(v), nil
}
