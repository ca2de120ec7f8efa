package webhook

import (
	"context"
	"encoding/json"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/dynamic"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/idplane/idplane/internal/gmsa"
)

// credSpecGVR is where the webhook reads GMSACredentialSpecs: v1, the version every cluster that
// runs the upstream CRD or deploy/gmsa-webhook's serves.
var credSpecGVR = schema.GroupVersionResource{Group: gmsa.Group, Version: "v1", Resource: gmsa.Resource}

// ClusterCredSpecs looks GMSACredentialSpecs up in the cluster, one GET per spec a request names:
// the webhook serves any cluster, where it cannot assume the typed API, so it reads them through
// the dynamic client.
func ClusterCredSpecs(client dynamic.Interface) gmsa.CredSpecs {
	return clusterCredSpecs{client.Resource(credSpecGVR)}
}

type clusterCredSpecs struct {
	client dynamic.ResourceInterface
}

// CredSpec returns the object's credspec as JSON. A GET that fails is returned as is, so that a
// NotFound stays one for the GMSA logic (422) and anything else is a failed lookup (500). An
// object without a credspec has nothing to give a pod: it yields no bytes, which the GMSA logic
// refuses (422) as it refuses a credspec that is not JSON.
func (s clusterCredSpecs) CredSpec(ctx context.Context, name string) ([]byte, error) {
	obj, err := s.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	spec, ok := obj.Object["credspec"]
	if !ok || spec == nil {
		return nil, nil
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the credspec of GMSACredentialSpec %q: %w", name, err)
	}
	return raw, nil
}

// SubjectAccessReviews asks use with LocalSubjectAccessReviews in the pod's namespace, which a
// webhook may create with only the right to create them in the namespaces it serves.
func SubjectAccessReviews(client authorizationv1client.LocalSubjectAccessReviewsGetter) gmsa.UseChecker {
	return localReviews{client}
}

type localReviews struct {
	client authorizationv1client.LocalSubjectAccessReviewsGetter
}

// MayUse asks whether u, with its groups, UID and extra as it authenticated, may use the named
// spec. An authorizer that failed on the way to its answer (evaluationError) does not make the
// answer an error: the review's decision stands, and the failure is part of the reason.
func (c localReviews) MayUse(ctx context.Context, namespace string, u user.Info, name string) (bool, string, error) {
	var extra map[string]authorizationv1.ExtraValue
	if e := u.GetExtra(); len(e) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(e))
		for k, v := range e {
			extra[k] = v
		}
	}
	review, err := c.client.LocalSubjectAccessReviews(namespace).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace,
				Verb:      gmsa.Verb,
				Group:     gmsa.Group,
				Resource:  gmsa.Resource,
				Name:      name,
			},
			User:   u.GetName(),
			Groups: u.GetGroups(),
			UID:    u.GetUID(),
			Extra:  extra,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("LocalSubjectAccessReview in namespace %q: %w", namespace, err)
	}
	reason := review.Status.Reason
	if e := review.Status.EvaluationError; e != "" {
		if reason != "" {
			reason += "; "
		}
		reason += "evaluation error: " + e
	}
	return review.Status.Allowed, reason, nil
}
