package apiserver

import (
	"context"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestTokenRequestFollowsRecreatedServiceAccount: requests made after a service account was
// deleted are refused, and requests made after it was recreated, many at once, all get tokens
// naming the new account's UID, never the old one's: concurrent requests share reads of the
// account, but never one that started before they arrived. A request naming the old UID is
// refused.
func TestTokenRequestFollowsRecreatedServiceAccount(t *testing.T) {
	s := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	accounts := s.client.CoreV1().ServiceAccounts("default")
	const name = "recreated"
	uidOf := func(token string) any {
		sa, _ := claimsOf(t, token)["kubernetes.io"].(map[string]any)["serviceaccount"].(map[string]any)
		return sa["uid"]
	}

	old := ensureServiceAccount(t, s.client, "default", name)
	tr, err := requestToken(s.client, "default", name, authenticationv1.TokenRequestSpec{})
	if err != nil {
		t.Fatal(err)
	}
	if got := uidOf(tr.Status.Token); got != string(old.UID) {
		t.Fatalf("token names service account UID %v, want %s", got, old.UID)
	}

	if err := accounts.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := requestToken(s.client, "default", name, authenticationv1.TokenRequestSpec{}); !apierrors.IsNotFound(err) {
		t.Fatalf("token for a deleted service account: err = %v, want NotFound", err)
	}
	recreated, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if recreated.UID == old.UID {
		t.Fatal("the recreated service account kept its UID")
	}
	// A request naming the account's UID (metadata.uid) is refused for another UID, as upstream,
	// and every answer names the UID of the account the token was issued for.
	for _, tc := range []struct {
		name     string
		uid      string
		conflict bool
	}{
		{"the deleted account's UID", string(old.UID), true},
		{"the account's UID", string(recreated.UID), false},
		{"no UID", "", false},
	} {
		tr, err := accounts.CreateToken(ctx, name, &authenticationv1.TokenRequest{ObjectMeta: metav1.ObjectMeta{UID: types.UID(tc.uid)}}, metav1.CreateOptions{})
		if tc.conflict {
			if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "does not match the UID of the service account") {
				t.Fatalf("%s: err = %v, want a conflict", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tr.UID != recreated.UID || uidOf(tr.Status.Token) != string(recreated.UID) {
			t.Fatalf("%s: answer names UID %q, token %v; want %s", tc.name, tr.UID, uidOf(tr.Status.Token), recreated.UID)
		}
	}

	const clients = 16
	tokens := make([]string, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			tr, err := requestToken(s.client, "default", name, authenticationv1.TokenRequestSpec{})
			if err == nil {
				tokens[i] = tr.Status.Token
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range clients {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if got := uidOf(tokens[i]); got != string(recreated.UID) {
			t.Fatalf("request %d got a token naming UID %v; the account's UID is %s (the deleted one's %s)", i, got, recreated.UID, old.UID)
		}
	}
}
