package gmsa

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

// Bounds of a credential spec in a pod: those of the GMSACredentialSpec objects it must equal, so
// that hostile input costs little to refuse.
const (
	maxCredSpecBytes = windowsv1.MaxCredSpecBytes
	maxCredSpecDepth = windowsv1.MaxCredSpecDepth
)

// lookups fetches specs for one request, each once: a pod often names the same spec for the pod
// and several containers, and the webhook's lookups are round trips to its cluster. Done lookups
// are kept by name, since a pod with many containers may name as many specs.
type lookups struct {
	specs CredSpecs
	done  map[string]lookup
}

type lookup struct {
	// spec is the credspec as compact JSON, the form the expander writes.
	spec    []byte
	missing bool
	// unusable says why the credspec cannot be a pod's; failed, why the lookup failed.
	unusable, failed error
}

// get returns the credspec of the spec p names as compact JSON. A spec that does not exist or
// whose credspec cannot be a pod's is a field error on p (422); a failed lookup, an error (500).
func (l *lookups) get(ctx context.Context, p place) ([]byte, *field.Error, error) {
	d, ok := l.done[p.name]
	if !ok {
		if l.done == nil {
			l.done = map[string]lookup{}
		}
		d = l.fetch(ctx, p.name)
		l.done[p.name] = d
	}
	switch {
	case d.failed != nil:
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("looking up GMSACredentialSpec %q: %w", p.name, d.failed))
	case d.missing:
		e := field.NotFound(p.namePath, p.name)
		e.Detail = "no GMSACredentialSpec has this name"
		return nil, e, nil
	case d.unusable != nil:
		return nil, field.Invalid(p.namePath, p.name, fmt.Sprintf("the credspec of this GMSACredentialSpec %v", d.unusable)), nil
	default:
		return d.spec, nil, nil
	}
}

func (l *lookups) fetch(ctx context.Context, name string) lookup {
	raw, err := l.specs.CredSpec(ctx, name)
	if apierrors.IsNotFound(err) {
		return lookup{missing: true}
	}
	if err != nil {
		return lookup{failed: err}
	}
	buf := bytes.NewBuffer(make([]byte, 0, len(raw)))
	if err := json.Compact(buf, raw); err != nil {
		return lookup{unusable: errors.New("is not JSON")}
	}
	return lookup{spec: buf.Bytes(), unusable: checkBounds(buf.Bytes())}
}

// checkCredSpec refuses what is not one JSON value within the bounds.
func checkCredSpec(b []byte) error {
	if err := checkBounds(b); err != nil {
		return err
	}
	if !json.Valid(b) {
		return errors.New("is not JSON")
	}
	return nil
}

// checkBounds refuses what is too large or nests too deep, before anything decodes it.
func checkBounds(b []byte) error {
	if len(b) > maxCredSpecBytes {
		return fmt.Errorf("is %d bytes, more than %d", len(b), maxCredSpecBytes)
	}
	if depth(b) > maxCredSpecDepth {
		return fmt.Errorf("nests arrays and objects more than %d deep", maxCredSpecDepth)
	}
	return nil
}

// depth is how deep JSON nests arrays and objects; for text that is not JSON, some number.
func depth(b []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// sameCredSpec reports whether two credential specs that checkCredSpec accepts are the same JSON
// value: objects with the same members in any order, whitespace aside, numbers equal as numbers
// (1, 1.0 and 1e0 are one number). Admins write specs in YAML and tools re-serialize them, so the
// bytes of equal specs often differ.
func sameCredSpec(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, okA := decode(a)
	vb, okB := decode(b)
	return okA && okB && sameValue(va, vb)
}

// decode reads JSON that checkCredSpec accepted, keeping numbers as written.
func decode(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err == nil
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !sameValue(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		return ok && (a == b || decimalOf(a).equal(decimalOf(b)))
	default: // string, bool, nil
		return a == b
	}
}

// decimal is a JSON number in a form where equal numbers look the same: its value is
// ±0.digits × 10^exp, digits without leading or trailing zeros (none for zero). Exact, unlike
// float64, and cheap even for 1e999999999, unlike math/big's Rat or Float.
type decimal struct {
	neg    bool
	digits string
	exp    big.Int
}

// decimalOf reads a number the JSON decoder has checked.
func decimalOf(n json.Number) *decimal {
	s := string(n)
	d := &decimal{}
	s, d.neg = strings.CutPrefix(s, "-")
	mantissa, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mantissa, exp = s[:i], s[i+1:]
	}
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	point := int64(len(whole)) - int64(len(whole)+len(frac)-len(digits))
	d.digits = strings.TrimRight(digits, "0")
	if d.digits == "" {
		return &decimal{} // zero, and -0 is zero
	}
	if exp != "" {
		d.exp.SetString(exp, 10) // "+5", "-5" and "05" are all read; the decoder checked the digits
	}
	d.exp.Add(&d.exp, big.NewInt(point))
	return d
}

func (d *decimal) equal(o *decimal) bool {
	return d.neg == o.neg && d.digits == o.digits && d.exp.Cmp(&o.exp) == 0
}
