package csrapproving

import (
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/idplane/idplane/internal/authn/bootstraptoken"
	"github.com/idplane/idplane/internal/jointoken"
)

// Beyond upstream: a kubelet client CSR made with a bootstrap token is approved only for the
// node its token is bound to (jointoken.Binding). Upstream approves any node name for any
// bootstrap token allowed nodeclient, so whoever holds a token can become any node.

// Reasons of the events on a CSR left pending because of its token.
const (
	reasonTokenNodeMismatch = "BootstrapTokenNodeMismatch"
	reasonTokenUnknown      = "BootstrapTokenUnknown"
	reasonTokenUsed         = "BootstrapTokenUsed"
)

// tokenVerdict is what a CSR's bootstrap token allows: approval, or a reason and message for
// the event that says why the CSR waits for a human.
type tokenVerdict struct {
	allowed         bool
	reason, message string
}

// bootstrapToken is the id of the bootstrap token secret that made the CSR, and that secret's
// UID, or "" if no token secret did. The bootstrap token authenticator puts the UID in the user's
// extra, which the CSR keeps; a user of the same name from another authenticator (a static token
// file, say) has none and no secret binds it, as upstream.
func bootstrapToken(csr *certificatesv1.CertificateSigningRequest) (id, secretUID string) {
	id, ok := strings.CutPrefix(csr.Spec.Username, bootstrapapi.BootstrapUserPrefix)
	uids := csr.Spec.Extra[bootstraptoken.SecretUIDExtra]
	if !ok || len(uids) == 0 {
		return "", ""
	}
	return id, uids[0]
}

// judgeToken is the rule. secret is the token's secret as the server has it now, nil if it is
// gone; secretUID is the UID of the secret that authenticated the CSR's requester; commonName
// is the CSR's requested subject; usedBy names another kubelet client CSR this token made that is
// approved already ("" if none), which uses up a single-use token. A token that is gone, or a
// secret that is not the one that authenticated the CSR, is not judged unbound: it may have been
// bound (a used-up single-use token, a revoked one), and its requester can no longer
// authenticate to collect a certificate anyway, so leaving the CSR to a human loses nothing.
func judgeToken(id, secretUID string, secret *corev1.Secret, commonName, usedBy string) tokenVerdict {
	unknown := func(why string) tokenVerdict {
		return tokenVerdict{reason: reasonTokenUnknown, message: fmt.Sprintf(
			"Left pending for a human to decide: the secret of bootstrap token %s %s, so which node the token may join cannot be told", id, why)}
	}
	switch {
	case secret == nil:
		return unknown("is gone (deleted, expired or used up)")
	case secret.DeletionTimestamp != nil:
		return unknown("is being deleted")
	case secret.Type != bootstrapapi.SecretTypeBootstrapToken || string(secret.Data[bootstrapapi.BootstrapTokenIDKey]) != id:
		return unknown("is not that token's")
	case string(secret.UID) != secretUID:
		return unknown("is not the one that vouched for the CSR's requester (the token was replaced)")
	}
	binding, err := jointoken.BindingOf(secret)
	if err != nil {
		return unknown(fmt.Sprintf("has an unreadable binding (%v)", err))
	}
	switch {
	case binding.NodeName != "" && commonName != nodeUserPrefix+binding.NodeName:
		return tokenVerdict{reason: reasonTokenNodeMismatch, message: fmt.Sprintf(
			"Left pending for a human to decide: bootstrap token %s may join only node %q (%s), but the CSR asks for %q",
			id, binding.NodeName, jointoken.NodeNameKey, commonName)}
	case binding.SingleUse && usedBy != "":
		return tokenVerdict{reason: reasonTokenUsed, message: fmt.Sprintf(
			"Left pending for a human to decide: bootstrap token %s is single-use (%s) and CSR %q made with it is approved already",
			id, jointoken.SingleUseKey, usedBy)}
	}
	return tokenVerdict{allowed: true}
}

// approvedSibling names another kubelet client CSR made with the same token secret that
// is approved and has not failed (a failed one got no certificate), or returns "". The cache may
// lag behind this approver's own latest approval by moments; a second CSR racing the first that
// closely still asks only for the bound node.
func (c *Controller) approvedSibling(csr *certificatesv1.CertificateSigningRequest, secret *corev1.Secret) (string, error) {
	all, err := c.lister.List(labels.Everything())
	if err != nil {
		return "", fmt.Errorf("listing certificatesigningrequests: %w", err)
	}
	for _, o := range all {
		if o.Name == csr.Name || o.Spec.Username != csr.Spec.Username || o.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName ||
			!slices.Contains(o.Spec.Extra[bootstraptoken.SecretUIDExtra], string(secret.UID)) {
			continue
		}
		approved, failed := false, false
		for _, cond := range o.Status.Conditions {
			if cond.Status == corev1.ConditionTrue {
				approved = approved || cond.Type == certificatesv1.CertificateApproved
				failed = failed || cond.Type == certificatesv1.CertificateFailed
			}
		}
		if approved && !failed {
			return o.Name, nil
		}
	}
	return "", nil
}

// tokenSecret returns the secret of bootstrap token id, nil if the server has none.
func (c *Controller) tokenSecret(ctx context.Context, id string) (*corev1.Secret, error) {
	name := bootstraputil.BootstrapTokenSecretName(id)
	s, err := c.secrets.Get(name)
	if apierrors.IsNotFound(err) {
		// The token authenticated the CSR, so its secret existed: a cache behind the CSR's own
		// watch is checked against the server before the token is taken for gone.
		s, err = c.client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading bootstrap token secret %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	return s, nil
}

// tokenAllows says whether the bootstrap token that made csr, if one did, allows its approval,
// and when it does not, says so in an event on the CSR.
func (c *Controller) tokenAllows(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, commonName string) (bool, error) {
	id, secretUID := bootstrapToken(csr)
	if id == "" {
		return true, nil
	}
	secret, err := c.tokenSecret(ctx, id)
	if err != nil {
		return false, err
	}
	var usedBy string
	if secret != nil {
		if usedBy, err = c.approvedSibling(csr, secret); err != nil {
			return false, err
		}
	}
	v := judgeToken(id, secretUID, secret, commonName, usedBy)
	if !v.allowed {
		c.recorder.Event(csr, corev1.EventTypeWarning, v.reason, v.message)
	}
	return v.allowed, nil
}
