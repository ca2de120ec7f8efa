package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// apiClient speaks plain HTTP to one server as the admin, so a test sees every status code and
// bounds every request itself: client-go would retry some 5xx answers on its own.
type apiClient struct {
	url  string
	http *http.Client
}

// newAPIClient gives up on a request after timeout, reporting it as unanswered.
func newAPIClient(t *testing.T, s *server, timeout time.Duration) *apiClient {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatalf("loading admin kubeconfig %s: %v", s.Kubeconfig, err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("building admin HTTP client: %v", err)
	}
	hc.Timeout = timeout
	return &apiClient{url: s.URL, http: hc}
}

// do sends body as JSON (when not nil) with the given content type and returns the status code
// and the answer; err means no answer came.
func (c *apiClient) do(method, path, contentType string, body any) (int, []byte, error) {
	var in io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		in = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, c.url+path, in)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer to %s %s: %w", method, path, err)
	}
	return resp.StatusCode, out, nil
}

// ledgerLabel marks the config maps a ledger created, so listing them leaves others out.
const ledgerLabel = "e2e-ledger"

// ledger records the config maps a test asked servers to create. What a server acknowledged
// (201) must be stored; what it did not may or may not be; and whatever is stored must be
// exactly what was sent.
type ledger struct {
	mu    sync.Mutex
	sent  map[string]map[string]string
	acked map[string]bool
}

func newLedger() *ledger {
	return &ledger{sent: map[string]map[string]string{}, acked: map[string]bool{}}
}

// ledgerData is the content sent for a name: a few kilobytes that a torn or mixed-up write
// would not reproduce.
func ledgerData(name string) map[string]string {
	return map[string]string{"name": name, "payload": strings.Repeat(name+";", 4096/(len(name)+1))}
}

// create asks c to create the config map name in namespace ns and returns the status code, or
// the error when no answer came.
func (l *ledger) create(c *apiClient, ns, name string) (int, error) {
	data := ledgerData(name)
	l.mu.Lock()
	l.sent[name] = data
	l.mu.Unlock()
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ledgerLabel: "true"}},
		Data:       data,
	}
	code, body, err := c.do(http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", "application/json", cm)
	if err != nil {
		return 0, err
	}
	if code == http.StatusCreated {
		l.mu.Lock()
		l.acked[name] = true
		l.mu.Unlock()
		return code, nil
	}
	return code, fmt.Errorf("HTTP %d: %s", code, body)
}

// ackedNames are the creates acknowledged so far.
func (l *ledger) ackedNames() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.acked)
}

// check compares stored config maps with what was sent and returns every discrepancy: each of
// them must have been sent, with the data sent, and each of acked must be stored.
func (l *ledger) check(items []corev1.ConfigMap, acked map[string]bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var problems []string
	stored := map[string]bool{}
	for _, cm := range items {
		if cm.Labels[ledgerLabel] != "true" {
			continue
		}
		stored[cm.Name] = true
		sent, ok := l.sent[cm.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("config map %s was never sent", cm.Name))
		case !maps.Equal(cm.Data, sent):
			problems = append(problems, fmt.Sprintf("config map %s is stored with other data than sent (%d keys, name %q)", cm.Name, len(cm.Data), cm.Data["name"]))
		}
	}
	for name := range acked {
		if !stored[name] {
			problems = append(problems, fmt.Sprintf("config map %s was acknowledged (201) but is not stored", name))
		}
	}
	return problems
}

// listConfigMaps lists the ledger's config maps in ns through c; err covers both no answer and
// an answer other than 200.
func listConfigMaps(c *apiClient, ns string) (int, []corev1.ConfigMap, error) {
	code, body, err := c.do(http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps?labelSelector="+url.QueryEscape(ledgerLabel+"=true"), "", nil)
	if err != nil {
		return 0, nil, err
	}
	if code != http.StatusOK {
		return code, nil, fmt.Errorf("HTTP %d: %s", code, body)
	}
	var list corev1.ConfigMapList
	if err := json.Unmarshal(body, &list); err != nil {
		return code, nil, fmt.Errorf("decoding the config map list: %w", err)
	}
	return code, list.Items, nil
}

// verify lists the config maps through c and fails the test on every discrepancy with the ledger.
func (l *ledger) verify(t *testing.T, c *apiClient, ns, when string) {
	t.Helper()
	_, items, err := listConfigMaps(c, ns)
	if err != nil {
		t.Fatalf("listing config maps %s: %v", when, err)
	}
	for _, p := range l.check(items, l.ackedNames()) {
		t.Errorf("%s: %s", when, p)
	}
}
