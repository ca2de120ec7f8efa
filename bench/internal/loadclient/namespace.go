package loadclient

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NamespaceGoneTimeout bounds the wait for the namespace controller to remove a load's namespace.
const NamespaceGoneTimeout = time.Minute

// CreateNamespace creates a namespace of its own for one load run, named prefix plus a random
// suffix, so that runs against the same server never see each other's objects.
func CreateNamespace(ctx context.Context, cs kubernetes.Interface, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	created, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating a namespace %s*: %w", prefix, err)
	}
	return created.Name, nil
}

// DeleteNamespace removes a load's namespace and waits up to NamespaceGoneTimeout for the
// namespace controller to empty it, so that the next run measures an unburdened server. It starts
// from a fresh context: it is the clean-up of a run that may have been interrupted.
func DeleteNamespace(cs kubernetes.Interface, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), NamespaceGoneTimeout)
	defer cancel()
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting namespace %s: %w", ns, err)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("namespace %s still present after %s", ns, NamespaceGoneTimeout)
		}
	}
}
