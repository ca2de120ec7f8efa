package apiserver

import (
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// The server's secret informers hold service-account token secrets and kube-system's bootstrap
// token secrets, nothing else; a token bound to another secret is still checked, by a live GET.
func TestSecretInformersHoldOnlyTokenSecrets(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := t.Context()
	core := s.client.CoreV1()
	ensureServiceAccount(t, s.client, "default", "bot")
	for _, sec := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}, Data: map[string][]byte{"k": []byte("v")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bot-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "bot"}}, Type: corev1.SecretTypeServiceAccountToken},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "plain-system"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef"}, Type: bootstrapapi.SecretTypeBootstrapToken,
			StringData: map[string]string{"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true"}},
		// A bootstrap token secret outside kube-system is not one.
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bootstrap-token-ghijkl"}, Type: bootstrapapi.SecretTypeBootstrapToken,
			StringData: map[string]string{"token-id": "ghijkl", "token-secret": "0123456789abcdef"}},
	} {
		if _, err := core.Secrets(sec.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("informers", func(t *testing.T) {
		f := newInformerFactory(s.client)
		narrowSecretInformer(f)
		tokens, bootstrap := f.Core().V1().Secrets(), bootstrapTokenSecrets(f)
		if bootstrapTokenSecrets(f).Informer().GetIndexer() != bootstrap.Informer().GetIndexer() ||
			f.Core().V1().Secrets().Informer().GetIndexer() != tokens.Informer().GetIndexer() {
			t.Fatal("the factory built a second informer for the same secrets")
		}
		if tokens.Informer().GetIndexer() == bootstrap.Informer().GetIndexer() {
			t.Fatal("one informer for both kinds")
		}
		stop := make(chan struct{})
		f.Start(stop)
		defer f.Shutdown()
		defer close(stop)
		if !cache.WaitForCacheSync(ctx.Done(), tokens.Informer().HasSynced, bootstrap.Informer().HasSynced) {
			t.Fatal("secret informers did not sync")
		}
		held := func(l interface {
			List(labels.Selector) ([]*corev1.Secret, error)
		}) []string {
			list, err := l.List(labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, s := range list {
				out = append(out, s.Namespace+"/"+s.Name)
			}
			slices.Sort(out)
			return out
		}
		if got := held(tokens.Lister()); !slices.Equal(got, []string{"default/bot-token"}) {
			t.Errorf("token secrets informer holds %v, want [default/bot-token]", got)
		}
		if got := held(bootstrap.Lister()); !slices.Equal(got, []string{"kube-system/bootstrap-token-abcdef"}) {
			t.Errorf("bootstrap token secrets informer holds %v, want [kube-system/bootstrap-token-abcdef]", got)
		}
	})

	t.Run("token bound to another secret", func(t *testing.T) {
		tr, err := requestToken(s.client, "default", "bot", authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "plain"},
		})
		if err != nil {
			t.Fatal(err)
		}
		token := tr.Status.Token
		if st := review(t, s.client, token); !st.Authenticated {
			t.Fatalf("token bound to an Opaque secret: %+v", st)
		}
		secretGets := func() float64 {
			v, _ := scrapeMetrics(t, s)("apiserver_request_total", map[string]string{"resource": "secrets", "verb": "GET"})
			return v
		}
		before := secretGets()
		if st := review(t, s.client, token); !st.Authenticated {
			t.Fatalf("second review: %+v", st)
		}
		if secretGets() == before {
			t.Error("the review read the Opaque secret from an informer: the server's informers hold it")
		}
		if err := core.Secrets("default").Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// No informer event carries this deletion; the live GET sees it at once.
		if st := review(t, s.client, token); st.Authenticated || !strings.Contains(st.Error, "secret default/plain") {
			t.Errorf("review after the secret's deletion = %+v", st)
		}
	})
}
