package bootstraptoken

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	testclock "k8s.io/utils/clock/testing"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

const (
	id     = "abcdef"
	secret = "0123456789abcdef"
	token  = id + "." + secret
)

// tokenSecret is a valid bootstrap token secret for id/secret; edit changes it.
func tokenSecret(edit ...func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: metav1.NamespaceSystem, UID: "uid-1"},
		Type:       "bootstrap.kubernetes.io/token",
		Data: map[string][]byte{
			"token-id":                       []byte(id),
			"token-secret":                   []byte(secret),
			"usage-bootstrap-authentication": []byte("true"),
			"expiration":                     []byte(now.Add(time.Hour).Format(time.RFC3339)),
		},
	}
	for _, e := range edit {
		e(s)
	}
	return s
}

func data(key, value string) func(*corev1.Secret) {
	return func(s *corev1.Secret) { s.Data[key] = []byte(value) }
}

func without(key string) func(*corev1.Secret) {
	return func(s *corev1.Secret) { delete(s.Data, key) }
}

func listerOf(t testing.TB, secrets ...*corev1.Secret) corelisters.SecretNamespaceLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range secrets {
		if err := indexer.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewSecretLister(indexer).Secrets(metav1.NamespaceSystem)
}

func TestAuthenticateToken(t *testing.T) {
	deleting := metav1.NewTime(now)
	cases := []struct {
		name   string
		secret *corev1.Secret // nil: no secret
		token  string
		groups []string // nil: not authenticated
	}{
		{"valid", tokenSecret(), token, []string{"system:bootstrappers"}},
		{"no expiration never expires", tokenSecret(without("expiration")), token, []string{"system:bootstrappers"}},
		{"expires in a second", tokenSecret(data("expiration", now.Add(time.Second).Format(time.RFC3339))), token, []string{"system:bootstrappers"}},
		{"extra groups, sorted and deduplicated", tokenSecret(data("auth-extra-groups", "system:bootstrappers:worker,system:bootstrappers:a:b,system:bootstrappers:worker")), token,
			[]string{"system:bootstrappers", "system:bootstrappers:a:b", "system:bootstrappers:worker"}},
		{"signing usage does not matter", tokenSecret(data("usage-bootstrap-signing", "false")), token, []string{"system:bootstrappers"}},

		{"expired at this instant", tokenSecret(data("expiration", now.Format(time.RFC3339))), token, nil},
		{"expired an hour ago", tokenSecret(data("expiration", now.Add(-time.Hour).Format(time.RFC3339))), token, nil},
		{"expiration not RFC 3339", tokenSecret(data("expiration", "tomorrow")), token, nil},
		{"wrong secret", tokenSecret(), id + ".0123456789abcdeg", nil},
		{"secret a prefix of the stored one", tokenSecret(data("token-secret", secret+"x")), token, nil},
		{"token-id differs from the name", tokenSecret(data("token-id", "zzzzzz")), token, nil},
		{"no token-id", tokenSecret(without("token-id")), token, nil},
		{"no token-secret", tokenSecret(without("token-secret")), token, nil},
		{"not for authentication", tokenSecret(without("usage-bootstrap-authentication")), token, nil},
		{"authentication usage false", tokenSecret(data("usage-bootstrap-authentication", "false")), token, nil},
		{"authentication usage TRUE", tokenSecret(data("usage-bootstrap-authentication", "TRUE")), token, nil},
		{"wrong type", tokenSecret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), token, nil},
		{"no data", tokenSecret(func(s *corev1.Secret) { s.Data = nil }), token, nil},
		{"being deleted", tokenSecret(func(s *corev1.Secret) { s.DeletionTimestamp = &deleting }), token, nil},
		{"extra group outside system:bootstrappers:", tokenSecret(data("auth-extra-groups", "system:masters")), token, nil},
		{"one bad extra group spoils the rest", tokenSecret(data("auth-extra-groups", "system:bootstrappers:ok,system:nodes")), token, nil},
		{"empty extra group in the list", tokenSecret(data("auth-extra-groups", "system:bootstrappers:ok,")), token, nil},
		{"no secret", nil, token, nil},
		{"secret in another namespace", tokenSecret(func(s *corev1.Secret) { s.Namespace = metav1.NamespaceDefault }), token, nil},

		// Not of bootstrap form: not this authenticator's business, whatever is stored.
		{"uppercase id", tokenSecret(), "ABCDEF." + secret, nil},
		{"short secret", tokenSecret(), id + ".0123456789abcde", nil},
		{"long secret", tokenSecret(), token + "0", nil},
		{"no dot", tokenSecret(), id + secret, nil},
		{"surrounding space", tokenSecret(), " " + token, nil},
		{"trailing newline", tokenSecret(), token + "\n", nil},
		{"a JWT", tokenSecret(), "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", nil},
		{"empty", tokenSecret(), "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var secrets []*corev1.Secret
			if tc.secret != nil {
				secrets = append(secrets, tc.secret)
			}
			a := New(listerOf(t, secrets...), testclock.NewFakePassiveClock(now))
			resp, ok, err := a.AuthenticateToken(context.Background(), tc.token)
			if err != nil {
				t.Fatalf("error %v; refusals must not be errors", err)
			}
			if ok != (tc.groups != nil) {
				t.Fatalf("authenticated %v, want %v", ok, tc.groups != nil)
			}
			if !ok {
				if resp != nil {
					t.Errorf("refused with a response %+v", resp)
				}
				return
			}
			u := resp.User
			if u.GetName() != "system:bootstrap:"+id || !slices.Equal(u.GetGroups(), tc.groups) {
				t.Errorf("user %q groups %q, want system:bootstrap:%s %q", u.GetName(), u.GetGroups(), id, tc.groups)
			}
			if want := map[string][]string{SecretUIDExtra: {string(tc.secret.UID)}}; u.GetUID() != "" || !reflect.DeepEqual(u.GetExtra(), want) {
				t.Errorf("uid %q extra %v, want no uid and extra %v", u.GetUID(), u.GetExtra(), want)
			}
		})
	}
}

// The clock decides expiry: the same token stops working once the clock passes its expiration.
func TestExpiryFollowsTheClock(t *testing.T) {
	clk := testclock.NewFakePassiveClock(now)
	a := New(listerOf(t, tokenSecret()), clk)
	if _, ok, _ := a.AuthenticateToken(context.Background(), token); !ok {
		t.Fatal("valid token refused")
	}
	clk.SetTime(now.Add(time.Hour))
	if _, ok, _ := a.AuthenticateToken(context.Background(), token); ok {
		t.Fatal("token accepted at its expiration")
	}
}

type failingLister struct {
	corelisters.SecretNamespaceLister
}

func (failingLister) Get(string) (*corev1.Secret, error) { return nil, errors.New("cache broken") }
func (failingLister) List(labels.Selector) ([]*corev1.Secret, error) {
	return nil, errors.New("cache broken")
}

// A lookup that fails for another reason than absence is an error, not a silent refusal.
func TestLookupErrorsAreErrors(t *testing.T) {
	a := New(failingLister{}, testclock.NewFakePassiveClock(now))
	if _, ok, err := a.AuthenticateToken(context.Background(), token); ok || err == nil {
		t.Fatalf("ok %v err %v, want an error", ok, err)
	}
}

// Whatever a client sends, the authenticator neither fails nor accepts anything but the token.
func FuzzAuthenticateToken(f *testing.F) {
	for _, seed := range []string{token, id + ".0123456789abcdeg", "ABCDEF." + secret, "", ".", token + "\x00", "eyJhbGciOiJub25lIn0.e30."} {
		f.Add(seed)
	}
	a := New(listerOf(f, tokenSecret()), testclock.NewFakePassiveClock(now))
	f.Fuzz(func(t *testing.T, s string) {
		resp, ok, err := a.AuthenticateToken(context.Background(), s)
		if err != nil {
			t.Fatalf("error for %q: %v", s, err)
		}
		if ok != (s == token) || (ok && resp.User.GetName() != "system:bootstrap:"+id) {
			t.Fatalf("%q: authenticated %v (%+v)", s, ok, resp)
		}
	})
}
