package authn

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"
)

// verifiedCertTTL bounds how long a verified client certificate chain is remembered.
const verifiedCertTTL = 5 * time.Minute

// verifiedCerts remembers the identity the x509 authenticator found for a client certificate chain,
// so that the chain, already checked once in the TLS handshake, is not verified again on every
// request of the connection: verification is a signature check per certificate, the largest
// single cost of a small request. The key covers every certificate the client sent and the client
// CA bundle, and an entry never outlives the leaf certificate, so a cached answer is the one
// verification would give. Refusals are not remembered.
//
// Every request of every client passes here, so a hit takes no lock: with thousands of requests
// waiting for a CPU (a fleet starting at once), a reader/writer lock let one descheduled holder
// queue every other request behind it for seconds. Concurrent misses for one chain share one
// verification.
type verifiedCerts struct {
	next     authenticator.Request
	clientCA caBundle
	clock    clock.PassiveClock
	entries  sync.Map // verifiedKey → verifiedEntry
	stored   atomic.Uint64
	sweeping atomic.Bool
	verify   singleflight.Group
}

type verifiedEntry struct {
	resp   *authenticator.Response
	expiry time.Time
}

// sweepEvery is how many stored entries pass between sweeps of the expired ones: entries are
// bounded by the chains that authenticated within verifiedCertTTL, sweeps keep it so.
const sweepEvery = 1024

// caBundle is the part of the client CA provider the cache keys on.
type caBundle interface{ CurrentCABundleContent() []byte }

func newVerifiedCerts(next authenticator.Request, clientCA caBundle, clk clock.PassiveClock) *verifiedCerts {
	return &verifiedCerts{next: next, clientCA: clientCA, clock: clk}
}

type verifiedKey [sha256.Size]byte

func (v *verifiedCerts) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	h := sha256.New()
	h.Write(v.clientCA.CurrentCABundleContent())
	for _, c := range req.TLS.PeerCertificates {
		h.Write([]byte{0})
		h.Write(c.Raw)
	}
	var key verifiedKey
	h.Sum(key[:0])
	if e, ok := v.entries.Load(key); ok && v.clock.Now().Before(e.(verifiedEntry).expiry) {
		return copyResponse(e.(verifiedEntry).resp), true, nil
	}
	type answer struct {
		resp *authenticator.Response
		ok   bool
	}
	shared, err, _ := v.verify.Do(string(key[:]), func() (any, error) {
		resp, ok, err := v.next.AuthenticateRequest(req)
		if err != nil || !ok {
			return answer{resp, ok}, err
		}
		now := v.clock.Now()
		if ttl := min(verifiedCertTTL, req.TLS.PeerCertificates[0].NotAfter.Sub(now)); ttl > 0 {
			v.store(key, verifiedEntry{resp: copyResponse(resp), expiry: now.Add(ttl)}, now)
		}
		return answer{copyResponse(resp), ok}, nil
	})
	a := shared.(answer)
	if err != nil || !a.ok {
		return a.resp, a.ok, err
	}
	// Callers that shared the verification each get their own copy: the chain's later
	// authenticators rewrite the response they are handed.
	return copyResponse(a.resp), true, nil
}

func (v *verifiedCerts) store(key verifiedKey, e verifiedEntry, now time.Time) {
	v.entries.Store(key, e)
	if v.stored.Add(1)%sweepEvery != 0 || !v.sweeping.CompareAndSwap(false, true) {
		return
	}
	defer v.sweeping.Store(false)
	v.entries.Range(func(k, e any) bool {
		if !now.Before(e.(verifiedEntry).expiry) {
			v.entries.CompareAndDelete(k, e)
		}
		return true
	})
}

// copyResponse gives each request its own user: later authenticators in the chain (the
// system:authenticated group adder) rewrite the response they are handed.
func copyResponse(r *authenticator.Response) *authenticator.Response {
	out := *r
	u := r.User
	out.User = &user.DefaultInfo{
		Name:   u.GetName(),
		UID:    u.GetUID(),
		Groups: append([]string(nil), u.GetGroups()...),
		Extra:  cloneExtra(u.GetExtra()),
	}
	return &out
}

func cloneExtra(extra map[string][]string) map[string][]string {
	if extra == nil {
		return nil
	}
	out := make(map[string][]string, len(extra))
	for k, v := range extra {
		out[k] = append([]string(nil), v...)
	}
	return out
}
