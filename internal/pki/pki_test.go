package pki

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestEnsureCACreatesThenReuses(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	ca, err := EnsureCA(f, "test-ca", t0)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "test-ca" {
		t.Errorf("CA cert: IsCA %v CN %q", ca.Cert.IsCA, ca.Cert.Subject.CommonName)
	}
	if got := ca.Cert.NotAfter.Sub(t0); got != caValidity {
		t.Errorf("CA validity %v, want %v", got, caValidity)
	}
	if info, err := os.Stat(f.CAKey()); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("CA key mode: %v, %v", info.Mode(), err)
	}
	again, err := EnsureCA(f, "other-name", t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Error("second EnsureCA made a new CA instead of reusing the files")
	}
}

// A signer's CA is its own key pair beside the cluster CA, created once and then reused, and
// half of one is refused like half of the cluster CA.
func TestEnsureSignerCA(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	cluster, err := EnsureCA(f, "cluster", t0)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := EnsureSignerCA(f, "kubelet-serving", t0)
	if err != nil {
		t.Fatal(err)
	}
	if f.SignerCACert("kubelet-serving") != filepath.Join(f.Dir, "kubelet-serving-ca.crt") {
		t.Errorf("signer CA file %s", f.SignerCACert("kubelet-serving"))
	}
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "idplane-kubelet-serving-ca" || ca.Cert.Equal(cluster.Cert) {
		t.Errorf("signer CA: IsCA %v CN %q, same as the cluster CA %v", ca.Cert.IsCA, ca.Cert.Subject.CommonName, ca.Cert.Equal(cluster.Cert))
	}
	if info, err := os.Stat(f.SignerCAKey("kubelet-serving")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("signer CA key mode: %v, %v", info, err)
	}
	again, err := EnsureSignerCA(f, "kubelet-serving", t0.Add(time.Hour))
	if err != nil || !again.Cert.Equal(ca.Cert) {
		t.Errorf("second EnsureSignerCA: %v, reused %v", err, err == nil && again.Cert.Equal(ca.Cert))
	}
	if err := os.Remove(f.SignerCAKey("kubelet-serving")); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureSignerCA(f, "kubelet-serving", t0); err == nil {
		t.Error("EnsureSignerCA with the key missing succeeded")
	}
}

func TestEnsureCARefusesHalfACA(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	if _, err := EnsureCA(f, "ca", t0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.CAKey()); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCA(f, "ca", t0); err == nil {
		t.Error("EnsureCA with the key missing succeeded; it must not replace the CA silently")
	}
}

func TestEnsureServingCert(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	ca, err := EnsureCA(f, "ca", t0)
	if err != nil {
		t.Fatal(err)
	}
	names := ServingNames{DNS: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}}
	first, _, err := EnsureServingCert(f, ca, names, t0)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ParseCertificate(first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool(ca), DNSName: "localhost", CurrentTime: t0}); err != nil {
		t.Errorf("serving cert does not verify for localhost: %v", err)
	}
	cases := []struct {
		name    string
		names   ServingNames
		now     time.Time
		reissue bool
	}{
		{"same names, fresh", names, t0.Add(24 * time.Hour), false},
		{"subset of names", ServingNames{DNS: []string{"localhost"}}, t0, false},
		{"new IP", ServingNames{DNS: []string{"localhost"}, IPs: []net.IP{net.ParseIP("10.0.0.7")}}, t0, true},
		{"new DNS name", ServingNames{DNS: []string{"idplane.example"}}, t0, true},
		{"within 30 days of expiry", names, t0.Add(servingValidity - 10*24*time.Hour), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			g := Files{Dir: dir}
			for _, p := range [][2]string{{f.ServingCert(), g.ServingCert()}, {f.ServingKey(), g.ServingKey()}} {
				data, err := os.ReadFile(p[0])
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p[1], data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, _, err := EnsureServingCert(g, ca, tc.names, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if reissued := string(got) != string(first); reissued != tc.reissue {
				t.Errorf("reissued = %v, want %v", reissued, tc.reissue)
			}
		})
	}
}

func TestServingCertFromAnotherCAIsReplaced(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	ca, err := EnsureCA(f, "ca", t0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := EnsureCA(Files{Dir: t.TempDir()}, "other", t0)
	if err != nil {
		t.Fatal(err)
	}
	names := ServingNames{DNS: []string{"localhost"}}
	if _, _, err := EnsureServingCert(f, other, names, t0); err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := EnsureServingCert(f, ca, names, t0)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ParseCertificate(certPEM)
	if err := cert.CheckSignatureFrom(ca.Cert); err != nil {
		t.Errorf("serving cert not re-issued by the current CA: %v", err)
	}
}

func TestAdminCertIsSystemMastersClient(t *testing.T) {
	f := Files{Dir: t.TempDir()}
	ca, err := EnsureCA(f, "ca", t0)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := EnsureAdminCert(f, ca, t0)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ParseCertificate(certPEM)
	if cert.Subject.CommonName != "idplane-admin" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin subject %v", cert.Subject)
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool(ca), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: t0})
	if err != nil {
		t.Errorf("admin cert is not a client cert of the CA: %v", err)
	}
	again, _, err := EnsureAdminCert(f, ca, t0.Add(time.Hour))
	if err != nil || string(again) != string(certPEM) {
		t.Errorf("admin cert not reused (err %v)", err)
	}
}

func TestServiceAccountKeyReused(t *testing.T) {
	f := Files{Dir: filepath.Join(t.TempDir(), "pki")}
	k1, err := EnsureServiceAccountKey(f)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := EnsureServiceAccountKey(f)
	if err != nil {
		t.Fatal(err)
	}
	if !publicKeysEqual(k1.Public(), k2.Public()) {
		t.Error("service-account key changed between calls")
	}
	if _, err := os.Stat(f.SAPub()); err != nil {
		t.Errorf("sa.pub: %v", err)
	}
}

func TestIssueNeverOutlivesCA(t *testing.T) {
	ca, err := EnsureCA(Files{Dir: t.TempDir()}, "ca", t0)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, err := Issue(ca, IssueRequest{CommonName: "x", Validity: 20 * caValidity, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := ParseCertificate(certPEM)
	if cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("leaf expires %v after its CA %v", cert.NotAfter, ca.Cert.NotAfter)
	}
}

func pool(ca *CA) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func TestParseRefusesBadPEM(t *testing.T) {
	ca, err := EnsureCA(Files{Dir: t.TempDir()}, "test-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certPEM := ca.CertPEM
	cases := []struct {
		name  string
		input []byte
	}{
		{"empty", nil},
		{"not PEM", []byte("hello")},
		{"truncated block", certPEM[:len(certPEM)/2]},
		{"garbage in a block", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseCertificate(tc.input); err == nil {
				t.Error("ParseCertificate succeeded")
			}
			if _, err := ParseKey(tc.input); err == nil {
				t.Error("ParseKey succeeded")
			}
		})
	}
	if _, err := ParseKey(certPEM); err == nil {
		t.Error("ParseKey of a certificate succeeded")
	}
}
