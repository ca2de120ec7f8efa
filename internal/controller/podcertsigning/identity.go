package podcertsigning

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ReasonIdentityNotLive denies a request whose pod, service account or node is not, at signing
// time, the live object it names.
const ReasonIdentityNotLive = "IdentityNotLive"

// liveIdentity checks that the identity a request asks to be certified is the cluster's now: its
// pod exists with the UID it names, runs as the named service account on the named node, and that
// service account and node exist with the UIDs named. NodeRestriction checks this when a node
// creates a request, but anyone else granted create on podcertificaterequests is checked only by
// validation, which cannot look objects up; the signer must not certify an identity no pod holds.
// It answers a reason to deny with (not denied: ""), or an error to try again.
func liveIdentity(ctx context.Context, client kubernetes.Interface, pcr *certificatesv1.PodCertificateRequest) (string, error) {
	s := pcr.Spec
	pod, err := client.CoreV1().Pods(pcr.Namespace).Get(ctx, s.PodName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("pod %s/%s does not exist", pcr.Namespace, s.PodName), nil
	case err != nil:
		return "", fmt.Errorf("reading pod %s/%s: %w", pcr.Namespace, s.PodName, err)
	case pod.UID != s.PodUID:
		return fmt.Sprintf("pod %s/%s has UID %s, not %s", pcr.Namespace, s.PodName, pod.UID, s.PodUID), nil
	case pod.Spec.ServiceAccountName != s.ServiceAccountName:
		return fmt.Sprintf("pod %s/%s runs as service account %q, not %q", pcr.Namespace, s.PodName, pod.Spec.ServiceAccountName, s.ServiceAccountName), nil
	case pod.Spec.NodeName != string(s.NodeName):
		return fmt.Sprintf("pod %s/%s is bound to node %q, not %q", pcr.Namespace, s.PodName, pod.Spec.NodeName, s.NodeName), nil
	}
	sa, err := client.CoreV1().ServiceAccounts(pcr.Namespace).Get(ctx, s.ServiceAccountName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("service account %s/%s does not exist", pcr.Namespace, s.ServiceAccountName), nil
	case err != nil:
		return "", fmt.Errorf("reading service account %s/%s: %w", pcr.Namespace, s.ServiceAccountName, err)
	case sa.UID != s.ServiceAccountUID:
		return fmt.Sprintf("service account %s/%s has UID %s, not %s", pcr.Namespace, s.ServiceAccountName, sa.UID, s.ServiceAccountUID), nil
	}
	node, err := client.CoreV1().Nodes().Get(ctx, string(s.NodeName), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("node %s does not exist", s.NodeName), nil
	case err != nil:
		return "", fmt.Errorf("reading node %s: %w", s.NodeName, err)
	case node.UID != s.NodeUID:
		return fmt.Sprintf("node %s has UID %s, not %s", s.NodeName, node.UID, s.NodeUID), nil
	}
	return "", nil
}
