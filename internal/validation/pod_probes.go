package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedHTTPSchemes = sets.New(corev1.URISchemeHTTP, corev1.URISchemeHTTPS)

func validateLifecycleAndProbes(ctr *corev1.Container, pc *podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if lc := ctr.Lifecycle; lc != nil {
		if lc.PostStart != nil {
			allErrs = append(allErrs, validateHandler(lifecycleHandler(lc.PostStart), pc.gracePeriod, fldPath.Child("lifecycle", "postStart"))...)
		}
		if lc.PreStop != nil {
			allErrs = append(allErrs, validateHandler(lifecycleHandler(lc.PreStop), pc.gracePeriod, fldPath.Child("lifecycle", "preStop"))...)
		}
		if lc.StopSignal != nil {
			allErrs = append(allErrs, validateStopSignal(*lc.StopSignal, pc.os, fldPath.Child("lifecycle", "stopSignal"))...)
		}
	}
	if p := ctr.LivenessProbe; p != nil {
		probePath := fldPath.Child("livenessProbe")
		allErrs = append(allErrs, validateProbe(p, pc.gracePeriod, probePath)...)
		if p.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(probePath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	if p := ctr.ReadinessProbe; p != nil {
		probePath := fldPath.Child("readinessProbe")
		allErrs = append(allErrs, validateProbe(p, pc.gracePeriod, probePath)...)
		if p.TerminationGracePeriodSeconds != nil {
			allErrs = append(allErrs, field.Invalid(probePath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if p := ctr.StartupProbe; p != nil {
		probePath := fldPath.Child("startupProbe")
		allErrs = append(allErrs, validateProbe(p, pc.gracePeriod, probePath)...)
		if p.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(probePath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	return allErrs
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

func validateProbe(p *corev1.Probe, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	h := handler{exec: p.Exec, httpGet: p.HTTPGet, tcpSocket: p.TCPSocket, grpc: p.GRPC}
	allErrs := validateHandler(h, gracePeriod, fldPath)
	allErrs = append(allErrs, validateNonnegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	allErrs = append(allErrs, validateNonnegative(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return allErrs
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
	allErrs := requireString(h.Path, fldPath.Child("path"))
	allErrs = append(allErrs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	if !supportedHTTPSchemes.Has(h.Scheme) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, sets.List(supportedHTTPSchemes)))
	}
	for _, header := range h.HTTPHeaders {
		for _, msg := range utilvalidation.IsHTTPHeaderName(header.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("httpHeaders"), header.Name, msg))
		}
	}
	return allErrs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if port.Type == intstr.String {
		for _, msg := range utilvalidation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.StrVal, msg))
		}
		return allErrs
	}
	for _, msg := range utilvalidation.IsValidPortNum(port.IntValue()) {
		allErrs = append(allErrs, field.Invalid(fldPath, port.IntValue(), msg))
	}
	return allErrs
}
