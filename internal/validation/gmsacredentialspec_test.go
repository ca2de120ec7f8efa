package validation

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
)

// designCredSpec is the credspec of the GMSA design's example.
const designCredSpec = `{"ActiveDirectoryConfig":{"GroupManagedServiceAccounts":[{"Name":"WebApplication1","Scope":"CONTOSO"},{"Name":"WebApplication1","Scope":"contoso.com"}]},` +
	`"CmsPlugins":["ActiveDirectory"],"DomainJoinConfig":{"DnsName":"contoso.com","DnsTreeName":"contoso.com","Guid":"244818ae-87ca-4fcd-92ec-e79e5252348a",` +
	`"MachineAccountName":"WebApplication1","NetBiosName":"CONTOSO","Sid":"S-1-5-21-2126729477-2524075714-3094792973"}}`

func credSpec(name, doc string) *windowsv1.GMSACredentialSpec {
	s := &windowsv1.GMSACredentialSpec{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if doc != "" {
		s.CredSpec.Raw = []byte(doc)
	}
	return s
}

// nested returns an object nesting depth levels of alternating objects and arrays.
func nested(depth int) string {
	var open, closing strings.Builder
	for level := 1; level <= depth; level++ {
		if level%2 == 1 {
			open.WriteString(`{"k":`)
			closing.WriteString(`}`)
		} else {
			open.WriteString(`[`)
			closing.WriteString(`]`)
		}
	}
	return open.String() + "1" + reverse(closing.String())
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// sized returns an object of exactly n bytes.
func sized(n int) string {
	const frame = `{"k":""}`
	return `{"k":"` + strings.Repeat("x", n-len(frame)) + `"}`
}

func TestValidateGMSACredentialSpec(t *testing.T) {
	deepPath := "credspec.k" + strings.Repeat("[0].k", 15) + "[0]"
	tests := []struct {
		name string
		s    *windowsv1.GMSACredentialSpec
		want []want
	}{
		{"the design's example", credSpec("webapp1-credspec", designCredSpec), nil},
		{"empty object", credSpec("a", `{}`), nil},
		{"unknown fields, every JSON kind", credSpec("a", `{"x":{"y":[1,2.5e300,-0,true,false,null,"s",{}]},"big":123456789012345678901234567890}`), nil},
		{"same key in different objects", credSpec("a", `{"k":{"k":1},"j":[{"k":1},{"k":2}]}`), nil},
		{"name with dots", credSpec("webapp1.contoso.com", `{}`), nil},
		{"no name", credSpec("", `{}`), []want{required("metadata.name")}},
		{"name not a DNS subdomain", credSpec("WebApp_1", `{}`), []want{invalid("metadata.name")}},
		{"namespace set", func() *windowsv1.GMSACredentialSpec { s := credSpec("a", `{}`); s.Namespace = "default"; return s }(), []want{forbidden("metadata.namespace")}},
		{"no credspec", credSpec("a", ""), []want{required("credspec")}},
		{"a string", credSpec("a", `"ActiveDirectory"`), []want{invalid("credspec")}},
		{"an array", credSpec("a", `[{"k":1}]`), []want{invalid("credspec")}},
		{"a number", credSpec("a", `42`), []want{invalid("credspec")}},
		{"a boolean", credSpec("a", `true`), []want{invalid("credspec")}},
		{"null", credSpec("a", `null`), []want{invalid("credspec")}},
		{"not JSON", credSpec("a", `{"k":`), []want{invalid("credspec")}},
		{"two values", credSpec("a", `{}{}`), []want{invalid("credspec")}},
		{"a repeated key", credSpec("a", `{"k":1,"k":2}`), []want{duplicate("credspec.k")}},
		{"a repeated nested key", credSpec("a", `{"a":[{"b":{"k":1,"k":1}}]}`), []want{duplicate("credspec.a[0].b.k")}},
		{"exactly the size limit", credSpec("a", sized(windowsv1.MaxCredSpecBytes)), nil},
		{"over the size limit", credSpec("a", sized(windowsv1.MaxCredSpecBytes+1)), []want{tooLong("credspec")}},
		{"exactly the depth limit", credSpec("a", nested(windowsv1.MaxCredSpecDepth)), nil},
		{"over the depth limit", credSpec("a", nested(windowsv1.MaxCredSpecDepth+1)), []want{invalid(deepPath)}},
		{"far over the depth limit", credSpec("a", nested(10000)), []want{invalid(deepPath)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateGMSACredentialSpec(tc.s), tc.want...)
		})
	}
}

func TestValidateGMSACredentialSpecUpdate(t *testing.T) {
	old := credSpec("a", designCredSpec)
	old.ResourceVersion = "1"
	changed := old.DeepCopy()
	changed.CredSpec.Raw = []byte(`{"CmsPlugins":[]}`)
	renamed := old.DeepCopy()
	renamed.Name = "b"
	emptied := old.DeepCopy()
	emptied.CredSpec.Raw = nil
	tests := []struct {
		name string
		s    *windowsv1.GMSACredentialSpec
		want []want
	}{
		{"credspec changed", changed, nil},
		{"renamed", renamed, []want{invalid("metadata.name")}},
		{"credspec removed", emptied, []want{required("credspec")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateGMSACredentialSpecUpdate(tc.s, old), tc.want...)
		})
	}
}

// FuzzValidateGMSACredSpecDocument: any bytes get an answer, never a panic, and an accepted
// document is a JSON object within the limits.
func FuzzValidateGMSACredSpecDocument(f *testing.F) {
	for _, seed := range []string{designCredSpec, `{}`, `{"k":1,"k":2}`, `[`, `{"a":[{"b":{}}]}`, nested(40), `"s"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		errs := validateCredSpecDocument(raw, nil)
		if len(errs) > 0 {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			t.Fatalf("accepted %q, which is no JSON object: %v", raw, err)
		}
		if len(raw) > windowsv1.MaxCredSpecBytes {
			t.Fatalf("accepted %d bytes", len(raw))
		}
	})
}
