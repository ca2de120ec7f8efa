// Package windowsv1alpha1 converts GMSACredentialSpecs between windows.k8s.io v1alpha1, the
// version of the GMSA design's CRD, and v1, which idplane stores and validates. The two versions
// have the same shape: conversion copies every field.
package windowsv1alpha1

import (
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	windowsv1alpha1 "github.com/idplane/idplane/api/windows/v1alpha1"
)

// AddToScheme registers the conversions in both directions, for objects and lists.
func AddToScheme(s *runtime.Scheme) error {
	for _, err := range []error{
		s.AddConversionFunc((*windowsv1alpha1.GMSACredentialSpec)(nil), (*windowsv1.GMSACredentialSpec)(nil), func(a, b any, _ conversion.Scope) error {
			ToV1(a.(*windowsv1alpha1.GMSACredentialSpec), b.(*windowsv1.GMSACredentialSpec))
			return nil
		}),
		s.AddConversionFunc((*windowsv1.GMSACredentialSpec)(nil), (*windowsv1alpha1.GMSACredentialSpec)(nil), func(a, b any, _ conversion.Scope) error {
			FromV1(a.(*windowsv1.GMSACredentialSpec), b.(*windowsv1alpha1.GMSACredentialSpec))
			return nil
		}),
		s.AddConversionFunc((*windowsv1alpha1.GMSACredentialSpecList)(nil), (*windowsv1.GMSACredentialSpecList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*windowsv1alpha1.GMSACredentialSpecList), b.(*windowsv1.GMSACredentialSpecList)
			out.ListMeta = in.ListMeta
			out.Items = make([]windowsv1.GMSACredentialSpec, len(in.Items))
			for i := range in.Items {
				ToV1(&in.Items[i], &out.Items[i])
			}
			return nil
		}),
		s.AddConversionFunc((*windowsv1.GMSACredentialSpecList)(nil), (*windowsv1alpha1.GMSACredentialSpecList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*windowsv1.GMSACredentialSpecList), b.(*windowsv1alpha1.GMSACredentialSpecList)
			out.ListMeta = in.ListMeta
			out.Items = make([]windowsv1alpha1.GMSACredentialSpec, len(in.Items))
			for i := range in.Items {
				FromV1(&in.Items[i], &out.Items[i])
			}
			return nil
		}),
	} {
		if err != nil {
			return err
		}
	}
	return nil
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
