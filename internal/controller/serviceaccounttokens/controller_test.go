package serviceaccounttokens

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

type fakeIssuer struct{}

func (fakeIssuer) IssueLegacy(_ context.Context, sa *corev1.ServiceAccount, s *corev1.Secret) (string, error) {
	return "token-of-" + sa.Name + "-in-" + s.Name, nil
}

var caPEM = []byte("-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n")

func account(name, uid string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + uid)}}
}

func tokenSecret(sa, uid string, data map[string][]byte) *corev1.Secret {
	annotations := map[string]string{corev1.ServiceAccountNameKey: sa}
	if uid != "" {
		annotations[corev1.ServiceAccountUIDKey] = "uid-" + uid
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tok", UID: "secret-uid", Annotations: annotations},
		Type:       corev1.SecretTypeServiceAccountToken,
		Data:       data,
	}
}

func TestSync(t *testing.T) {
	filled := map[string][]byte{"token": []byte("kept"), "ca.crt": caPEM, "namespace": []byte("ns")}
	cases := []struct {
		name      string
		objects   []runtime.Object
		wantGone  bool
		wantToken string
	}{
		{"new secret gets a token, the CA and the namespace", []runtime.Object{account("bot", "1"), tokenSecret("bot", "", nil)}, false, "token-of-bot-in-tok"},
		{"a filled secret keeps its token", []runtime.Object{account("bot", "1"), tokenSecret("bot", "1", filled)}, false, "kept"},
		{"a token without the CA is completed, not reissued", []runtime.Object{account("bot", "1"), tokenSecret("bot", "1", map[string][]byte{"token": []byte("kept")})}, false, "kept"},
		{"secret of a missing account is deleted", []runtime.Object{tokenSecret("bot", "", nil)}, true, ""},
		{"secret of a recreated account is deleted", []runtime.Object{account("bot", "2"), tokenSecret("bot", "1", filled)}, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			client := fake.NewClientset(tc.objects...)
			factory := informers.NewSharedInformerFactory(client, 0)
			c, err := New(client, fakeIssuer{}, caPEM, factory.Core().V1().Secrets(), factory.Core().V1().ServiceAccounts())
			if err != nil {
				t.Fatal(err)
			}
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
			defer factory.Shutdown()
			defer cancel()
			if err := c.sync(ctx, "ns/tok"); err != nil {
				t.Fatal(err)
			}
			s, err := client.CoreV1().Secrets("ns").Get(ctx, "tok", metav1.GetOptions{})
			if tc.wantGone {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("secret still there: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(s.Data["token"]); got != tc.wantToken {
				t.Errorf("token = %q, want %q", got, tc.wantToken)
			}
			if string(s.Data["ca.crt"]) != string(caPEM) || string(s.Data["namespace"]) != "ns" {
				t.Errorf("data = %v", s.Data)
			}
			if s.Annotations[corev1.ServiceAccountUIDKey] != "uid-1" {
				t.Errorf("uid annotation = %q", s.Annotations[corev1.ServiceAccountUIDKey])
			}
		})
	}
}
