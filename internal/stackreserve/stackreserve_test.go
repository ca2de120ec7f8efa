package stackreserve

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// The wrappers only reserve stack: what the wrapped handler and authenticator answer passes
// through unchanged, errors included.
func TestWrappersPassThrough(t *testing.T) {
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Path", r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/x", nil))
	if rec.Code != http.StatusTeapot || rec.Header().Get("X-Path") != "/apis/x" {
		t.Errorf("handler answered %d %v", rec.Code, rec.Header())
	}

	refused := errors.New("refused")
	for _, tc := range []struct {
		name string
		resp *authenticator.Response
		ok   bool
		err  error
	}{
		{"authenticated", &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil},
		{"not its business", nil, false, nil},
		{"refused", nil, false, refused},
	} {
		a := Authenticator(authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
			return tc.resp, tc.ok, tc.err
		}))
		resp, ok, err := a.AuthenticateRequest(httptest.NewRequest(http.MethodGet, "/", nil))
		if resp != tc.resp || ok != tc.ok || err != tc.err {
			t.Errorf("%s: got %v %v %v", tc.name, resp, ok, err)
		}
	}
}

// BenchmarkReserve is what Reserve costs on a goroutine whose stack already fits it: the frame is
// zeroed on every call.
func BenchmarkReserve(b *testing.B) {
	for b.Loop() {
		Reserve()
	}
}
