package podcert

import (
	"testing"
	"time"
)

// BenchmarkDecide: one issuance per iteration (parse and check the stub request, sign the leaf),
// for each signer with a P-256 key: the signer's own cost, without the API round trips.
func BenchmarkDecide(b *testing.B) {
	for _, tc := range []struct{ signer, short string }{
		{SPIFFESignerName, "spiffe"},
		{ClientPodSignerName, "kube-apiserver-client-pod"},
	} {
		b.Run(tc.short, func(b *testing.B) {
			ca := testCA(b, tc.short)
			pol := Policies()[tc.signer]
			pcr := newPCR(b, tc.signer, ECDSAP256)
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				if out := pol.Decide(params, ca, pcr, now); out.Condition != "Issued" {
					b.Fatalf("not issued: %+v", out)
				}
			}
		})
	}
}
