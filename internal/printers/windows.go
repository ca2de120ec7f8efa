package printers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

// GMSACredentialSpecs prints credential specs as NAME AGE, the columns a CRD without printer
// columns gets: the credspec document is no table cell.
var GMSACredentialSpecs = New(
	[]metav1.TableColumnDefinition{nameColumn, ageColumn},
	func(s *windowsv1.GMSACredentialSpec) ([]any, error) {
		return []any{s.Name, age(s.CreationTimestamp)}, nil
	},
)
