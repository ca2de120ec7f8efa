package clusterinfo

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cluster-bootstrap/token/jws"
)

// FuzzVerify feeds Verify what an unverified server may answer: any kubeconfig and signature.
// It must not panic, and it may accept only a kubeconfig signed with the token that names a
// server and parses to at least one CA certificate.
func FuzzVerify(f *testing.F) {
	f.Add("apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster: {server: https://a}\n", "x..y")
	f.Add("{", "")
	f.Add("clusters: [{name: a, cluster: {server: https://a, certificate-authority-data: Zm9v}}]", "..")
	f.Fuzz(func(t *testing.T, kubeconfig, sig string) {
		for _, signed := range []bool{false, true} {
			s := sig
			if signed {
				var err error
				if s, err = jws.ComputeDetachedSignature(kubeconfig, tokenID, tokenSecret); err != nil {
					t.Skip()
				}
			}
			cm := &corev1.ConfigMap{Data: map[string]string{"kubeconfig": kubeconfig, SignatureKey(tokenID): s}}
			c, err := Verify(cm, tokenID, tokenSecret)
			if err != nil {
				continue
			}
			if !jws.DetachedTokenIsValid(s, kubeconfig, tokenID, tokenSecret) || c.Server == "" || len(c.CAs) == 0 {
				t.Fatalf("accepted %q with signature %q: %+v", kubeconfig, s, c)
			}
		}
	})
}
