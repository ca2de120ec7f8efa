package apiserver

import (
	"context"
	"net/http"
	"time"
)

// maxAnswerMargin caps the time left to a handler to answer after its storage calls gave up.
const maxAnswerMargin = time.Second

// withAnswerMargin ends the handler's context a tenth of the remaining time (at most
// maxAnswerMargin) before the request deadline. The library's timeout filter answers 504 at that
// deadline, but a handler whose storage call failed at the same instant may have begun its own
// error answer, and the filter can then only reset the stream. With the margin, a request the
// store cannot serve in time (etcd without quorum) gets a whole 5xx answer from its handler.
// Watches and other long-running requests carry no deadline and pass unchanged.
func withAnswerMargin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline, ok := r.Context().Deadline()
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		margin := min(time.Until(deadline)/10, maxAnswerMargin)
		ctx, cancel := context.WithDeadline(r.Context(), deadline.Add(-margin))
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
