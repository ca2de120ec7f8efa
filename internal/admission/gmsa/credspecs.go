package gmsa

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/idplane/idplane/internal/gmsa"
	"github.com/idplane/idplane/internal/managedfields"
)

// Resource is where the server serves GMSACredentialSpecs.
var Resource = schema.GroupVersionResource{Group: gmsa.Group, Version: "v1", Resource: gmsa.Resource}

// InformerCredSpecs reads GMSACredentialSpecs from a shared informer so that a pod create costs no
// store read; only a spec the informer does not hold yet is read from the server, so that a pod
// created right after its spec is not refused.
type InformerCredSpecs struct {
	lister cache.GenericLister
	client dynamic.NamespaceableResourceInterface
}

// NewInformerCredSpecs registers the informer with f; it starts with the factory. The informer
// holds the specs without managed fields, which admission never reads.
func NewInformerCredSpecs(f dynamicinformer.DynamicSharedInformerFactory, client dynamic.Interface) *InformerCredSpecs {
	informer := f.ForResource(Resource)
	// A transform can only be refused once the informer runs, and the factory starts later.
	_ = informer.Informer().SetTransform(managedfields.Drop)
	return &InformerCredSpecs{lister: informer.Lister(), client: client.Resource(Resource)}
}

var _ gmsa.CredSpecs = (*InformerCredSpecs)(nil)

// CredSpec returns the spec's credspec as JSON ("null" when the object has none, which the GMSA
// logic refuses as unusable).
func (s *InformerCredSpecs) CredSpec(ctx context.Context, name string) ([]byte, error) {
	obj, err := s.lister.Get(name)
	if apierrors.IsNotFound(err) {
		obj, err = s.client.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("GMSACredentialSpec %q came as a %T", name, obj)
	}
	spec, err := json.Marshal(u.Object["credspec"])
	if err != nil {
		return nil, fmt.Errorf("encoding the credspec of GMSACredentialSpec %q: %w", name, err)
	}
	return spec, nil
}
