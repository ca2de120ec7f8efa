// Package reviewserving answers the review creates (TokenReview, SubjectAccessReview and their
// kin) and TokenRequest without the library's generic create handler. Nothing of these is stored,
// so what that handler spends most of its time on for a review, building metadata.managedFields,
// buys a client nothing; everything else a create does (content negotiation, create options,
// strict decoding and its warnings, the namespace rule, mutating and validating admission, audit,
// metrics, Status answers) is kept, through the library's own helpers.
//
// The handler sits where the library's router sits, inside the filter chain: a request reaches it
// only after authentication, audit, priority-and-fairness and the caller's authorization, exactly
// as before. A request the library would refuse before the review runs (a media type it does not
// serve, bad create options, a body it cannot decode, a wrong kind or namespace) is handed to the
// library's handler with its body intact, so the refusal is the library's own, byte for byte.
package reviewserving

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/metrics"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// createTimeout bounds a review as the library bounds every create (its requestTimeoutUpperBound).
const createTimeout = 34 * time.Second

// Resource names a resource this package serves: its group, version and resource, its
// subresource (a create of a subresource names its parent object in the path), and whether its
// path is under a namespace.
type Resource struct {
	schema.GroupVersionResource
	Subresource string
	Namespaced  bool
}

// storagePath is how the API group's storage map names the resource.
func (r Resource) storagePath() string {
	if r.Subresource == "" {
		return r.Resource
	}
	return r.Resource + "/" + r.Subresource
}

// served are the resources answered here. Every one is a create that stores nothing and returns
// the object it was given with its status filled in: the reviews, and the TokenRequest of a
// service account.
var served = []Resource{
	{schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "tokenreviews"}, "", false},
	{schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}, "", false},
	{schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}, "", false},
	{schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}, "", false},
	{schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "localsubjectaccessreviews"}, "", true},
	{schema.GroupVersionResource{Group: "", Version: "v1", Resource: "serviceaccounts"}, "token", true},
}

// Scheme is what the handler decodes, converts and encodes with: the server's API group
// settings, as the library's installer gives them to its own handlers.
type Scheme struct {
	Serializer      runtime.NegotiatedSerializer
	ParameterCodec  runtime.ParameterCodec
	Creater         runtime.ObjectCreater
	Convertor       runtime.ObjectConvertor
	Defaulter       runtime.ObjectDefaulter
	Typer           runtime.ObjectTyper
	UnsafeConvertor runtime.ObjectConvertor
	// EquivalentResourceMapper is the server's registry of equivalent resources (admission reads it).
	EquivalentResourceMapper runtime.EquivalentResourceMapper
	// MaxRequestBodyBytes bounds a request body, as the server's configuration does.
	MaxRequestBodyBytes int64
}

// Dispatcher sends the creates of the served review resources to this package's handler and every
// other request to the handler it wraps. Until Install has run it sends everything on.
type Dispatcher struct {
	endpoints atomic.Pointer[map[route]*endpoint]
}

// route is how a request finds its endpoint: the group, version, resource and subresource of its
// RequestInfo.
type route struct {
	group, version, resource, subresource string
}

type endpoint struct {
	res Resource
	// new makes the object a request decodes into; create runs the storage's create.
	new    func() runtime.Object
	create func(ctx context.Context, name string, obj runtime.Object, validate rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error)
	// preserveMeta keeps the system fields of the object's metadata a subresource create is sent.
	preserveMeta bool
	admit        admission.Interface
	scope        *handlers.RequestScope
}

// Install serves the resources in served through storage (keyed as the API groups hold it: the
// resource, or resource/subresource), with the server's admission chain. A served resource missing
// from storage is an error: the library would then answer it and the caller believes otherwise.
func (d *Dispatcher) Install(s Scheme, admit admission.Interface, storage map[schema.GroupVersionResource]rest.Storage) error {
	eps := map[route]*endpoint{}
	for _, res := range served {
		e, err := newEndpoint(s, admit, res, storage[res.GroupVersion().WithResource(res.storagePath())])
		if err != nil {
			return fmt.Errorf("serving %s %s: %w", res.GroupVersionResource, res.Subresource, err)
		}
		eps[route{res.Group, res.Version, res.Resource, res.Subresource}] = e
	}
	d.endpoints.Store(&eps)
	return nil
}

// newEndpoint gives the handler what the library's installer gives its create handler for st.
func newEndpoint(s Scheme, admit admission.Interface, res Resource, st rest.Storage) (*endpoint, error) {
	e := &endpoint{res: res, admit: admit}
	switch c := st.(type) {
	case nil:
		return nil, fmt.Errorf("no storage")
	case rest.NamedCreater:
		e.new, e.create = c.New, c.Create
	case rest.Creater:
		e.new = c.New
		e.create = func(ctx context.Context, _ string, obj runtime.Object, validate rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
			return c.Create(ctx, obj, validate, options)
		}
	default:
		return nil, fmt.Errorf("storage %T does not create", st)
	}
	if p, ok := st.(rest.SubresourceObjectMetaPreserver); ok && res.Subresource != "" {
		e.preserveMeta = p.PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate()
	}
	var kind schema.GroupVersionKind
	if p, ok := st.(rest.GroupVersionKindProvider); ok {
		kind = p.GroupVersionKind(res.GroupVersion())
	} else {
		var err error
		if kind, err = kindOf(s.Typer, e.new(), res.GroupVersion()); err != nil {
			return nil, err
		}
	}
	e.scope = &handlers.RequestScope{
		Serializer:               s.Serializer,
		ParameterCodec:           s.ParameterCodec,
		Creater:                  s.Creater,
		Convertor:                s.Convertor,
		Defaulter:                s.Defaulter,
		Typer:                    s.Typer,
		UnsafeConvertor:          s.UnsafeConvertor,
		EquivalentResourceMapper: s.EquivalentResourceMapper,
		Resource:                 res.GroupVersionResource,
		Subresource:              res.Subresource,
		Kind:                     kind,
		HubGroupVersion:          schema.GroupVersion{Group: kind.Group, Version: runtime.APIVersionInternal},
		MetaGroupVersion:         metav1.SchemeGroupVersion,
		MaxRequestBodyBytes:      s.MaxRequestBodyBytes,
	}
	if a, ok := st.(rest.GroupVersionAcceptor); ok {
		e.scope.AcceptsGroupVersionDelegate = a
	}
	return e, nil
}

func kindOf(typer runtime.ObjectTyper, obj runtime.Object, gv schema.GroupVersion) (schema.GroupVersionKind, error) {
	kinds, _, err := typer.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	for _, k := range kinds {
		if k.GroupVersion() == gv {
			return k, nil
		}
	}
	return schema.GroupVersionKind{}, fmt.Errorf("%T has no kind in %s", obj, gv)
}

// Wrap returns the handler that dispatches: it must run after the request-info filter, so inside
// the library's filter chain, where the library's router would run.
func (d *Dispatcher) Wrap(library http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if e := d.match(req); e != nil {
			// The request metrics carry the labels the library's route gives a create: verb
			// POST, scope "resource" (as on every create route), the API server component.
			metrics.InstrumentHandlerFunc(http.MethodPost, e.res.Group, e.res.Version, e.res.Resource, e.res.Subresource, "resource", metrics.APIServerComponent, false, "",
				func(w http.ResponseWriter, req *http.Request) { e.serve(w, req, library) })(w, req)
			return
		}
		library.ServeHTTP(w, req)
	})
}

// match finds the endpoint of a served create, or nil. Only the canonical path matches: anything
// else (a name after a review's resource, a namespace on a cluster-wide review, a trailing slash)
// goes to the library, which answers it as it always has.
func (d *Dispatcher) match(req *http.Request) *endpoint {
	eps := d.endpoints.Load()
	if eps == nil || req.Method != http.MethodPost {
		return nil
	}
	ri, ok := request.RequestInfoFrom(req.Context())
	if !ok || !ri.IsResourceRequest || ri.Verb != "create" {
		return nil
	}
	e := (*eps)[route{ri.APIGroup, ri.APIVersion, ri.Resource, ri.Subresource}]
	if e == nil || (ri.Namespace != "") != e.res.Namespaced || (ri.Name != "") != (e.res.Subresource != "") {
		return nil
	}
	if req.URL.Path != canonicalPath(e.res, ri.Namespace, ri.Name) {
		return nil
	}
	return e
}

func canonicalPath(res Resource, namespace, name string) string {
	p := "/apis/" + res.Group + "/" + res.Version + "/"
	if res.Group == "" {
		p = "/api/" + res.Version + "/"
	}
	if res.Namespaced {
		p += "namespaces/" + namespace + "/"
	}
	p += res.Resource
	if res.Subresource != "" {
		p += "/" + name + "/" + res.Subresource
	}
	return p
}
