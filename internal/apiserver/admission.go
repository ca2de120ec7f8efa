package apiserver

import (
	"fmt"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic/dynamicinformer"

	"github.com/idplane/idplane/internal/admission"
	gmsaadmission "github.com/idplane/idplane/internal/admission/gmsa"
)

// admission puts the admission chain the admission flags choose together: the library's
// plugins and idplane's own, initialized with the loopback clients and informers. It returns the
// dynamic informers the GMSA plugin reads idplane's own resources from, to start with the server.
func (a *assembly) admission() (dynamicinformer.DynamicSharedInformerFactory, error) {
	// idplane's own resources have no typed informers: GMSACredentialSpecs come from a dynamic one.
	dynamicInformers := dynamicinformer.NewDynamicSharedInformerFactory(a.loopback.dyn, 10*time.Minute)
	own := admission.Initializer{
		APIAudiences: a.in.tokens.audiences,
		GMSA:         gmsaadmission.Config{Specs: gmsaadmission.NewInformerCredSpecs(dynamicInformers, a.loopback.dyn), Options: a.o.GMSA},
	}
	lb := a.loopback
	if err := a.o.Admission.ApplyTo(a.cfg, lb.informers, lb.client, lb.dyn, a.cfg.FeatureGate, a.cfg.EffectiveVersion, own); err != nil {
		return nil, fmt.Errorf("configuring admission: %w", err)
	}
	return dynamicInformers, nil
}

// startDynamicInformers starts the admission step's dynamic informers once the server runs.
func startDynamicInformers(srv *genericapiserver.GenericAPIServer, f dynamicinformer.DynamicSharedInformerFactory) error {
	return srv.AddPostStartHook("start-dynamic-informers", func(ctx genericapiserver.PostStartHookContext) error {
		f.Start(ctx.Done())
		return nil
	})
}
