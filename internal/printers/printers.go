// Package printers turns served objects into the server-side tables kubectl prints
// (Accept: application/json;as=Table;v=v1;g=meta.k8s.io), with the columns and cell formats of
// upstream Kubernetes 1.37.
//
// Like the upstream API server, rows always carry the wide (priority 1) cells; kubectl hides
// those columns unless asked for -o wide.
package printers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
)

// now is the clock ages are measured against; tests replace it.
var now = time.Now

// Shared column descriptions, as upstream takes them from the API documentation.
var (
	objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()
	nameColumn    = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}
	ageColumn     = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDoc["creationTimestamp"]}
)

// New returns a rest.TableConvertor built from column definitions and a row function; it
// handles single objects and lists (meta.ExtractList), sets metav1.Table.ResourceVersion,
// Continue and RemainingItemCount from list meta, points each row's Object at the printed
// object, and honours NoHeaders of *metav1.TableOptions.
func New[T runtime.Object](columns []metav1.TableColumnDefinition, row func(obj T) ([]any, error)) rest.TableConvertor {
	return newTable(columns, func(obj T) (metav1.TableRow, error) {
		cells, err := row(obj)
		return metav1.TableRow{Cells: cells}, err
	})
}

// newTable is New for printers that also set row conditions.
func newTable[T runtime.Object](columns []metav1.TableColumnDefinition, row func(obj T) (metav1.TableRow, error)) rest.TableConvertor {
	return &table[T]{columns: columns, row: row}
}

type table[T runtime.Object] struct {
	columns []metav1.TableColumnDefinition
	row     func(T) (metav1.TableRow, error)
}

func (t *table[T]) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
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

	out := &metav1.Table{Rows: make([]metav1.TableRow, 0, len(items))}
	for _, item := range items {
		typed, ok := item.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("cannot print %T in a table of %T", item, want)
		}
		row, err := t.row(typed)
		if err != nil {
			return nil, fmt.Errorf("printing %T %s: %w", item, objectName(item), err)
		}
		row.Object = runtime.RawExtension{Object: item}
		out.Rows = append(out.Rows, row)
	}
	if !noHeaders {
		out.ColumnDefinitions = slices.Clone(t.columns)
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

func objectName(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// age is how long ago t was, the way kubectl shows it; a missing time is "<unknown>".
func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t.Time))
}

func microAge(t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t.Time))
}

// orNone is how tables show an empty value that a reader would otherwise miss.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
