package apiserver

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/idplane/idplane/internal/reviewserving"
)

// reviewsInChain puts the review handler where the library's router runs, inside the filter
// chain, so a review is authenticated, audited, admitted by priority-and-fairness and authorized
// exactly as before. It must run before the server is created; installReviews gives it storage.
func (a *assembly) reviewsInChain() {
	a.reviews = &reviewserving.Dispatcher{}
	chain := a.cfg.BuildHandlerChainFunc
	a.cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return chain(a.reviews.Wrap(h), c)
	}
}

// reviewStorage collects, group version by group version as the API groups are installed, the
// storage the review handler answers with.
type reviewStorage map[schema.GroupVersionResource]rest.Storage

func (s reviewStorage) add(gv schema.GroupVersion, storage map[string]rest.Storage) {
	for resource, st := range storage {
		s[gv.WithResource(resource)] = st
	}
}

// installReviews serves the review resources through the review handler, with the same scheme,
// admission chain and body limit the library's handlers have.
func (a *assembly) installReviews(storage reviewStorage) error {
	if a.o.genericReviews {
		return nil // the dispatcher, given no endpoints, hands every request on
	}
	err := a.reviews.Install(reviewserving.Scheme{
		Serializer:               codecs,
		ParameterCodec:           parameterCodec,
		Creater:                  scheme,
		Convertor:                scheme,
		Defaulter:                scheme,
		Typer:                    scheme,
		UnsafeConvertor:          runtime.UnsafeObjectConvertor(scheme),
		EquivalentResourceMapper: a.cfg.EquivalentResourceRegistry,
		MaxRequestBodyBytes:      a.cfg.MaxRequestBodyBytes,
	}, a.cfg.AdmissionControl, storage)
	if err != nil {
		return fmt.Errorf("installing the review handler: %w", err)
	}
	return nil
}
