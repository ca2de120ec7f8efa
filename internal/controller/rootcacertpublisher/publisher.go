// Package rootcacertpublisher publishes, in every active namespace, the ConfigMap kube-root-ca.crt
// holding the CA that verifies the API server, so that workloads (and projected service-account
// token volumes) can trust the server without being handed the CA out of band.
package rootcacertpublisher

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/idplane/idplane/internal/controller/everynamespace"
)

// The names and the description are Kubernetes': clients look for them.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DataKey               = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// publisher keeps kube-root-ca.crt present and current.
type publisher struct {
	client     kubernetes.Interface
	caPEM      string
	configMaps corelisters.ConfigMapLister
}

// New returns a publisher of caPEM on the shared informers.
func New(client kubernetes.Interface, namespaces coreinformers.NamespaceInformer, configMaps coreinformers.ConfigMapInformer, caPEM []byte) (*everynamespace.Loop, error) {
	p := &publisher{client: client, caPEM: string(caPEM), configMaps: configMaps.Lister()}
	return everynamespace.New(namespaces, everynamespace.Config{
		Queue: "root_ca_cert_publisher", What: "Publishing the root CA configmap",
		Name: ConfigMapName, Objects: configMaps.Informer(), Ensure: p.ensure,
	})
}

func (p *publisher) ensure(ctx context.Context, namespace string) error {
	want := map[string]string{DataKey: p.caPEM}
	cm, err := p.configMaps.ConfigMaps(namespace).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err = p.client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: ConfigMapName, Namespace: namespace,
				Annotations: map[string]string{DescriptionAnnotation: Description},
			},
			Data: want,
		}, metav1.CreateOptions{})
		switch {
		case err == nil, everynamespace.NamespaceGone(err):
			return nil
		case apierrors.IsAlreadyExists(err):
			// The cache is behind; the configmap's add event brings the namespace back to compare
			// the contents.
			return nil
		default:
			return fmt.Errorf("creating configmap %s/%s: %w", namespace, ConfigMapName, err)
		}
	}
	if err != nil {
		return fmt.Errorf("reading configmap %s/%s from the cache: %w", namespace, ConfigMapName, err)
	}
	// As upstream: the data must be exactly the CA and some description must be there. A restore
	// rewrites both and keeps every other label and annotation.
	if maps.Equal(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	if _, err := p.client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("restoring configmap %s/%s: %w", namespace, ConfigMapName, err)
	}
	return nil
}
