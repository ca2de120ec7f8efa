// Command tokenload measures how fast a running idplane server issues service-account tokens
// (TokenRequest, serviceaccounts/token) and reviews them (TokenReview). For each concurrency level
// it runs two phases over HTTPS with the admin client certificate: clients request tokens for a
// service account the tool creates in a namespace of its own, then review the tokens they got. It
// reports requests per second, p50/p90/p99 latency and errors per phase, then deletes its
// namespace. Only loopback servers are accepted.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"os"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"

	"github.com/idplane/idplane/bench/internal/loadclient"
	"github.com/idplane/idplane/bench/internal/loadphase"
	"github.com/idplane/idplane/bench/internal/toolmain"
)

const serviceAccountName = "tokenload"

type config struct {
	kubeconfig string
	levels     []int
	count      int
	timeout    time.Duration
	audience   string
	bound      bool
	// sar adds a third phase: SubjectAccessReviews of the service account, answered by the
	// authorizers (Node, then RBAC).
	sar bool
}

func main() {
	toolmain.Main("tokenload", parseFlags, func(ctx context.Context, cfg config) error { return run(ctx, cfg, os.Stdout) })
}

func parseFlags(args []string) (config, error) {
	var cfg config
	var levels string
	fs := flag.NewFlagSet("tokenload", flag.ContinueOnError)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "./idplane-data/admin.kubeconfig", "admin kubeconfig of a running loopback idplane server")
	fs.StringVar(&levels, "concurrency", "16", "comma-separated numbers of concurrent clients, two phases each")
	fs.IntVar(&cfg.count, "count", 2000, "requests per phase")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "bound of each phase")
	fs.StringVar(&cfg.audience, "audience", "", "audience of the tokens and the reviews; empty means the server's API audiences")
	fs.BoolVar(&cfg.bound, "bound", false, "bind the tokens to a pod the tool creates (the server then also looks the pod up)")
	fs.BoolVar(&cfg.sar, "sar", false, "add a SubjectAccessReview phase: may the service account get pods in its namespace")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	var err error
	if cfg.levels, err = loadphase.ParseLevels(levels); err != nil {
		errs = append(errs, err)
	}
	if cfg.count < 1 {
		errs = append(errs, errors.New("-count must be at least 1"))
	}
	if cfg.timeout <= 0 {
		errs = append(errs, errors.New("-timeout must be positive"))
	}
	return cfg, errors.Join(errs...)
}

// subject is whom the tokens are issued for and what a review must say about them.
type subject struct {
	boundRef *authenticationv1.BoundObjectReference
	// username and podName are what a review of the tokens must report.
	username, podName string
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	restCfg, err := loadclient.RESTConfig(cfg.kubeconfig, "idplane-tokenload")
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	ns, err := loadclient.CreateNamespace(ctx, cs, "tokenload-")
	if err != nil {
		return err
	}
	defer func() {
		// The figures are taken by then: a failed clean-up only warns.
		if err := loadclient.DeleteNamespace(cs, ns); err != nil {
			fmt.Fprintln(os.Stderr, "tokenload: warning:", err)
		}
	}()
	subj, err := setUp(ctx, cs, ns, cfg.bound)
	if err != nil {
		return err
	}

	var audiences []string
	if cfg.audience != "" {
		audiences = []string{cfg.audience}
	}
	fmt.Fprintf(out, "%7s  %-12s %8s %6s %7s %7s %7s %7s %7s\n", "clients", "phase", "requests", "errors", "seconds", "req/s", "p50 ms", "p90 ms", "p99 ms")
	var failures []error
	report := func(clients int, name string, r loadphase.Result) {
		fmt.Fprintf(out, "%7d  %-12s %8d %6d %7.2f %7.0f %7.2f %7.2f %7.2f\n", clients, name, len(r.Latencies), r.Errors,
			r.Elapsed.Seconds(), r.RPS(), ms(r.Percentile(50)), ms(r.Percentile(90)), ms(r.Percentile(99)))
		if err := phaseFailure(r); err != nil {
			failures = append(failures, fmt.Errorf("%s with %d clients: %w", name, clients, err))
		}
	}
	// The algorithm follows from the server's key, which the tool cannot see: it is read from a
	// token and printed, so that figures are never attributed to the wrong key.
	alg := ""
	for _, clients := range cfg.levels {
		tokens := make([]string, cfg.count)
		issued := loadphase.Run(ctx, clients, loadphase.Bound{Count: cfg.count, Limit: cfg.timeout}, func(ctx context.Context, _ *mathrand.Rand, i int) error {
			tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, serviceAccountName, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, BoundObjectRef: subj.boundRef},
			}, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("requesting a token for %s/%s: %w", ns, serviceAccountName, err)
			}
			tokens[i] = tr.Status.Token
			return nil
		})
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("TokenRequest with %d clients: %w", clients, err)
		}
		got := nonEmpty(tokens)
		if alg == "" && len(got) > 0 {
			if alg, err = signingAlgorithm(got[0]); err != nil {
				return err
			}
		}
		report(clients, "TokenRequest", issued)
		if len(got) == 0 {
			return errors.Join(append(failures, errors.New("no token was issued, nothing to review"))...)
		}

		reviewed := loadphase.Run(ctx, clients, loadphase.Bound{Count: cfg.count, Limit: cfg.timeout}, func(ctx context.Context, _ *mathrand.Rand, i int) error {
			tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
				Spec: authenticationv1.TokenReviewSpec{Token: got[i%len(got)], Audiences: audiences},
			}, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("reviewing a token: %w", err)
			}
			return checkReview(tr.Status, subj)
		})
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("TokenReview with %d clients: %w", clients, err)
		}
		report(clients, "TokenReview", reviewed)

		if cfg.sar {
			sars := loadphase.Run(ctx, clients, loadphase.Bound{Count: cfg.count, Limit: cfg.timeout}, func(ctx context.Context, _ *mathrand.Rand, _ int) error {
				return accessReview(ctx, cs, ns, subj)
			})
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("SubjectAccessReview with %d clients: %w", clients, err)
			}
			report(clients, "SAR", sars)
		}
	}
	fmt.Fprintf(out, "tokens signed with %s\n", alg)
	return errors.Join(failures...)
}

// setUp creates the service account and, for bound tokens, a pod that runs as it. The service
// account comes first: admission may refuse a pod whose service account does not exist yet.
func setUp(ctx context.Context, cs kubernetes.Interface, ns string, bound bool) (subject, error) {
	subj := subject{username: serviceaccount.MakeUsername(ns, serviceAccountName)}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccountName}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return subj, fmt.Errorf("creating service account %s/%s: %w", ns, serviceAccountName, err)
	}
	if !bound {
		return subj, nil
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tokenload"},
		Spec: corev1.PodSpec{
			ServiceAccountName: serviceAccountName,
			// Nothing runs the pod: it only exists for tokens to be bound to.
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	created, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return subj, fmt.Errorf("creating pod %s/%s: %w", ns, pod.Name, err)
	}
	subj.boundRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: created.Name, UID: created.UID}
	subj.podName = created.Name
	return subj, nil
}

// accessReview asks whether the service account may get pods in its namespace. Nothing grants it,
// so every authorizer is asked and each has no opinion: the answer must be a plain "no".
func accessReview(ctx context.Context, cs kubernetes.Interface, ns string, subj subject) error {
	r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               subj.username,
		Groups:             serviceaccount.MakeGroupNames(ns),
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("reviewing access: %w", err)
	}
	if r.Status.Allowed || r.Status.Denied || r.Status.EvaluationError != "" {
		return fmt.Errorf("access review answered %+v, want not allowed, not denied, no error", r.Status)
	}
	return nil
}

// checkReview says whether a review recognised a token as one of subj's.
func checkReview(st authenticationv1.TokenReviewStatus, subj subject) error {
	if !st.Authenticated {
		if st.Error != "" {
			return fmt.Errorf("token not authenticated: %s", st.Error)
		}
		return errors.New("token not authenticated")
	}
	if st.User.Username != subj.username {
		return fmt.Errorf("token authenticated as %q, want %q", st.User.Username, subj.username)
	}
	if subj.podName != "" {
		if pods := st.User.Extra[serviceaccount.PodNameKey]; len(pods) != 1 || pods[0] != subj.podName {
			return fmt.Errorf("token authenticated for pod %q, want %q", pods, subj.podName)
		}
	}
	return nil
}

// phaseFailure says why a phase's figures are not to be trusted, or nil.
func phaseFailure(r loadphase.Result) error {
	var reasons []string
	if r.TimedOut {
		reasons = append(reasons, "hit -timeout before -count")
	}
	if r.Errors > 0 {
		reasons = append(reasons, fmt.Sprintf("%d errors, first: %v", r.Errors, r.FirstError))
	}
	if len(reasons) == 0 {
		return nil
	}
	return errors.New(strings.Join(reasons, "; "))
}

// signingAlgorithm reads the "alg" of a compact JWS header; the signature is not verified.
func signingAlgorithm(token string) (string, error) {
	header, _, ok := strings.Cut(token, ".")
	if !ok {
		return "", errors.New("issued token is not a compact JWS")
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return "", fmt.Errorf("decoding the header of an issued token: %w", err)
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", fmt.Errorf("parsing the header of an issued token: %w", err)
	}
	if h.Alg == "" {
		return "", errors.New("issued token names no signing algorithm")
	}
	return h.Alg, nil
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
