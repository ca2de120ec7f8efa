// Package printers turns served objects into the server-side tables kubectl prints
// (Accept: application/json;as=Table;v=v1;g=meta.k8s.io), with the columns and cell formats of
// upstream Kubernetes 1.37.
//
// Each resource's table is a list of columns, each a definition clients see and the function
// that reads its cell from an object. Like the upstream API server, rows always carry the wide
// (priority 1) cells; kubectl hides those columns unless asked for -o wide.
package printers

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	nodev1alpha1 "github.com/idplane/idplane/api/node/v1alpha1"
	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

// object is what a table prints: a served object with object metadata.
type object interface {
	runtime.Object
	metav1.Object
}

// column is one column of a table. Its cell is read from a row and the instant the table is
// printed at, so that every age in one table is measured from the same moment.
type column[T any] struct {
	def  metav1.TableColumnDefinition
	cell func(obj T, now time.Time) any
}

// Column constructors, named for the column type clients read the cells as.
func stringColumn[T any](name, description string, cell func(T) any) column[T] {
	return timedColumn(name, "string", description, func(obj T, _ time.Time) any { return cell(obj) })
}

func integerColumn[T any](name, description string, cell func(T) any) column[T] {
	return timedColumn(name, "integer", description, func(obj T, _ time.Time) any { return cell(obj) })
}

func booleanColumn[T any](name, description string, cell func(T) any) column[T] {
	return timedColumn(name, "boolean", description, func(obj T, _ time.Time) any { return cell(obj) })
}

// timedColumn is a column whose cell depends on when the table is printed.
func timedColumn[T any](name, kind, description string, cell func(T, time.Time) any) column[T] {
	return column[T]{def: metav1.TableColumnDefinition{Name: name, Type: kind, Description: description}, cell: cell}
}

// wide marks a column kubectl shows only with -o wide.
func (c column[T]) wide() column[T] {
	c.def.Priority = 1
	return c
}

// names marks a column whose cells are object names.
func (c column[T]) names() column[T] {
	c.def.Format = "name"
	return c
}

// The columns most tables share, described as upstream describes them: from the API
// documentation of object metadata.
func nameColumn[T metav1.Object]() column[T] {
	return stringColumn("Name", doc(metav1.ObjectMeta{}, "name"), func(obj T) any { return obj.GetName() }).names()
}

func ageColumn[T metav1.Object]() column[T] {
	return timedColumn("Age", "string", doc(metav1.ObjectMeta{}, "creationTimestamp"), func(obj T, now time.Time) any {
		return age(obj.GetCreationTimestamp().Time, now)
	})
}

// doc is the API documentation of one field of an API type.
func doc(apiType interface{ SwaggerDoc() map[string]string }, field string) string {
	return apiType.SwaggerDoc()[field]
}

// table prints one resource, of type T. Its columns read cells from a row view R of each object:
// the object itself for most resources, or the object with what several cells derive from it.
// Resources whose rows flag finished objects set conditions.
type table[T object, R any] struct {
	view       func(T) R
	columns    []column[R]
	conditions func(T) []metav1.TableRowCondition
	clock      clock.PassiveClock
}

func newTable[T object](columns ...column[T]) *table[T, T] {
	return newViewTable(func(obj T) T { return obj }, columns...)
}

func newViewTable[T object, R any](view func(T) R, columns ...column[R]) *table[T, R] {
	return &table[T, R]{view: view, columns: columns, clock: clock.RealClock{}}
}

// withClock is a copy of the table that measures ages against c: the way to print at a
// known instant.
func (t *table[T, R]) withClock(c clock.PassiveClock) rest.TableConvertor {
	clocked := *t
	clocked.clock = c
	return &clocked
}

// withConditions adds row conditions to a table.
func (t *table[T, R]) withConditions(conditions func(T) []metav1.TableRowCondition) *table[T, R] {
	t.conditions = conditions
	return t
}

// ConvertToTable prints a single object or a list (meta.ExtractList), sets
// metav1.Table.ResourceVersion, Continue and RemainingItemCount from list meta, points each
// row's Object at the printed object, and honours NoHeaders of *metav1.TableOptions.
func (t *table[T, R]) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	noHeaders, err := noHeaders(tableOptions)
	if err != nil {
		return nil, err
	}
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("reading items of %T: %w", obj, err)
		}
	}

	now := t.clock.Now()
	out := &metav1.Table{Rows: make([]metav1.TableRow, 0, len(items))}
	for _, item := range items {
		typed, ok := item.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("cannot print %T in a table of %T", item, want)
		}
		row := metav1.TableRow{Cells: make([]any, len(t.columns)), Object: runtime.RawExtension{Object: item}}
		view := t.view(typed)
		for i, c := range t.columns {
			row.Cells[i] = c.cell(view, now)
		}
		if t.conditions != nil {
			row.Conditions = t.conditions(typed)
		}
		out.Rows = append(out.Rows, row)
	}
	if !noHeaders {
		out.ColumnDefinitions = make([]metav1.TableColumnDefinition, len(t.columns))
		for i, c := range t.columns {
			out.ColumnDefinitions[i] = c.def
		}
	}
	if l, err := meta.ListAccessor(obj); err == nil {
		out.ResourceVersion = l.GetResourceVersion()
		out.Continue = l.GetContinue()
		out.RemainingItemCount = l.GetRemainingItemCount()
	} else if o, err := meta.CommonAccessor(obj); err == nil {
		out.ResourceVersion = o.GetResourceVersion()
	}
	return out, nil
}

func noHeaders(tableOptions runtime.Object) (bool, error) {
	switch opts := tableOptions.(type) {
	case nil:
		return false, nil
	case *metav1.TableOptions:
		return opts != nil && opts.NoHeaders, nil
	default:
		return false, fmt.Errorf("unrecognized type %T for table options, can't display tabular output", tableOptions)
	}
}

// age is how long before now t was, the way kubectl shows it; a missing time is "<unknown>".
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// orNone is how tables show an empty value that a reader would otherwise miss.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// tables are the tables of every resource that has columns of its own, by resource.
var tables = map[schema.GroupResource]rest.TableConvertor{
	corev1.Resource("namespaces"):                         namespaces,
	corev1.Resource("nodes"):                              nodes,
	corev1.Resource("pods"):                               pods,
	corev1.Resource("secrets"):                            secrets,
	corev1.Resource("configmaps"):                         configMaps,
	corev1.Resource("serviceaccounts"):                    serviceAccounts,
	corev1.Resource("persistentvolumes"):                  persistentVolumes,
	corev1.Resource("persistentvolumeclaims"):             persistentVolumeClaims,
	corev1.Resource("events"):                             events,
	corev1.Resource("services"):                           services,
	corev1.Resource("endpoints"):                          endpoints,
	discoveryv1.Resource("endpointslices"):                endpointSlices,
	coordinationv1.Resource("leases"):                     leases,
	storagev1.Resource("volumeattachments"):               volumeAttachments,
	storagev1.Resource("csinodes"):                        csiNodes,
	certificatesv1.Resource("certificatesigningrequests"): certificateSigningRequests,
	certificatesv1.Resource("clustertrustbundles"):        clusterTrustBundles,
	certificatesv1.Resource("podcertificaterequests"):     podCertificateRequests,
	rbacv1.Resource("roles"):                              roles,
	rbacv1.Resource("clusterroles"):                       clusterRoles,
	rbacv1.Resource("rolebindings"):                       roleBindings,
	rbacv1.Resource("clusterrolebindings"):                clusterRoleBindings,
	windowsv1.Resource("gmsacredentialspecs"):             gmsaCredentialSpecs,
	nodev1alpha1.Resource(nodev1alpha1.ResourceName):      nodeReadables,
	flowcontrolv1.Resource("flowschemas"):                 flowSchemas,
	flowcontrolv1.Resource("prioritylevelconfigurations"): priorityLevelConfigurations,
}

// For returns the table kubectl prints resource with, or nil for a resource without columns
// of its own (the library's default, NAME and CREATED AT, serves those).
func For(resource schema.GroupResource) rest.TableConvertor { return tables[resource] }
