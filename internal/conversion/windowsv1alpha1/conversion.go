// Package windowsv1alpha1 converts GMSACredentialSpecs between windows.k8s.io v1alpha1, the
// version of the GMSA design's CRD, and v1, which idplane stores and validates. The two versions
// have the same shape: conversion copies every field.
package windowsv1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	windowsv1alpha1 "github.com/idplane/idplane/api/windows/v1alpha1"
	"github.com/idplane/idplane/internal/conversion"
)

// AddToScheme registers the conversions in both directions, for objects and lists.
func AddToScheme(s *runtime.Scheme) error {
	return conversion.Pair[windowsv1alpha1.GMSACredentialSpec, windowsv1.GMSACredentialSpec, windowsv1alpha1.GMSACredentialSpecList, windowsv1.GMSACredentialSpecList]{
		ToNew: ToV1, FromNew: FromV1,
		OldItems: func(l *windowsv1alpha1.GMSACredentialSpecList) (*metav1.ListMeta, *[]windowsv1alpha1.GMSACredentialSpec) {
			return &l.ListMeta, &l.Items
		},
		NewItems: func(l *windowsv1.GMSACredentialSpecList) (*metav1.ListMeta, *[]windowsv1.GMSACredentialSpec) {
			return &l.ListMeta, &l.Items
		},
	}.AddToScheme(s)
}

// ToV1 converts a v1alpha1 GMSACredentialSpec to v1. Like generated conversions it shares the
// input's memory rather than copying it.
func ToV1(in *windowsv1alpha1.GMSACredentialSpec, out *windowsv1.GMSACredentialSpec) {
	out.ObjectMeta = in.ObjectMeta
	out.CredSpec = windowsv1.CredSpec{Raw: in.CredSpec.Raw}
}

// FromV1 converts a v1 GMSACredentialSpec to v1alpha1.
func FromV1(in *windowsv1.GMSACredentialSpec, out *windowsv1alpha1.GMSACredentialSpec) {
	out.ObjectMeta = in.ObjectMeta
	out.CredSpec = windowsv1alpha1.CredSpec{Raw: in.CredSpec.Raw}
}
