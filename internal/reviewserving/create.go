package reviewserving

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/endpoints/handlers/finisher"
	requestmetrics "k8s.io/apiserver/pkg/endpoints/handlers/metrics"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/util/dryrun"
	"k8s.io/apiserver/pkg/warning"

	"github.com/idplane/idplane/internal/stackreserve"
)

// serve answers one create. Up to the point where the object is audited, every refusal is left to
// the library's handler; after it, errors are answered with the library's Status writer.
func (e *endpoint) serve(w http.ResponseWriter, req *http.Request, library http.Handler) {
	scope := e.scope
	fail := func(err error) {
		responsewriters.ErrorNegotiated(err, scope.Serializer, scope.Kind.GroupVersion(), w, req)
	}
	ri, _ := request.RequestInfoFrom(req.Context())
	namespace, name := ri.Namespace, ri.Name

	// A conversion of the answer (as=Table, as=PartialObjectMetadata) is rare and the library's.
	out, _, err := negotiation.NegotiateOutputMediaType(req, scope.Serializer, scope)
	if err != nil || out.Convert != nil {
		library.ServeHTTP(w, req)
		return
	}
	in, err := negotiation.NegotiateInputSerializer(req, false, scope.Serializer)
	if err != nil {
		library.ServeHTTP(w, req)
		return
	}
	options := &metav1.CreateOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), scope.MetaGroupVersion, options); err != nil ||
		len(validation.ValidateCreateOptions(options)) > 0 {
		library.ServeHTTP(w, req)
		return
	}
	options.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("CreateOptions"))

	body, tooLarge, err := readBody(req.Body, scope.MaxRequestBodyBytes)
	if err != nil {
		fail(err)
		return
	}
	if tooLarge {
		handOver(w, req, body, library)
		return
	}

	// Warn is the default, and Warn decodes strictly too: it only turns the refusal into warnings.
	directive := options.FieldValidation
	if directive == "" {
		directive = metav1.FieldValidationWarn
	}
	decodeWith := in.Serializer
	if directive != metav1.FieldValidationIgnore {
		decodeWith = in.StrictSerializer
	}
	defaultGVK := scope.Kind
	obj, gvk, err := scope.Serializer.DecoderToVersion(decodeWith, scope.HubGroupVersion).Decode(body, &defaultGVK, e.new())
	var unknown []error
	if err != nil {
		strict, isStrict := runtime.AsStrictDecodingError(err)
		if !isStrict || obj == nil || directive != metav1.FieldValidationWarn {
			handOver(w, req, body, library)
			return
		}
		unknown = strict.Errors()
	}
	if gvk == nil || !scope.AcceptsGroupVersion(gvk.GroupVersion()) {
		handOver(w, req, body, library)
		return
	}
	objMeta, err := meta.Accessor(obj)
	if err != nil {
		handOver(w, req, body, library)
		return
	}
	expectedNamespace := rest.ExpectedNamespaceForResource(namespace, scope.Resource)
	// The namespace rule is checked on a probe first: the object is audited as the client sent it.
	probe := &metav1.ObjectMeta{Namespace: objMeta.GetNamespace()}
	if rest.EnsureObjectNamespaceMatchesRequestNamespace(expectedNamespace, probe) != nil ||
		// The library deduplicates owner references with a warning; a review has no use for them.
		len(objMeta.GetOwnerReferences()) > 0 {
		handOver(w, req, body, library)
		return
	}

	// From here on the review is ours.
	for _, msg := range strictWarnings(unknown) {
		warning.AddWarning(req.Context(), "", msg)
	}
	requestmetrics.RecordRequestBodySize(req.Context(), scope.Resource.GroupResource(), requestmetrics.Create, len(body))
	ctx, cancel := context.WithTimeout(req.Context(), createTimeout)
	defer cancel()
	ctx = request.WithNamespace(ctx, namespace)
	admit := admission.WithAudit(e.admit)
	audit.LogRequestObject(req.Context(), obj, gvk.GroupVersion(), scope.Resource, scope.Subresource, scope.Serializer)
	if !e.preserveMeta {
		rest.WipeObjectMetaSystemFields(objMeta)
	}
	_ = rest.EnsureObjectNamespaceMatchesRequestNamespace(expectedNamespace, objMeta) // checked on the probe
	// Nothing of a review or a token request is stored, so it has no field managers; what a
	// client sent is dropped.
	objMeta.SetManagedFields(nil)

	userInfo, _ := request.UserFrom(ctx)
	if name == "" {
		name = objMeta.GetName()
	}
	attrs := admission.NewAttributesRecord(obj, nil, scope.Kind, namespace, name, scope.Resource, scope.Subresource, admission.Create, options, dryrun.IsDryRun(options.DryRun), userInfo)
	result, err := finisher.FinishRequest(ctx, func() (runtime.Object, error) {
		// The storage call runs on a goroutine of its own; grow its stack while it is shallow.
		stackreserve.Reserve()
		if mutating, ok := admit.(admission.MutationInterface); ok && mutating.Handles(admission.Create) {
			if err := mutating.Admit(ctx, attrs, scope); err != nil {
				return nil, err
			}
		}
		return e.create(ctx, name, obj, rest.AdmissionToValidateObjectFunc(admit, attrs, scope), options)
	})
	if err != nil {
		fail(err)
		return
	}
	if status, ok := result.(*metav1.Status); ok && status.Code == 0 {
		status.Code = http.StatusCreated
	}
	responsewriters.WriteObjectNegotiated(scope.Serializer, scope, scope.Kind.GroupVersion(), w, req, http.StatusCreated, result, false)
}

// readBody reads at most limit bytes (no bound when limit is not positive); tooLarge says the
// body has more, of which one byte was read.
func readBody(body io.Reader, limit int64) (data []byte, tooLarge bool, err error) {
	if limit <= 0 {
		data, err = io.ReadAll(body)
		return data, false, err
	}
	data, err = io.ReadAll(io.LimitReader(body, limit+1))
	return data, err == nil && int64(len(data)) > limit, err
}

// handOver gives the request to the library's handler with the body as the client sent it: the
// bytes already read, then the rest.
func handOver(w http.ResponseWriter, req *http.Request, read []byte, library http.Handler) {
	req.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(read), req.Body), req.Body}
	library.ServeHTTP(w, req)
}

// yamlStrictPrefixes begin the strict decoding errors of the YAML decoder, which lists every
// problem on a line of its own after them.
var yamlStrictPrefixes = []string{
	"error converting YAML to JSON: yaml: unmarshal errors:\n",
	"yaml: unmarshal errors:\n",
}

// strictWarnings are the warnings a Warn field validation gives for the strict decoding errors:
// one per error, and one per listed problem for the YAML decoder's.
func strictWarnings(errs []error) []string {
	var out []string
	for _, err := range errs {
		msg := err.Error()
		split := false
		for _, prefix := range yamlStrictPrefixes {
			if rest, ok := strings.CutPrefix(msg, prefix); ok {
				for _, line := range strings.Split(rest, "\n") {
					out = append(out, strings.TrimSpace(line))
				}
				split = true
				break
			}
		}
		if !split {
			out = append(out, msg)
		}
	}
	return out
}
