// Package tokens keeps the service-account tokens of projected serviceAccountToken volumes: it
// asks the API server for a token bound to the pod, reuses it until it is due for refresh (80 %
// of its lifetime or 24 hours, whichever comes first), keeps serving it while refreshes fail and
// it has not expired, and backs off between failed requests. It writes nothing; the agent puts
// the tokens into the volumes and re-syncs a pod at NextRefresh.
package tokens

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

const (
	// DefaultExpirationSeconds is a projection's token lifetime when it names none, as the API
	// defaults it.
	DefaultExpirationSeconds = 3600
	// refreshFraction of a token's issued lifetime is the age at which it is refreshed.
	refreshFraction = 0.8
	// maxRefreshAge is the age at which even a long-lived token is refreshed.
	maxRefreshAge = 24 * time.Hour
	// initialBackoff is the wait after the first failed request; it doubles with each further
	// failure up to maxBackoff. The cap is the shortest refresh window the API allows (20 % of
	// the 10-minute minimum lifetime), so a failing refresh is retried at least once before
	// even the shortest token runs out; the wait never goes past the old token's expiry either.
	initialBackoff = time.Second
	backoffFactor  = 2
	maxBackoff     = 2 * time.Minute
)

// Requester asks the API server for a token (client-go:
// CoreV1().ServiceAccounts(ns).CreateToken).
type Requester interface {
	CreateToken(ctx context.Context, namespace, serviceAccount string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// Manager caches the tokens of every pod on the node. It is safe for concurrent use.
type Manager struct {
	req Requester
	clk clock.PassiveClock

	mu   sync.Mutex // guards pods and every entry's state
	pods map[types.UID]map[key]*entry
}

// key tells apart the tokens of one pod: one per distinct request.
type key struct {
	serviceAccount    string
	audience          string
	expirationSeconds int64
}

// entry is one cached token and its refresh state.
type entry struct {
	// fetch is held while a request for this key is in flight, so that callers racing on an
	// expiring token make one request, not one each. It is taken before Manager.mu, never while
	// holding it.
	fetch sync.Mutex

	token     string
	refreshAt time.Time // zero without a token
	expiresAt time.Time

	// After a failed request: when the next may be made, the wait that led there, and the error.
	retryAt time.Time
	backoff time.Duration
	lastErr error
}

// New returns a Manager asking r for tokens and reading the time from clk.
func New(r Requester, clk clock.PassiveClock) *Manager {
	return &Manager{req: r, clk: clk, pods: map[types.UID]map[key]*entry{}}
}

// Token returns a token for one serviceAccountToken source of pod: a TokenRequest bound to the
// pod with the source's audience (none when empty: the server uses its API audiences) and
// expirationSeconds (default 3600). A cached token is reused until it is due for refresh. When a
// request fails, the old token is returned with a nil error while it has not expired, and no
// request is made for that token until the backoff has passed; without a usable old token the
// error is returned.
func (m *Manager) Token(ctx context.Context, pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	if pod == nil || source == nil {
		return nil, errors.New("token: pod and source are required")
	}
	if pod.UID == "" || pod.Namespace == "" || pod.Name == "" {
		return nil, fmt.Errorf("token for pod %s/%s: the pod has no namespace, name or UID", pod.Namespace, pod.Name)
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		return nil, fmt.Errorf("token for pod %s/%s: the pod names no service account", pod.Namespace, pod.Name)
	}
	k := key{serviceAccount: sa, audience: source.Audience, expirationSeconds: DefaultExpirationSeconds}
	if source.ExpirationSeconds != nil {
		k.expirationSeconds = *source.ExpirationSeconds
	}

	e := m.entry(pod.UID, k)
	e.fetch.Lock()
	defer e.fetch.Unlock()

	m.mu.Lock()
	now := m.clk.Now()
	tok, valid := e.usable(now)
	switch {
	case valid && now.Before(e.refreshAt):
		m.mu.Unlock()
		return tok, nil
	case now.Before(e.retryAt):
		err := e.lastErr
		retryAt := e.retryAt
		m.mu.Unlock()
		if valid {
			return tok, nil
		}
		return nil, fmt.Errorf("token for service account %s/%s of pod %s: next request at %s, last one failed: %w",
			pod.Namespace, sa, pod.Name, retryAt.UTC().Format(time.RFC3339), err)
	}
	m.mu.Unlock()

	requestedAt := now
	issued, err := m.request(ctx, pod, k)

	m.mu.Lock()
	defer m.mu.Unlock()
	now = m.clk.Now()
	if err == nil {
		err = e.store(issued, requestedAt)
	}
	if err == nil {
		return []byte(e.token), nil
	}
	err = fmt.Errorf("token for service account %s/%s of pod %s: %w", pod.Namespace, sa, pod.Name, err)
	// A request cut short by the caller says nothing about the server: no backoff for it.
	if ctx.Err() == nil {
		e.failed(now, err)
	}
	if tok, valid := e.usable(now); valid {
		return tok, nil
	}
	return nil, err
}

// entry returns the entry of a pod's token, creating it.
func (m *Manager) entry(uid types.UID, k key) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	tokens := m.pods[uid]
	if tokens == nil {
		tokens = map[key]*entry{}
		m.pods[uid] = tokens
	}
	e := tokens[k]
	if e == nil {
		e = &entry{}
		tokens[k] = e
	}
	return e
}

// request asks the server for a token bound to pod.
func (m *Manager) request(ctx context.Context, pod *corev1.Pod, k key) (*authenticationv1.TokenRequest, error) {
	exp := k.expirationSeconds
	tr := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &exp,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       pod.Name,
				UID:        pod.UID,
			},
		},
	}
	if k.audience != "" {
		tr.Spec.Audiences = []string{k.audience}
	}
	out, err := m.req.CreateToken(ctx, pod.Namespace, k.serviceAccount, tr)
	if err != nil {
		return nil, fmt.Errorf("requesting token: %w", err)
	}
	return out, nil
}

// usable is the cached token while it has not expired at now.
func (e *entry) usable(now time.Time) ([]byte, bool) {
	if e.token == "" || !now.Before(e.expiresAt) {
		return nil, false
	}
	return []byte(e.token), true
}

// store caches an issued token requested at requestedAt. Its lifetime is what the server issued
// (it may have shortened or lengthened the request), measured from the request.
func (e *entry) store(tr *authenticationv1.TokenRequest, requestedAt time.Time) error {
	if tr == nil || tr.Status.Token == "" {
		return errors.New("the server returned no token")
	}
	exp := tr.Status.ExpirationTimestamp.Time
	if !exp.After(requestedAt) {
		return fmt.Errorf("the server returned a token expiring at %s, not after the request", exp.UTC().Format(time.RFC3339))
	}
	lifetime := exp.Sub(requestedAt)
	e.token = tr.Status.Token
	e.expiresAt = exp
	e.refreshAt = requestedAt.Add(min(time.Duration(float64(lifetime)*refreshFraction), maxRefreshAge))
	e.retryAt, e.backoff, e.lastErr = time.Time{}, 0, nil
	return nil
}

// failed records a failed request at now and sets when the next may be made.
func (e *entry) failed(now time.Time, err error) {
	if e.backoff == 0 {
		e.backoff = initialBackoff
	} else {
		e.backoff = min(e.backoff*backoffFactor, maxBackoff)
	}
	e.retryAt = now.Add(e.backoff)
	if _, valid := e.usable(now); valid && e.expiresAt.Before(e.retryAt) {
		e.retryAt = e.expiresAt
	}
	e.lastErr = err
}

// next is when the entry next needs a request: the end of its backoff after a failure, else
// its token's refresh time; zero when neither is known.
func (e *entry) next() time.Time {
	if !e.retryAt.IsZero() {
		return e.retryAt
	}
	return e.refreshAt
}

// NextRefresh is the earliest time any cached token of the pod needs refreshing (or a backoff
// ends), zero when there is none: the agent re-syncs the pod then, so nothing polls.
func (m *Manager) NextRefresh(podUID types.UID) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var earliest time.Time
	for _, e := range m.pods[podUID] {
		t := e.next()
		if !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest = t
		}
	}
	return earliest
}

// Forget drops every token of a pod (deleted pod). A request in flight for it finishes but its
// token is not kept.
func (m *Manager) Forget(podUID types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, podUID)
}

// Adopt caches a token the agent wrote before it restarted, so that a restart does not replace
// every pod's token: it is taken only when nothing is cached for the source yet and its claims
// say it is bound to this pod, names the source's audience, and is not yet due for refresh. The
// token's signature is not checked: the agent wrote the file itself, and whoever is handed the
// token checks it. It reports whether the token was taken.
func (m *Manager) Adopt(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection, token []byte) bool {
	if pod == nil || source == nil || pod.UID == "" || pod.Spec.ServiceAccountName == "" {
		return false
	}
	c, err := parseClaims(token)
	if err != nil || c.Kubernetes.Pod == nil || types.UID(c.Kubernetes.Pod.UID) != pod.UID ||
		c.Kubernetes.Namespace != pod.Namespace || c.Kubernetes.ServiceAccount == nil ||
		c.Kubernetes.ServiceAccount.Name != pod.Spec.ServiceAccountName {
		return false
	}
	if source.Audience != "" && !c.Audience.has(source.Audience) {
		return false
	}
	issued, expires := time.Unix(c.IssuedAt, 0), time.Unix(c.Expiry, 0)
	if !expires.After(issued) {
		return false
	}
	k := key{serviceAccount: pod.Spec.ServiceAccountName, audience: source.Audience, expirationSeconds: DefaultExpirationSeconds}
	if source.ExpirationSeconds != nil {
		k.expirationSeconds = *source.ExpirationSeconds
	}
	refreshAt := issued.Add(min(time.Duration(float64(expires.Sub(issued))*refreshFraction), maxRefreshAge))
	e := m.entry(pod.UID, k)
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.token != "" || !m.clk.Now().Before(refreshAt) {
		return false
	}
	e.token, e.expiresAt, e.refreshAt = string(token), expires, refreshAt
	return true
}

// claims are the parts of a bound service-account token Adopt looks at.
type claims struct {
	IssuedAt   int64    `json:"iat"`
	Expiry     int64    `json:"exp"`
	Audience   audience `json:"aud"`
	Kubernetes struct {
		Namespace      string `json:"namespace"`
		ServiceAccount *struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
		Pod *struct {
			UID string `json:"uid"`
		} `json:"pod"`
	} `json:"kubernetes.io"`
}

// audience is a JWT "aud": one string or a list.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

func (a audience) has(s string) bool { return slices.Contains(a, s) }

func parseClaims(token []byte) (*claims, error) {
	parts := strings.Split(strings.TrimSpace(string(token)), ".")
	if len(parts) != 3 {
		return nil, errors.New("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("decoding JWT payload: %w", err)
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("decoding JWT claims: %w", err)
	}
	return &c, nil
}
