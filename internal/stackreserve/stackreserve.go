// Package stackreserve grows a goroutine's stack once, early, to the size a request handler ends
// up needing anyway.
//
// Every API request runs on goroutines that start with a small stack: the HTTP/2 server's handler
// goroutine, the one the library's timeout filter starts for the rest of the filter chain, and
// the one a create hands its storage call to. The chain is deep (some 70 frames for a review), so
// each of these stacks is doubled several times on the way down, and every doubling copies the
// stack and walks every frame on it to adjust pointers: in a CPU profile of reviews that was
// about a tenth of the server's time. Growing the stack to its final size while the goroutine is
// still shallow costs one copy of a few frames instead.
package stackreserve

import (
	"net/http"
	"sync/atomic"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// frameBytes is the frame Reserve puts on the stack: with what a goroutine already holds it
// makes the runtime give it a 32 KiB stack, which fits the library's filter chain and a review
// or token request below it.
const frameBytes = 16 << 10

// index is read at run time, so that the compiler cannot drop the frame Reserve asks for; it is
// always 0.
var index atomic.Int32

// Reserve grows the calling goroutine's stack to fit frameBytes more than it uses now. Call it
// near the top of a goroutine that will go deep. Its result means nothing; it is there so that the
// frame is used.
//
//go:noinline
func Reserve() byte {
	var frame [frameBytes]byte
	i := index.Load()
	frame[i] = 1
	return frame[frameBytes-1-i]
}

// Handler reserves stack before h serves the request, on the goroutine the server runs it on.
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Reserve()
		h.ServeHTTP(w, r)
	})
}

// Authenticator reserves stack before a authenticates the request. The library's filter chain
// runs authentication first on the goroutine its timeout filter starts, a few frames down, so
// this is where that goroutine can grow cheaply.
func Authenticator(a authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		Reserve()
		return a.AuthenticateRequest(r)
	})
}
