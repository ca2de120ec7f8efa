package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestWithAnswerMargin(t *testing.T) {
	cases := []struct {
		name      string
		remaining time.Duration // 0: the request has no deadline
		// the margin the handler must get, within (minMargin, maxMargin]
		minMargin, maxMargin time.Duration
	}{
		{name: "watch without deadline"},
		{name: "short deadline: a tenth of it", remaining: 2 * time.Second, minMargin: 0, maxMargin: 200 * time.Millisecond},
		{name: "long deadline: capped", remaining: time.Minute, minMargin: maxAnswerMargin - 1, maxMargin: maxAnswerMargin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.remaining > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.remaining)
				defer cancel()
			}
			outer, hasOuter := ctx.Deadline()
			var inner time.Time
			var hasInner bool
			h := withAnswerMargin(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				inner, hasInner = r.Context().Deadline()
			}))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil))
			if hasInner != hasOuter {
				t.Fatalf("handler deadline set = %v, request deadline set = %v", hasInner, hasOuter)
			}
			if !hasOuter {
				return
			}
			if margin := outer.Sub(inner); margin <= tc.minMargin || margin > tc.maxMargin {
				t.Errorf("margin %v, want within (%v, %v]", margin, tc.minMargin, tc.maxMargin)
			}
		})
	}
}
