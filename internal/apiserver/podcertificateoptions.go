package apiserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/idplane/idplane/internal/certificates/podcert"
)

// PodCertificateOptions are the settings of the built-in PodCertificateRequest signers.
type PodCertificateOptions struct {
	// SPIFFETrustDomain is the trust domain of the SVIDs idplane.io/spiffe issues.
	SPIFFETrustDomain string
	// Duration caps the lifetime of what the built-in pod certificate signers issue; a request's
	// maxExpirationSeconds can only shorten it (and kubernetes.io signers never pass 24 h).
	Duration time.Duration
}

// The API's bounds on a pod certificate's lifetime.
const (
	minPodCertificateDuration = time.Hour
	maxPodCertificateDuration = 7862400 * time.Second
)

func newPodCertificateOptions() PodCertificateOptions {
	return PodCertificateOptions{SPIFFETrustDomain: "cluster.local", Duration: 24 * time.Hour}
}

// AddFlags registers the flags.
func (o *PodCertificateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.SPIFFETrustDomain, "spiffe-trust-domain", o.SPIFFETrustDomain, "SPIFFE trust domain of the X.509-SVIDs the idplane.io/spiffe signer issues (spiffe://<trust-domain>/ns/<namespace>/sa/<service-account>).")
	fs.DurationVar(&o.Duration, "pod-certificate-duration", o.Duration, "Longest lifetime of a certificate the built-in pod certificate signers issue (idplane.io/spiffe, kubernetes.io/kube-apiserver-client-pod); a request's maxExpirationSeconds can only shorten it, and kubernetes.io/kube-apiserver-client-pod never issues for more than 24h. Between 1h and 2184h (91 days).")
}

// Validate reports every invalid setting.
func (o *PodCertificateOptions) Validate() []error {
	var errs []error
	if err := podcert.ValidateTrustDomain(o.SPIFFETrustDomain); err != nil {
		errs = append(errs, fmt.Errorf("--spiffe-trust-domain: %w", err))
	}
	if o.Duration < minPodCertificateDuration || o.Duration > maxPodCertificateDuration {
		errs = append(errs, errors.New("--pod-certificate-duration must be between 1h and 2184h (91 days), the lifetimes the API accepts"))
	}
	return errs
}
