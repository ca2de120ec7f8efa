// Package certificatesigningrequest stores CertificateSigningRequests with their approval and
// status subresources: the requester asks, an approver answers through /approval, a signer
// through /status.
package certificatesigningrequest

import (
	"context"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/idplane/idplane/internal/registry/store"
	"github.com/idplane/idplane/internal/validation"
)

// NewREST returns certificatesigningrequests, their /status and their /approval.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
	s, err := store.New(optsGetter, store.Options{
		Resource: certificatesv1.Resource("certificatesigningrequests"),
		Singular: "certificatesigningrequest",
		Kind:     certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"),
		New:      func() runtime.Object { return &certificatesv1.CertificateSigningRequest{} },
		NewList:  func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		Strategy: store.NewStrategy(typer, store.Rules[*certificatesv1.CertificateSigningRequest]{
			PrepareForCreate: func(csr *certificatesv1.CertificateSigningRequest) {
				csr.Status = certificatesv1.CertificateSigningRequestStatus{}
			},
			RecordRequester: recordRequester,
			PrepareForUpdate: func(csr, old *certificatesv1.CertificateSigningRequest) {
				csr.Spec, csr.Status = old.Spec, old.Status
			},
			ValidateRequest: validateCreate,
			ValidateUpdate:  validation.ValidateCertificateSigningRequestUpdate,
			ResetFields:     []fieldpath.Path{fieldpath.MakePathOrDie("status")},
			APIVersion:      "certificates.k8s.io/v1",
		}),
		ShortNames: []string{"csr"},
	})
	if err != nil {
		return nil, err
	}
	RegisterMetrics()
	s.AfterCreate = countRequestedDuration
	status := s.WithStrategy(store.NewStrategy(typer, store.Rules[*certificatesv1.CertificateSigningRequest]{
		PrepareForUpdate: func(csr, old *certificatesv1.CertificateSigningRequest) { csr.Spec = old.Spec },
		ValidateUpdate:   validation.ValidateCertificateSigningRequestStatusUpdate,
		ResetFields:      []fieldpath.Path{fieldpath.MakePathOrDie("spec")},
		APIVersion:       "certificates.k8s.io/v1",
	}))
	status.BeginUpdate = countHonoredDuration
	approval := s.WithStrategy(store.NewStrategy(typer, store.Rules[*certificatesv1.CertificateSigningRequest]{
		PrepareForUpdate: func(csr, old *certificatesv1.CertificateSigningRequest) {
			// Only the conditions are an approver's to change; the certificate is the signer's.
			csr.Spec, csr.Status.Certificate = old.Spec, old.Status.Certificate
		},
		ValidateUpdate: validation.ValidateCertificateSigningRequestApprovalUpdate,
		ResetFields:    []fieldpath.Path{fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "certificate")},
		APIVersion:     "certificates.k8s.io/v1",
	}))
	return map[string]rest.Storage{
		"certificatesigningrequests":          s,
		"certificatesigningrequests/status":   store.NewSubresource(status),
		"certificatesigningrequests/approval": store.NewSubresource(approval),
	}, nil
}

// recordRequester sets who asked from the authenticated request, whatever the client sent: a
// signer trusts these fields to say who will hold the certificate.
func recordRequester(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) {
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	u, ok := request.UserFrom(ctx)
	if !ok {
		return
	}
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = u.GetName(), u.GetUID(), u.GetGroups()
	if extra := u.GetExtra(); len(extra) > 0 {
		csr.Spec.Extra = make(map[string]certificatesv1.ExtraValue, len(extra))
		for k, v := range extra {
			csr.Spec.Extra[k] = v
		}
	}
}

// validateCreate applies v1's rules, loosened as v1beta1 allows for requests made through it.
func validateCreate(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	info, ok := request.RequestInfoFrom(ctx)
	v1beta1 := ok && info.APIVersion == certificatesv1beta1.SchemeGroupVersion.Version
	return validation.ValidateCertificateSigningRequestWithOptions(csr, validation.CSROptions{AllowLegacyUnknownSigner: v1beta1})
}
