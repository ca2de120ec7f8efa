package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditPolicy records, once its response has started or completed, every request of the node's
// user and nothing else: the count of the agent's requests is the count of distinct audit IDs.
func auditPolicy(user string) string {
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [%q]
- level: None
`, user)
}

// request is one API request the audit log recorded.
type request struct {
	received time.Time
	// kind is the verb and what it acted on: "create serviceaccounts/token", "watch pods",
	// "update leases.coordination.k8s.io", or "get /api" for a path that is no resource.
	kind string
	// code is the response's HTTP status, 0 while a watch is still open.
	code int32
}

// readAuditLog reads the requests of user from the audit log at path.
func readAuditLog(path, user string) ([]request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	defer f.Close()
	reqs, err := parseAudit(f, user)
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return reqs, nil
}

// parseAudit reads JSON audit events, one per line, and returns every request of user once:
// a request shows up in one event per stage (a watch in ResponseStarted and, once it ends,
// ResponseComplete), all with the same audit ID. A last line without its newline is an event
// still being written and is left out.
func parseAudit(r io.Reader, user string) ([]request, error) {
	byID := map[types.UID]*request{}
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading line %d: %w", n, err)
		}
		var e auditv1.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("line %d is no audit event: %w", n, err)
		}
		if e.User.Username != user {
			continue
		}
		if e.AuditID == "" || e.RequestReceivedTimestamp.IsZero() {
			return nil, fmt.Errorf("line %d: event without an audit ID or a received time", n)
		}
		req := byID[e.AuditID]
		if req == nil {
			req = &request{received: e.RequestReceivedTimestamp.Time, kind: kindOf(&e)}
			byID[e.AuditID] = req
		}
		if e.ResponseStatus != nil && e.Stage != auditv1.StageResponseStarted {
			req.code = e.ResponseStatus.Code
		}
	}
	out := make([]request, 0, len(byID))
	for _, r := range byID {
		out = append(out, *r)
	}
	return out, nil
}

func kindOf(e *auditv1.Event) string {
	o := e.ObjectRef
	if o == nil || o.Resource == "" {
		path, _, _ := strings.Cut(e.RequestURI, "?")
		return e.Verb + " " + path
	}
	what := o.Resource
	if o.APIGroup != "" {
		what += "." + o.APIGroup
	}
	if o.Subresource != "" {
		what += "/" + o.Subresource
	}
	return e.Verb + " " + what
}

// requestCounts are the requests received in a time window.
type requestCounts struct {
	Total int `json:"total"`
	// Failed counts responses with a status of 400 or above.
	Failed int            `json:"failed"`
	ByKind map[string]int `json:"byKind"`
}

// countWindow counts the requests received in [from, to).
func countWindow(reqs []request, from, to time.Time) requestCounts {
	c := requestCounts{ByKind: map[string]int{}}
	for _, r := range reqs {
		if r.received.Before(from) || !r.received.Before(to) {
			continue
		}
		c.Total++
		c.ByKind[r.kind]++
		if r.code >= 400 {
			c.Failed++
		}
	}
	return c
}
