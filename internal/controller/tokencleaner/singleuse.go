package tokencleaner

import (
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/idplane/idplane/internal/authn/bootstraptoken"
	"github.com/idplane/idplane/internal/jointoken"
)

// Beyond upstream: a single-use token (jointoken.SingleUseKey) is deleted once a kubelet
// client certificate was issued on a CSR it made.

// singleUseGrace is how long a single-use token outlives the first certificate issued with it.
// The agent that asked collects the certificate with the token (it lists, then watches, its CSR
// right after creating it, while the approver and signer work); a token deleted before that
// would leave the agent unable to, with no way to ask again. Meanwhile the approver approves no
// second CSR of the token (csrapproving), so the grace lets nobody a second certificate.
const singleUseGrace = time.Minute

// issuedByTokenIndex finds the kubelet client CSRs with a certificate that each bootstrap token
// made, by token id.
const issuedByTokenIndex = "tokencleaner.issued-by-bootstrap-token"

// issuedTokenID is the id of the bootstrap token that made csr when csr is a kubelet client CSR
// with its certificate issued, else "".
func issuedTokenID(csr *certificatesv1.CertificateSigningRequest) string {
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || len(csr.Status.Certificate) == 0 {
		return ""
	}
	id, ok := strings.CutPrefix(csr.Spec.Username, bootstrapapi.BootstrapUserPrefix)
	if !ok {
		return ""
	}
	return id
}

func indexIssuedByToken(obj any) ([]string, error) {
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return nil, nil
	}
	if id := issuedTokenID(csr); id != "" {
		return []string{id}, nil
	}
	return nil, nil
}

// issuedAt is when csr's certificate was approved, as near as the CSR tells: its Approved
// condition's time, else its creation.
func issuedAt(csr *certificatesv1.CertificateSigningRequest) time.Time {
	for _, cond := range csr.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue {
			if !cond.LastUpdateTime.IsZero() {
				return cond.LastUpdateTime.Time
			}
			if !cond.LastTransitionTime.IsZero() {
				return cond.LastTransitionTime.Time
			}
		}
	}
	return csr.CreationTimestamp.Time
}

// usedUp says whether s is a single-use token a certificate was issued with and, if so, how long
// until its grace ends (zero or less: delete it now).
func (c *Cleaner) usedUp(s *corev1.Secret, now time.Time) (time.Duration, bool, error) {
	binding, err := jointoken.BindingOf(s)
	if err != nil || !binding.SingleUse {
		// A malformed binding authenticates still, but the approver approves nothing for it.
		return 0, false, nil
	}
	id := string(s.Data[bootstrapapi.BootstrapTokenIDKey])
	if s.Name != bootstraputil.BootstrapTokenSecretName(id) {
		// The authenticator finds a token's secret by name: this one authenticates nobody.
		return 0, false, nil
	}
	issued, err := c.csrs.ByIndex(issuedByTokenIndex, id)
	if err != nil {
		return 0, false, err
	}
	var first time.Time
	used := false
	for _, obj := range issued {
		csr := obj.(*certificatesv1.CertificateSigningRequest)
		if !slices.Contains(csr.Spec.Extra[bootstraptoken.SecretUIDExtra], string(s.UID)) {
			// Made with another secret of the same id (an earlier one), or by a user of that
			// name another authenticator vouched for: not with this token.
			continue
		}
		if t := issuedAt(csr); !used || t.Before(first) {
			first, used = t, true
		}
	}
	if !used {
		return 0, false, nil
	}
	return first.Add(singleUseGrace).Sub(now), true, nil
}
