package authn

import (
	"crypto/sha256"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"
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
type verifiedCerts struct {
	next     authenticator.Request
	clientCA caBundle
	cache    *cache.Expiring
	clock    clock.PassiveClock
}

// caBundle is the part of the client CA provider the cache keys on.
type caBundle interface{ CurrentCABundleContent() []byte }

func newVerifiedCerts(next authenticator.Request, clientCA caBundle, clk clock.Clock) *verifiedCerts {
	return &verifiedCerts{next: next, clientCA: clientCA, cache: cache.NewExpiringWithClock(clk), clock: clk}
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
	if cached, ok := v.cache.Get(key); ok {
		return copyResponse(cached.(*authenticator.Response)), true, nil
	}
	resp, ok, err := v.next.AuthenticateRequest(req)
	if err != nil || !ok {
		return resp, ok, err
	}
	ttl := min(verifiedCertTTL, req.TLS.PeerCertificates[0].NotAfter.Sub(v.clock.Now()))
	if ttl > 0 {
		v.cache.Set(key, copyResponse(resp), ttl)
	}
	return resp, true, nil
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
