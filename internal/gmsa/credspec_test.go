package gmsa

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckCredSpec(t *testing.T) {
	nest := func(n int) string { return strings.Repeat(`{"a":[`, n/2) + strings.Repeat(`]}`, n/2) }
	cases := []struct {
		name string
		in   string
		says string // "": accepted
	}{
		{"the design's example", webapp1, ""},
		{"exactly 64 KiB", `"` + strings.Repeat("a", 64<<10-2) + `"`, ""},
		{"one byte over 64 KiB", `"` + strings.Repeat("a", 64<<10-1) + `"`, "is 65537 bytes, more than 65536"},
		{"32 levels", nest(32), ""},
		{"33 levels", "[" + nest(32) + "]", "more than 32 deep"},
		{"absurdly deep, within 64 KiB", strings.Repeat("[", 30000) + strings.Repeat("]", 30000), "more than 32 deep"},
		{"brackets in strings do not nest", `["` + strings.Repeat(`[{`, 100) + `\"[["]`, ""},
		{"empty", "", "is not JSON"},
		{"truncated", `{"a":`, "is not JSON"},
		{"two values", `{} {}`, "is not JSON"},
		{"unbalanced brackets inside a string are still JSON text", `"\\"`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCredSpec([]byte(tc.in))
			switch {
			case tc.says == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("error %v, want one saying %q", err, tc.says)
			}
		})
	}
}

func TestSameCredSpec(t *testing.T) {
	cases := []struct {
		name string
		a, b string
		same bool
	}{
		{"identical", webapp1, webapp1, true},
		{"indented and compact", webapp1, webapp1Compact, true},
		{"other key order, whitespace, number form", webapp1Compact, webapp1Reordered, true},
		{"another spec", webapp1, webapp2, false},
		{"escaped and plain strings", `"<a>"`, `"\u003ca\u003e"`, true},
		{"member missing", `{"a":1,"b":2}`, `{"a":1}`, false},
		{"member renamed", `{"a":1}`, `{"b":1}`, false},
		{"array order matters", `[1,2]`, `[2,1]`, false},
		{"array length", `[1]`, `[1,1]`, false},
		{"1, 1.0, 1e0, 10e-1, 0.1E+1", `[1,1,1,1]`, `[1.0,1e0,10e-1,0.1E+1]`, true},
		{"leading zeros of exponents", `1e5`, `1e005`, true},
		{"-0 and 0", `-0`, `0.0e7`, true},
		{"1 and 2", `1`, `2`, false},
		{"sign", `1`, `-1`, false},
		{"exact beyond float64", `9007199254740993`, `9007199254740992`, false},
		{"huge exponents, exactly", `1e999999999999999999999`, `10e999999999999999999998`, true},
		{"huge exponents that differ", `1e999999999999999999999`, `1e999999999999999999998`, false},
		{"number and string", `1`, `"1"`, false},
		{"null and false", `null`, `false`, false},
		{"object and array", `{}`, `[]`, false},
		{"duplicate members: the last counts, as for every JSON reader here", `{"a":1,"a":2}`, `{"a":2}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range []string{tc.a, tc.b} {
				if err := checkCredSpec([]byte(in)); err != nil {
					t.Fatalf("%s: %v", in, err)
				}
			}
			if got := sameCredSpec([]byte(tc.a), []byte(tc.b)); got != tc.same {
				t.Errorf("sameCredSpec(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
			}
			if got := sameCredSpec([]byte(tc.b), []byte(tc.a)); got != tc.same {
				t.Errorf("sameCredSpec(%s, %s) = %v, want %v", tc.b, tc.a, got, tc.same)
			}
		})
	}
}

// FuzzCredSpecEqual checks the comparison of a pod's credential spec with a stored one on any
// input: nothing panics; what is over 64 KiB or nests over 32 deep is refused before it is decoded;
// what is accepted equals itself, equals itself re-marshalled, and compares the same both ways.
func FuzzCredSpecEqual(f *testing.F) {
	for _, s := range [][2]string{
		{webapp1, webapp1Reordered}, {webapp1, webapp2}, {`[1,2]`, `[1.0,2e0]`}, {`-0`, `0`},
		{`{"a":"\u00e9"}`, `{"a":"é"}`}, {`"\xff"`, `"\ufffd"`}, {strings.Repeat("[", 40), `[]`}, {`1 2`, `1`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		errA, errB := checkCredSpec(a), checkCredSpec(b)
		for _, in := range []struct {
			b   []byte
			err error
		}{{a, errA}, {b, errB}} {
			if in.err == nil && (len(in.b) > maxCredSpecBytes || depth(in.b) > maxCredSpecDepth) {
				t.Fatalf("accepted %d bytes, %d deep", len(in.b), depth(in.b))
			}
		}
		if errA != nil {
			return
		}
		if !sameCredSpec(a, a) {
			t.Fatalf("%q differs from itself", a)
		}
		// Decoded keeping numbers as written: as float64 they could round to another number.
		v, ok := decode(a)
		if !ok {
			t.Fatalf("accepted %q, which does not decode", a)
		}
		remarshalled, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("re-marshalling %q: %v", a, err)
		}
		if checkCredSpec(remarshalled) == nil && !sameCredSpec(a, remarshalled) {
			t.Fatalf("%q differs from itself re-marshalled, %q", a, remarshalled)
		}
		if errB == nil && sameCredSpec(a, b) != sameCredSpec(b, a) {
			t.Fatalf("sameCredSpec not symmetric on %q, %q", a, b)
		}
	})
}
