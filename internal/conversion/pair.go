// Package conversion registers the hand-written conversions between an older version of a kind
// that idplane serves and the version it stores; the subpackages hold the field conversions.
package conversion

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// Pair is one kind in an older version Old and the stored version New: the field conversions of
// an object each way, and where a list of each version keeps its metadata and items.
type Pair[Old, New, OldList, NewList any] struct {
	ToNew    func(in *Old, out *New)
	FromNew  func(in *New, out *Old)
	OldItems func(*OldList) (*metav1.ListMeta, *[]Old)
	NewItems func(*NewList) (*metav1.ListMeta, *[]New)
}

// AddToScheme registers the conversions of objects and lists in both directions.
func (p Pair[Old, New, OldList, NewList]) AddToScheme(s *runtime.Scheme) error {
	for _, err := range []error{
		s.AddConversionFunc((*Old)(nil), (*New)(nil), func(a, b any, _ conversion.Scope) error {
			p.ToNew(a.(*Old), b.(*New))
			return nil
		}),
		s.AddConversionFunc((*New)(nil), (*Old)(nil), func(a, b any, _ conversion.Scope) error {
			p.FromNew(a.(*New), b.(*Old))
			return nil
		}),
		s.AddConversionFunc((*OldList)(nil), (*NewList)(nil), func(a, b any, _ conversion.Scope) error {
			inMeta, inItems := p.OldItems(a.(*OldList))
			outMeta, outItems := p.NewItems(b.(*NewList))
			convertList(inMeta, inItems, outMeta, outItems, p.ToNew)
			return nil
		}),
		s.AddConversionFunc((*NewList)(nil), (*OldList)(nil), func(a, b any, _ conversion.Scope) error {
			inMeta, inItems := p.NewItems(a.(*NewList))
			outMeta, outItems := p.OldItems(b.(*OldList))
			convertList(inMeta, inItems, outMeta, outItems, p.FromNew)
			return nil
		}),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// convertList copies the list metadata and converts every item.
func convertList[In, Out any](inMeta *metav1.ListMeta, inItems *[]In, outMeta *metav1.ListMeta, outItems *[]Out, convert func(*In, *Out)) {
	*outMeta = *inMeta
	*outItems = make([]Out, len(*inItems))
	for i := range *inItems {
		convert(&(*inItems)[i], &(*outItems)[i])
	}
}
