package main

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/idplane/idplane/bench/internal/loadphase"
)

func TestCheckReview(t *testing.T) {
	const user = "system:serviceaccount:tokenload-x:tokenload"
	unbound := subject{username: user}
	bound := subject{username: user, podName: "tokenload"}
	authed := func(username string, extra map[string]authenticationv1.ExtraValue) authenticationv1.TokenReviewStatus {
		return authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: username, Extra: extra}}
	}
	podExtra := func(pods ...string) map[string]authenticationv1.ExtraValue {
		return map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": pods}
	}
	tests := []struct {
		name    string
		status  authenticationv1.TokenReviewStatus
		subj    subject
		wantErr string
	}{
		{name: "unbound token of the service account", status: authed(user, nil), subj: unbound},
		{name: "bound token of the pod", status: authed(user, podExtra("tokenload")), subj: bound},
		{name: "refused with the server's reason", status: authenticationv1.TokenReviewStatus{Error: "service account token has expired"}, subj: unbound, wantErr: "not authenticated: service account token has expired"},
		{name: "refused without a reason", status: authenticationv1.TokenReviewStatus{}, subj: unbound, wantErr: "not authenticated"},
		{name: "someone else", status: authed("system:serviceaccount:other:tokenload", nil), subj: unbound, wantErr: "authenticated as"},
		{name: "bound token without its pod", status: authed(user, nil), subj: bound, wantErr: "for pod"},
		{name: "bound token of another pod", status: authed(user, podExtra("other")), subj: bound, wantErr: "for pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkReview(tt.status, tt.subj)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("checkReview() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSigningAlgorithm(t *testing.T) {
	jws := func(header string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(header)) + ".e30.c2ln"
	}
	tests := []struct {
		name    string
		token   string
		want    string
		wantErr bool
	}{
		{name: "ES256", token: jws(`{"alg":"ES256","kid":"k"}`), want: "ES256"},
		{name: "RS256", token: jws(`{"alg":"RS256"}`), want: "RS256"},
		{name: "no dots", token: "opaque", wantErr: true},
		{name: "header not base64url", token: "!!!.e30.c2ln", wantErr: true},
		{name: "header not JSON", token: jws("alg"), wantErr: true},
		{name: "no alg", token: jws(`{"kid":"k"}`), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := signingAlgorithm(tt.token)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("signingAlgorithm() = %q, %v; want %q, error %t", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestPhaseFailure(t *testing.T) {
	tests := []struct {
		name string
		r    loadphase.Result
		want string
	}{
		{name: "clean", r: loadphase.Result{}, want: ""},
		{name: "errors name the first", r: loadphase.Result{Errors: 3, FirstError: errors.New("forbidden")}, want: "3 errors, first: forbidden"},
		{name: "timed out", r: loadphase.Result{TimedOut: true}, want: "hit -timeout before -count"},
		{name: "both", r: loadphase.Result{TimedOut: true, Errors: 1, FirstError: errors.New("boom")}, want: "hit -timeout before -count; 1 errors, first: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := phaseFailure(tt.r); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("phaseFailure() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantLevels []int
		wantErr    string
	}{
		{name: "defaults", args: nil, wantLevels: []int{16}},
		{name: "levels", args: []string{"-concurrency", "1,16"}, wantLevels: []int{1, 16}},
		{name: "access reviews", args: []string{"-sar"}, wantLevels: []int{16}},
		{name: "bad level", args: []string{"-concurrency", "1,x"}, wantErr: `concurrency "x"`},
		{name: "no requests", args: []string{"-count", "0"}, wantErr: "-count"},
		{name: "no time", args: []string{"-timeout", "0s"}, wantErr: "-timeout"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("parseFlags(%q) error = %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(cfg.levels, tt.wantLevels) || cfg.count != 2000 || cfg.timeout != 2*time.Minute || cfg.sar != slices.Contains(tt.args, "-sar") {
				t.Errorf("parseFlags(%q) = %+v, %v", tt.args, cfg, err)
			}
		})
	}
}
