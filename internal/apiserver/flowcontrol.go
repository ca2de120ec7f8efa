package apiserver

import (
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/idplane/idplane/internal/controller/apfconfig"
)

// Upstream's config producer: the first round must succeed within five minutes of start (the
// server is not ready before), later rounds run every minute and put back what was changed.
const (
	apfFirstRoundTimeout = 5 * time.Minute
	apfRoundInterval     = time.Minute
)

// flowControl configures how requests are limited: with priority and fairness the library's
// filter queues each request at the priority level its FlowSchema names (its config consumer
// follows the objects through the loopback informers); without, the flat max-in-flight limits.
func (a *assembly) flowControl() {
	fc := a.o.FlowControl
	a.cfg.MaxRequestsInFlight = fc.MaxRequestsInFlight
	a.cfg.MaxMutatingRequestsInFlight = fc.MaxMutatingRequestsInFlight
	if fc.EnablePriorityAndFairness {
		a.cfg.FlowControl = utilflowcontrol.New(a.loopback.informers, a.loopback.client.FlowcontrolV1(), fc.serverConcurrencyLimit())
	}
}

// apfConfigProducer keeps the bootstrap FlowSchemas and PriorityLevelConfigurations, as
// kube-apiserver's post-start hook of that name does; like upstream it runs whether or not the
// filter is on, so the objects are there to inspect and edit.
func (a *assembly) apfConfigProducer(srv *genericapiserver.GenericAPIServer) error {
	producer := apfconfig.New(a.loopback.client.FlowcontrolV1())
	return srv.AddPostStartHook("priority-and-fairness-config-producer", func(ctx genericapiserver.PostStartHookContext) error {
		return producer.Run(ctx, apfFirstRoundTimeout, apfRoundInterval)
	})
}
