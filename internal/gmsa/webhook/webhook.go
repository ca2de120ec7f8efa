// Package webhook serves the GMSA expander and authorizer of package gmsa as admission webhooks
// for any Kubernetes cluster (idplane gmsa-webhook): AdmissionReview v1 over HTTPS at /mutate
// (the expander, answering with a JSON Patch) and /validate (the authorizer, also on pods/status
// and pods/binding, which write a pod's annotations), and /health.
// GMSACredentialSpecs are read from the cluster with the dynamic client and use is asked with
// LocalSubjectAccessReviews (cluster.go); the TLS certificate is reloaded when its files change
// (server.go).
//
// A request the webhook cannot read as an AdmissionReview is answered with an HTTP error (405,
// 415, 413, 400) and a message; a request it can read is always answered 200 with an
// AdmissionReview, whose response refuses with the GMSA logic's status (422, 403, 400, or 500 when
// a lookup failed), as the API server expects of webhooks.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"

	"github.com/idplane/idplane/internal/gmsa"
)

// Options are the cluster admin's choices.
type Options struct {
	gmsa.Options
	// RandomHostname gives a pod being created that names a credential spec and sets no
	// spec.hostname a random one that fits a NetBIOS computer name (see hostnameLength), as the
	// public GMSA webhook offers.
	RandomHostname bool
}

// Handler answers AdmissionReviews at /mutate and /validate, and /health.
type Handler struct {
	expander   *gmsa.Expander
	authorizer *gmsa.Authorizer
	opts       Options
	mux        *http.ServeMux
}

// NewHandler returns a handler looking specs up in specs and asking use of use.
func NewHandler(specs gmsa.CredSpecs, use gmsa.UseChecker, opts Options) *Handler {
	h := &Handler{
		expander:   gmsa.NewExpander(specs, opts.Options),
		authorizer: gmsa.NewAuthorizer(specs, use, opts.Options),
		opts:       opts,
		mux:        http.NewServeMux(),
	}
	// Method patterns make the mux answer other methods with 405 and an Allow header.
	h.mux.Handle("POST /mutate", h.review("mutate", h.mutate))
	h.mux.Handle("POST /validate", h.review("validate", h.validate))
	h.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// review reads the AdmissionReview of r, has decide answer it, and writes the answer. The
// request's context bounds decide's lookups: the API server drops the connection when its
// timeoutSeconds are up.
func (h *Handler) review(name string, decide func(context.Context, *admissionRequest) *admissionv1.AdmissionResponse) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, bad := readReview(w, r)
		if bad != nil {
			klog.V(1).InfoS("Refused a malformed AdmissionReview", "path", name, "remote", r.RemoteAddr, "code", bad.code, "reason", bad.msg)
			http.Error(w, bad.msg, bad.code)
			return
		}
		resp := decide(r.Context(), req)
		resp.UID = req.uid
		logDecision(name, req, resp)
		body, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: reviewVersion.GroupVersion().String(), Kind: reviewVersion.Kind},
			Response: resp,
		})
		if err != nil {
			klog.ErrorS(err, "Encoding an AdmissionReview response", "path", name, "uid", req.uid)
			http.Error(w, "encoding the AdmissionReview response: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// readReview checks the content type, reads at most maxReviewBytes and decodes the review.
func readReview(w http.ResponseWriter, r *http.Request) (*admissionRequest, *badReview) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return nil, &badReview{code: http.StatusUnsupportedMediaType, msg: "Content-Type is " + strconv.Quote(ct) + ", want application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, &badReview{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("the AdmissionReview is larger than %d MiB", maxReviewBytes>>20)}
		}
		return nil, badRequest("reading the AdmissionReview: %v", err)
	}
	return decodeReview(body)
}

// mutate runs the expander and answers with a patch of what it filled in, plus, with
// RandomHostname, a hostname for a new GMSA pod without one.
func (h *Handler) mutate(ctx context.Context, req *admissionRequest) *admissionv1.AdmissionResponse {
	pod := req.Pod
	if pod == nil {
		return allowed(nil)
	}
	was := snapshot(pod)
	if err := h.expander.Expand(ctx, req.Request); err != nil {
		return denied(err)
	}
	ops := was.changes(pod)
	if h.opts.RandomHostname && req.Operation == admission.Create && req.Subresource == "" &&
		pod.Spec.Hostname == "" && namesGMSA(pod, h.opts.AlphaAnnotations) {
		ops = append(ops, add("/spec/hostname", randomHostname()))
	}
	if len(ops) == 0 {
		return allowed(nil)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return denied(err)
	}
	return allowed(patch)
}

// validate runs the authorizer, on a pod or on a binding's annotations.
func (h *Handler) validate(ctx context.Context, req *admissionRequest) *admissionv1.AdmissionResponse {
	if req.binding != nil {
		if err := h.authorizer.AuthorizeBinding(req.binding); err != nil {
			return denied(err)
		}
		return allowed(nil)
	}
	if req.Pod == nil {
		return allowed(nil)
	}
	if err := h.authorizer.Authorize(ctx, req.Request); err != nil {
		return denied(err)
	}
	return allowed(nil)
}

// logDecision logs refusals (lookups that failed as errors, since they refuse pods that may well
// be fine) and, at -v=2, every decision.
func logDecision(path string, req *admissionRequest, resp *admissionv1.AdmissionResponse) {
	kv := []any{"path", path, "uid", req.uid}
	if req.Pod != nil {
		kv = append(kv, "namespace", req.Namespace, "pod", podName(req), "operation", req.Operation, "subresource", req.Subresource)
	}
	switch {
	case resp.Allowed:
		klog.V(2).InfoS("Allowed", append(kv, "patched", len(resp.Patch) > 0)...)
	case resp.Result.Code >= http.StatusInternalServerError:
		klog.ErrorS(errors.New(resp.Result.Message), "Refused: the GMSA logic could not decide", kv...)
	default:
		klog.InfoS("Refused", append(kv, "code", resp.Result.Code, "reason", resp.Result.Message)...)
	}
}

// podName is the pod's name, or its generateName prefix when the API server has not named it yet.
func podName(req *admissionRequest) string {
	if req.Pod.Name != "" {
		return req.Pod.Name
	}
	return req.Pod.GenerateName
}
