package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

type tokenClaims struct {
	Aud        json.RawMessage `json:"aud"`
	Exp, Iat   int64
	Sub        string
	Kubernetes struct {
		Pod *struct{ Name, UID string }
	} `json:"kubernetes.io"`
}

func decodeToken(t *testing.T, token string) tokenClaims {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		t.Fatalf("kubectl create token printed %q, not a JWT", token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServiceAccountTokens(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.kubectl(t, "create", "serviceaccount", "bot")

	t.Run("create token and whoami", func(t *testing.T) {
		token := s.kubectl(t, "create", "token", "bot", "--duration", "20m")
		c := decodeToken(t, token)
		if c.Exp-c.Iat != 1200 || c.Sub != "system:serviceaccount:default:bot" {
			t.Errorf("claims = %+v, want 20 minutes for system:serviceaccount:default:bot", c)
		}
		out, err := s.kubectlAs(s.tokenKubeconfig(t, strings.TrimSpace(token)), "auth", "whoami")
		if err != nil {
			t.Fatalf("whoami with the token: %v\n%s", err, out)
		}
		for _, want := range []string{
			`(?m)^Username\s+system:serviceaccount:default:bot$`,
			`(?m)^Groups\s+\[system:serviceaccounts system:serviceaccounts:default system:authenticated\]$`,
			`(?m)^Extra: authentication.kubernetes.io/credential-id\s+\[JTI=`,
		} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("whoami output does not match %s:\n%s", want, out)
			}
		}
	})

	t.Run("audiences", func(t *testing.T) {
		token := s.kubectl(t, "create", "token", "bot", "--audience", "vault", "--audience", "ca.istio.io")
		if c := decodeToken(t, token); string(c.Aud) != `["vault","ca.istio.io"]` {
			t.Errorf("aud = %s", c.Aud)
		}
		out, err := s.kubectlAs(s.tokenKubeconfig(t, strings.TrimSpace(token)), "auth", "whoami")
		if err == nil || !strings.Contains(out, "Unauthorized") {
			t.Errorf("a vault token was accepted by the API (err %v):\n%s", err, out)
		}
	})

	t.Run("bound to a pod", func(t *testing.T) {
		s.kubectl(t, "run", "p", "--image=busybox", "--restart=Never", `--overrides={"spec":{"serviceAccountName":"bot"}}`)
		token := strings.TrimSpace(s.kubectl(t, "create", "token", "bot", "--bound-object-kind", "Pod", "--bound-object-name", "p"))
		uid := s.kubectl(t, "get", "pod", "p", "-o", "jsonpath={.metadata.uid}")
		if c := decodeToken(t, token); c.Kubernetes.Pod == nil || c.Kubernetes.Pod.Name != "p" || c.Kubernetes.Pod.UID != uid {
			t.Errorf("pod claim = %+v, want p/%s", c.Kubernetes.Pod, uid)
		}
		kubeconfig := s.tokenKubeconfig(t, token)
		out, err := s.kubectlAs(kubeconfig, "auth", "whoami")
		if err != nil || !regexp.MustCompile(`(?m)^Extra: authentication.kubernetes.io/pod-name\s+\[p\]$`).MatchString(out) {
			t.Fatalf("whoami with the pod's token (err %v):\n%s", err, out)
		}
		s.kubectl(t, "delete", "pod", "p", "--grace-period=0", "--force")
		eventually(t, 5*time.Second, func() error {
			out, err := s.kubectlAs(kubeconfig, "auth", "whoami")
			if err == nil || !strings.Contains(out, "Unauthorized") {
				return fmt.Errorf("token of a deleted pod still works (err %v):\n%s", err, out)
			}
			return nil
		})
	})

	t.Run("too short", func(t *testing.T) {
		out, err := s.kubectlErr("create", "token", "bot", "--duration", "1m")
		if err == nil || !strings.Contains(out, "may not specify a duration less than 10 minutes") {
			t.Errorf("a one-minute token (err %v):\n%s", err, out)
		}
	})
}
