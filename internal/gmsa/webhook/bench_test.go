package webhook

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idplane/idplane/internal/gmsa"
)

// BenchmarkHTTPSAdmissionReview is the webhook's load run: AdmissionReviews per second over real
// HTTPS (HTTP/2, as the API server's client speaks) from 2 and from 32 concurrent callers, with
// their p50 and p99 latencies (which, at 32, are mostly queueing). Specs and use are answered from memory, so the figures are the webhook's
// own cost (TLS, decoding, expander or authorizer, encoding); in a cluster each review adds its
// round trips to the API server (a GET per spec, a LocalSubjectAccessReview per spec and user).
//
//	go test -run '^$' -bench HTTPSAdmissionReview ./internal/gmsa/webhook/
func BenchmarkHTTPSAdmissionReview(b *testing.B) {
	pod := newPod(onApp("webapp1", ""))
	expanded := newPod(onApp("webapp1", webapp1Compact))
	for _, bc := range []struct {
		name, path string
		body       []byte
		opts       Options
	}{
		{"mutate", "/mutate", reviewOf(create(pod)), Options{RandomHostname: true}},
		{"validate", "/validate", reviewOf(create(expanded)), Options{Options: gmsa.Options{AuthorizeRequester: true}}},
		{"pod without GMSA", "/validate", reviewOf(create(newPod())), Options{}},
	} {
		for _, callers := range []int{2, 32} {
			b.Run(fmt.Sprintf("%s/callers=%d", bc.name, callers), func(b *testing.B) {
				benchReviews(b, bc.path, bc.body, bc.opts, callers)
			})
		}
	}
}

// benchReviews posts body to path from callers goroutines, b.N times in all.
func benchReviews(b *testing.B, path string, body []byte, opts Options, callers int) {
	quietLogs(b)
	url, client := startServer(b, memHandler(opts), newTestPKI(b))
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = callers
	// One review first, so that the handshake is not timed.
	if code, proto := postBench(b, client, url+path, body); code != http.StatusOK || proto != "HTTP/2.0" {
		b.Fatalf("HTTP %d over %s, want 200 over HTTP/2.0", code, proto)
	}
	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range callers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				start := time.Now()
				if code, _ := postBench(b, client, url+path, body); code != http.StatusOK {
					b.Errorf("HTTP %d", code)
					return
				}
				latencies[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reviews/s")
	b.ReportMetric(float64(latencies[b.N/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(latencies[b.N*99/100].Microseconds()), "p99-µs")
}

// postBench posts a review and reads the answer; it returns the HTTP status and protocol.
func postBench(b *testing.B, client *http.Client, url string, body []byte) (int, string) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Error(err)
	}
	return resp.StatusCode, resp.Proto
}
