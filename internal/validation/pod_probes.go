package validation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// supportedHTTPSchemes, as listed to users. A probe's scheme has no empty
// value: defaulting fills it in.
var supportedHTTPSchemes = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}

// lifecycleHooks are the handlers a container may run around its life.
var lifecycleHooks = []struct {
	field string
	hook  func(*corev1.Lifecycle) *corev1.LifecycleHandler
}{
	{"postStart", func(lc *corev1.Lifecycle) *corev1.LifecycleHandler { return lc.PostStart }},
	{"preStop", func(lc *corev1.Lifecycle) *corev1.LifecycleHandler { return lc.PreStop }},
}

// probeKind is one of a container's probes: the rules of every probe apply,
// and then its own.
type probeKind struct {
	field string
	probe func(*corev1.Container) *corev1.Probe
	own   func(p *corev1.Probe, fldPath *field.Path) field.ErrorList
}

var containerProbeKinds = []probeKind{
	{"livenessProbe", func(c *corev1.Container) *corev1.Probe { return c.LivenessProbe }, decidesOnOneSuccess},
	{"readinessProbe", func(c *corev1.Container) *corev1.Probe { return c.ReadinessProbe }, killsNothing},
	{"startupProbe", func(c *corev1.Container) *corev1.Probe { return c.StartupProbe }, decidesOnOneSuccess},
}

// decidesOnOneSuccess: a liveness or startup probe passes on its first
// success; asking for more would only delay what it decides.
func decidesOnOneSuccess(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	if p.SuccessThreshold != 1 {
		return field.ErrorList{field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1")}
	}
	return nil
}

// killsNothing: a failing readiness probe takes the container out of
// service without killing it, so a grace period has nothing to apply to.
func killsNothing(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	if p.TerminationGracePeriodSeconds != nil {
		return field.ErrorList{field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes")}
	}
	return nil
}

func validateLifecycleAndProbes(ctr *corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if lc := ctr.Lifecycle; lc != nil {
		lcPath := fldPath.Child("lifecycle")
		for _, h := range lifecycleHooks {
			if hook := h.hook(lc); hook != nil {
				errs = append(errs, validateHandler(lifecycleHandler(hook), pc.gracePeriod, lcPath.Child(h.field))...)
			}
		}
		if lc.StopSignal != nil {
			errs = append(errs, validateStopSignal(*lc.StopSignal, pc.os, lcPath.Child("stopSignal"))...)
		}
	}
	for _, kind := range containerProbeKinds {
		if p := kind.probe(ctr); p != nil {
			probePath := fldPath.Child(kind.field)
			errs = append(errs, validateProbe(p, pc.gracePeriod, probePath)...)
			errs = append(errs, kind.own(p, probePath)...)
		}
	}
	return errs
}

// handler is the union of probe and lifecycle actions.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

func lifecycleHandler(h *corev1.LifecycleHandler) handler {
	return handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}
}

// probeCounts are a probe's timings and thresholds; none may be negative.
var probeCounts = []struct {
	field string
	value func(*corev1.Probe) int32
}{
	{"initialDelaySeconds", func(p *corev1.Probe) int32 { return p.InitialDelaySeconds }},
	{"timeoutSeconds", func(p *corev1.Probe) int32 { return p.TimeoutSeconds }},
	{"periodSeconds", func(p *corev1.Probe) int32 { return p.PeriodSeconds }},
	{"successThreshold", func(p *corev1.Probe) int32 { return p.SuccessThreshold }},
	{"failureThreshold", func(p *corev1.Probe) int32 { return p.FailureThreshold }},
}

func validateProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	h := handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}
	errs := validateHandler(h, gracePeriod, fldPath)
	for _, c := range probeCounts {
		errs = append(errs, validateNonnegative(int64(c.value(p)), fldPath.Child(c.field))...)
	}
	// The probe's own grace period overrides the pod's when it kills.
	if g := p.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

func validateHandler(h handler, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	numHandlers := 0
	use := func(name string) bool {
		if numHandlers > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return false
		}
		numHandlers++
		return true
	}
	if h.exec != nil && use("exec") && len(h.exec.Command) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("exec", "command"), ""))
	}
	if h.httpGet != nil && use("httpGet") {
		allErrs = append(allErrs, validateHTTPGetAction(h.httpGet, fldPath.Child("httpGet"))...)
	}
	if h.tcpSocket != nil && use("tcpSocket") {
		allErrs = append(allErrs, validatePortNumOrName(h.tcpSocket.Port, fldPath.Child("tcpSocket", "port"))...)
	}
	if h.grpc != nil && use("grpc") {
		allErrs = append(allErrs, validatePortNumOrName(intstr.FromInt32(h.grpc.Port), fldPath.Child("grpc", "port"))...)
	}
	// A sleep longer than the grace period would be cut short by the kill.
	if h.sleep != nil && use("sleep") && gracePeriod != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *gracePeriod) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("sleep"), h.sleep.Seconds,
			fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod)))
	}
	if numHandlers == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a handler type"))
	}
	return allErrs
}

func validateHTTPGetAction(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	errs := requireString(h.Path, fldPath.Child("path"))
	errs = append(errs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	if !slices.Contains(supportedHTTPSchemes, h.Scheme) {
		errs = append(errs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, supportedHTTPSchemes))
	}
	for _, header := range h.HTTPHeaders {
		errs = append(errs, invalidEach(fldPath.Child("httpHeaders"), header.Name, utilvalidation.IsHTTPHeaderName(header.Name))...)
	}
	return errs
}

// validatePortNumOrName: a probe names its port by number, or by the name
// of one of the container's ports.
func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		return invalidEach(fldPath, port.StrVal, utilvalidation.IsValidPortName(port.StrVal))
	}
	return invalidEach(fldPath, port.IntValue(), utilvalidation.IsValidPortNum(port.IntValue()))
}
