package printers

import (
	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	"k8s.io/apiserver/pkg/registry/rest"
)

// gmsaCredentialSpecs prints credential specs as NAME AGE, the columns a CRD without printer
// columns gets: the credspec document is no table cell.
var gmsaCredentialSpecs rest.TableConvertor = newTable(nameColumn[*windowsv1.GMSACredentialSpec](), ageColumn[*windowsv1.GMSACredentialSpec]())
