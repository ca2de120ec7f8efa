package credentials

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/idplane/idplane/internal/agent/clockwait"
)

// rotatingManager is what a rotation needs of a certificate's manager: client-go's, with the
// RotateCerts method its concrete type has, for the client certificate, and the agent's own
// servingRequester for the serving one. client-go's own Start schedules rotations on the wall
// clock, which a test cannot drive; the agent schedules them on its injected clock and lets the
// manager do the rest: get a key, submit the CSR, wait for issuance, store the pair and serve it
// from Current.
type rotatingManager interface {
	Current() *tls.Certificate
	RotateCerts() (bool, error)
	Stop()
}

// The renewal window: a certificate is renewed at a random point between these fractions of its
// lifetime, so that nodes that joined together do not all renew together.
const (
	renewFrom  = 0.7
	renewRange = 0.2
)

// rotationDeadline is when a certificate valid from notBefore to notAfter is renewed, for a
// random value r in [0, 1): between 70 % and 90 % of its lifetime.
func rotationDeadline(notBefore, notAfter time.Time, r float64) time.Time {
	lifetime := float64(notAfter.Sub(notBefore))
	return notBefore.Add(time.Duration(lifetime * (renewFrom + renewRange*r)))
}

// satisfies reports whether a certificate carries everything the template asks for: renewing a
// certificate that lacks a requested name (the node's addresses changed, or the files belong to
// another node) cannot wait for the deadline.
func satisfies(leaf *x509.Certificate, template *x509.CertificateRequest) bool {
	if leaf == nil || leaf.Subject.CommonName != template.Subject.CommonName {
		return false
	}
	for _, o := range template.Subject.Organization {
		if !slices.Contains(leaf.Subject.Organization, o) {
			return false
		}
	}
	for _, d := range template.DNSNames {
		if !slices.Contains(leaf.DNSNames, d) {
			return false
		}
	}
	for _, ip := range template.IPAddresses {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// rotation keeps one certificate fresh: it sleeps on the clock until the current certificate's
// deadline, then asks the manager for a new one, retrying with backoff until it gets one.
type rotation struct {
	name     string
	manager  rotatingManager
	template *x509.CertificateRequest
	clock    clock.Clock
	// random returns a value in [0, 1) that places the deadline in the renewal window.
	random func() float64
	// pending is logged before each request, saying what the request waits for.
	pending string
	// rotated runs after each new certificate, so that connections move to it.
	rotated func()
}

// usable is the current certificate when it is one for the template and unexpired by the clock.
func (r *rotation) usable() *x509.Certificate {
	cur := r.manager.Current()
	if cur == nil || cur.Leaf == nil || !satisfies(cur.Leaf, r.template) || !r.clock.Now().Before(cur.Leaf.NotAfter) {
		return nil
	}
	return cur.Leaf
}

// deadline is when the current certificate is due; now when there is none fit to use.
func (r *rotation) deadline() time.Time {
	leaf := r.usable()
	if leaf == nil {
		return r.clock.Now()
	}
	return rotationDeadline(leaf.NotBefore, leaf.NotAfter, r.random())
}

// run renews the certificate at each deadline until ctx ends.
func (r *rotation) run(ctx context.Context) {
	for {
		deadline := r.deadline()
		klog.FromContext(ctx).V(2).Info("Next certificate rotation", "certificate", r.name, "deadline", deadline)
		if !clockwait.Sleep(ctx, r.clock, deadline.Sub(r.clock.Now())) {
			return
		}
		if !r.rotate(ctx) {
			return
		}
	}
}

// rotate obtains a new certificate, retrying until it does; false when ctx ended first.
func (r *rotation) rotate(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	backoff := wait.Backoff{Duration: 2 * time.Second, Factor: 2, Jitter: 0.1, Steps: 5, Cap: 32 * time.Second}
	for {
		logger.Info("Requesting a certificate", "certificate", r.name, "waitsFor", r.pending)
		// The manager reports failures through utilruntime.HandleError and answers false.
		rotated, err := r.manager.RotateCerts()
		if err != nil {
			logger.Error(err, "Certificate request failed", "certificate", r.name)
		}
		if rotated {
			if leaf := r.usable(); leaf != nil {
				logger.Info("Certificate issued", "certificate", r.name, "serial", leaf.SerialNumber.String(), "notAfter", leaf.NotAfter)
			}
			if r.rotated != nil {
				r.rotated()
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		delay := backoff.Step()
		logger.Info("No certificate issued yet, retrying", "certificate", r.name, "waitsFor", r.pending, "retryIn", delay)
		if !clockwait.Sleep(ctx, r.clock, delay) {
			return false
		}
	}
}

// servingTemplate is the kubelet-serving request for the node: its host name (DNS names are
// case-insensitive; the request carries the lower-case form) and addresses as subject
// alternative names, less loopback addresses: those reach the client's own host, never this
// node, and the approver leaves a request naming one to a human. Nil when there is no name to
// serve under.
func servingTemplate(nodeName, hostname string, addresses []net.IP) *x509.CertificateRequest {
	t := nodeTemplate(nodeName)
	if hostname != "" {
		t.DNSNames = []string{strings.ToLower(hostname)}
	}
	for _, ip := range addresses {
		if !ip.IsLoopback() {
			t.IPAddresses = append(t.IPAddresses, ip)
		}
	}
	if len(t.DNSNames) == 0 && len(t.IPAddresses) == 0 {
		return nil
	}
	return t
}
