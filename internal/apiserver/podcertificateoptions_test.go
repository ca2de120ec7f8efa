package apiserver

import (
	"strings"
	"testing"
	"time"
)

func TestPodCertificateOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		modify  func(*PodCertificateOptions)
		wantErr string
	}{
		{name: "defaults", modify: func(*PodCertificateOptions) {}},
		{name: "dotted trust domain", modify: func(o *PodCertificateOptions) { o.SPIFFETrustDomain = "prod.example-1_a.org" }},
		{name: "trust domain with capitals", modify: func(o *PodCertificateOptions) { o.SPIFFETrustDomain = "Example.org" }, wantErr: "--spiffe-trust-domain"},
		{name: "trust domain with a port", modify: func(o *PodCertificateOptions) { o.SPIFFETrustDomain = "example.org:443" }, wantErr: "--spiffe-trust-domain"},
		{name: "trust domain as a URI", modify: func(o *PodCertificateOptions) { o.SPIFFETrustDomain = "spiffe://example.org" }, wantErr: "--spiffe-trust-domain"},
		{name: "empty trust domain", modify: func(o *PodCertificateOptions) { o.SPIFFETrustDomain = "" }, wantErr: "--spiffe-trust-domain"},
		{name: "an hour", modify: func(o *PodCertificateOptions) { o.Duration = time.Hour }},
		{name: "91 days", modify: func(o *PodCertificateOptions) { o.Duration = 91 * 24 * time.Hour }},
		{name: "under an hour", modify: func(o *PodCertificateOptions) { o.Duration = 59 * time.Minute }, wantErr: "--pod-certificate-duration"},
		{name: "past 91 days", modify: func(o *PodCertificateOptions) { o.Duration = 92 * 24 * time.Hour }, wantErr: "--pod-certificate-duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(&o.PodCertificates)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
