// Package podcertificaterequest stores PodCertificateRequests and their /status: a node asks for
// a certificate for one of its pods, and the signer answers through /status, which only someone
// allowed to "sign" for the request's signer may write.
package podcertificaterequest

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/idplane/idplane/internal/admission/certificates/signerauthz"
	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

var resource = certificatesv1.Resource("podcertificaterequests")

// NewREST returns podcertificaterequests and their /status. az decides who may sign; clk is the
// clock an issued certificate's notBefore is judged against.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, az authorizer.Authorizer, clk clock.PassiveClock) (map[string]rest.Storage, error) {
	if az == nil {
		return nil, fmt.Errorf("building storage for %s: no authorizer to check signers with", resource)
	}
	s, err := store.New(optsGetter, store.Options{
		Resource: resource,
		Singular: "podcertificaterequest",
		Kind:     certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"),
		New:      func() runtime.Object { return &certificatesv1.PodCertificateRequest{} },
		NewList:  func() runtime.Object { return &certificatesv1.PodCertificateRequestList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*certificatesv1.PodCertificateRequest]{
			Namespaced: true,
			PrepareForCreate: func(r *certificatesv1.PodCertificateRequest) {
				r.Status = certificatesv1.PodCertificateRequestStatus{}
			},
			PrepareForUpdate: func(r, old *certificatesv1.PodCertificateRequest) { r.Status = old.Status },
			Validate:         validation.ValidatePodCertificateRequest,
			ValidateUpdate:   validation.ValidatePodCertificateRequestUpdate,
			ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("status")},
			APIVersion:       "certificates.k8s.io/v1",
		}),
		// Nodes list and watch their own requests by spec.nodeName.
		Triggers: storage.IndexerFuncs{"spec.nodeName": nodeNameTrigger},
	})
	if err != nil {
		return nil, err
	}
	RegisterMetrics()
	s.AfterCreate = countRequested
	status := s.WithStrategy(store.NewStrategy(typer, store.Rules[*certificatesv1.PodCertificateRequest]{
		Namespaced: true,
		PrepareForUpdate: func(r, old *certificatesv1.PodCertificateRequest) {
			// A signer answers; it changes neither the request nor its metadata.
			r.Spec = old.Spec
			metav1.ResetObjectMetaForStatus(&r.ObjectMeta, &old.ObjectMeta)
		},
		ValidateUpdate: func(r, old *certificatesv1.PodCertificateRequest) field.ErrorList {
			return validation.ValidatePodCertificateRequestStatusUpdate(r, old, clk.Now())
		},
		ResetFields: []fieldpath.Path{fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata")},
		APIVersion:  "certificates.k8s.io/v1",
	}))
	status.BeginUpdate = countAnswers(clk)
	return map[string]rest.Storage{
		"podcertificaterequests":        s,
		"podcertificaterequests/status": &statusREST{Subresource: store.NewSubresource(status), az: az},
	}, nil
}

func nodeNameTrigger(obj runtime.Object) string {
	return string(obj.(*certificatesv1.PodCertificateRequest).Spec.NodeName)
}

// statusREST is /status: every write needs verb "sign" on the stored request's signer. It is
// checked in the store's own update (not an admission plugin an operator could turn off), first,
// against the object as stored: a write cannot move the request to a signer of the writer's
// choosing, and a caller who may not sign learns nothing from validation.
type statusREST struct {
	*store.Subresource
	az authorizer.Authorizer
}

func (r *statusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.Subresource.Update(ctx, name, signerChecked{UpdatedObjectInfo: objInfo, r: r}, createValidation, updateValidation, forceAllowCreate, options)
}

// signerChecked authorizes the writer before the update is computed from the stored object.
type signerChecked struct {
	rest.UpdatedObjectInfo
	r *statusREST
}

func (s signerChecked) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	if err := s.r.authorizeSigner(ctx, old); err != nil {
		return nil, err
	}
	return s.UpdatedObjectInfo.UpdatedObject(ctx, old)
}

func (r *statusREST) authorizeSigner(ctx context.Context, old runtime.Object) error {
	stored, ok := old.(*certificatesv1.PodCertificateRequest)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("expected a stored PodCertificateRequest, got %T", old))
	}
	if stored.ResourceVersion == "" {
		// Nothing is stored: the store answers NotFound, as /status never creates.
		return nil
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		return apierrors.NewForbidden(resource, stored.Name, fmt.Errorf("no user in the request"))
	}
	if !signerauthz.Allowed(ctx, r.az, u, "sign", stored.Spec.SignerName) {
		return apierrors.NewForbidden(resource, stored.Name,
			fmt.Errorf("user %q not permitted to sign requests with signerName %q", u.GetName(), stored.Spec.SignerName))
	}
	return nil
}
