package main

import (
	"slices"

	"github.com/idplane/idplane/bench/internal/loadphase"
)

// kindPodCertificateRequest is the recorder's kind of an agent creating a PodCertificateRequest.
const kindPodCertificateRequest = "podcertificaterequest create"

// podCertFigures measure the pods' certificates when every pod carries a podCertificate source:
// how many PodCertificateRequests the agents created, and how fast the pods' files were written.
// A pod's files count as written when the admin sees its CredentialsReady condition True: the
// agent sets it once it wrote every volume of the pod, the credential bundle among them.
type podCertFigures struct {
	Signer string `json:"signer"`
	// Requests are the PodCertificateRequests the agents created successfully over the whole
	// level; RequestsPerPod divides them by the level's pods (1 when no pod asked twice).
	Requests       int     `json:"requests"`
	RequestsPerPod float64 `json:"requestsPerPod"`
	// PodsWithFiles are the pods seen CredentialsReady; PodsPerSecond divides them by the
	// start-up (the first node's start to the last pod's files, or to the ready timeout).
	PodsWithFiles int     `json:"podsWithFiles"`
	PodsPerSecond float64 `json:"podsPerSecond"`
	// P50Ms, P99Ms and MaxMs are the times from a pod's node starting (its pods are bound before)
	// to the pod's CredentialsReady.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// podCertificates gathers the level's pod certificate figures; nil without -pod-certificate.
func podCertificates(cfg config, p plan, rec *recorder, tracker *readiness, startupSeconds float64) *podCertFigures {
	if cfg.podCertificate == "" {
		return nil
	}
	f := &podCertFigures{Signer: cfg.podCertificate, Requests: rec.successes(kindPodCertificateRequest)}
	if p.pods() > 0 {
		f.RequestsPerPod = float64(f.Requests) / float64(p.pods())
	}
	lat := tracker.startToReady()
	slices.Sort(lat)
	f.PodsWithFiles = len(lat)
	if startupSeconds > 0 {
		f.PodsPerSecond = float64(len(lat)) / startupSeconds
	}
	f.P50Ms, f.P99Ms = ms(loadphase.Percentile(lat, 50)), ms(loadphase.Percentile(lat, 99))
	if len(lat) > 0 {
		f.MaxMs = ms(lat[len(lat)-1])
	}
	return f
}

// successes counts the requests of a kind that succeeded, over every phase.
func (r *recorder) successes(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int
	for _, kinds := range r.byPhase {
		if s := kinds[kind]; s != nil {
			n += len(s.latencies) - s.errors
		}
	}
	return n
}
