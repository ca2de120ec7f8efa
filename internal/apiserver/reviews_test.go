package apiserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/rest"
)

// postRaw sends body to path as JSON with the admin credentials and returns the status and the
// response body as the server wrote it.
func postRaw(t testing.TB, cfg *rest.Config, path, body string) (int, string) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, cfg.Host+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(bytes.TrimSpace(out))
}

// TestReviewResponseBodies pins the exact bytes a TokenReview and a SubjectAccessReview answer
// with, refusals and bad input included, so that a faster path answers the same. The review
// handler (internal/reviewserving) answers without metadata.managedFields: nothing is stored.
func TestReviewResponseBodies(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	sa := ensureServiceAccount(t, s.client, "default", "golden")
	tr, err := requestToken(s.client, "default", "golden", authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	tok := tr.Status.Token
	in := strings.NewReplacer("TOKEN", tok)
	// What differs from run to run is named in the expected bodies.
	out := strings.NewReplacer(tok, "TOKEN", string(sa.UID), "SAUID", s.URL, "AUD", claimsOf(t, tok)["jti"].(string), "JTI")
	cases := []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"token review", "/apis/authentication.k8s.io/v1/tokenreviews",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"TOKEN"}}`, 201,
			`{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{},"spec":{"token":"TOKEN"},"status":{"authenticated":true,"user":{"username":"system:serviceaccount:default:golden","uid":"SAUID","groups":["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"],"extra":{"authentication.kubernetes.io/credential-id":["JTI=JTI"]}},"audiences":["AUD"]}}`},
		{"token review, same token again", "/apis/authentication.k8s.io/v1/tokenreviews",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"TOKEN"}}`, 201,
			`{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{},"spec":{"token":"TOKEN"},"status":{"authenticated":true,"user":{"username":"system:serviceaccount:default:golden","uid":"SAUID","groups":["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"],"extra":{"authentication.kubernetes.io/credential-id":["JTI=JTI"]}},"audiences":["AUD"]}}`},
		{"token review, another audience", "/apis/authentication.k8s.io/v1/tokenreviews",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"TOKEN","audiences":["vault"]}}`, 201,
			`{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{},"spec":{"token":"TOKEN","audiences":["vault"]},"status":{"user":{},"error":"[invalid bearer token, service account token audiences [\"AUD\"] match none of the accepted audiences [\"vault\"]]"}}`},
		{"token review, garbage", "/apis/authentication.k8s.io/v1/tokenreviews",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"not-a-token"}}`, 201,
			`{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","metadata":{},"spec":{"token":"not-a-token"},"status":{"user":{},"error":"invalid bearer token"}}`},
		{"token review, no token", "/apis/authentication.k8s.io/v1/tokenreviews",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}`, 422,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"TokenReview.authentication.k8s.io \"\" is invalid: spec.token: Required value: a token to review is required","reason":"Invalid","details":{"group":"authentication.k8s.io","kind":"TokenReview","causes":[{"reason":"FieldValueRequired","message":"Required value: a token to review is required","field":"spec.token"}]},"code":422}`},
		{"subject access review, allowed", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"someone","groups":["system:masters"],"resourceAttributes":{"verb":"get","resource":"pods","namespace":"default"}}}`, 201,
			`{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"},"user":"someone","groups":["system:masters"]},"status":{"allowed":true}}`},
		{"subject access review, no opinion", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"someone","resourceAttributes":{"verb":"get","resource":"secrets","namespace":"default","name":"x"}}}`, 201,
			`{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":{"namespace":"default","verb":"get","resource":"secrets","name":"x"},"user":"someone"},"status":{"allowed":false}}`},
		{"subject access review, no user", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`, 422,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified","reason":"Invalid","details":{"group":"authorization.k8s.io","kind":"SubjectAccessReview","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"\": at least one of user or group must be specified","field":"spec.user"}]},"code":422}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, got := postRaw(t, s.config, tc.path, in.Replace(tc.body))
			got = out.Replace(got)
			if code != tc.code || got != tc.want {
				t.Errorf("POST %s = %d\n%s\nwant %d\n%s", tc.path, code, got, tc.code, tc.want)
			}
		})
	}
}
