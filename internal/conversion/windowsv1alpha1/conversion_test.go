package windowsv1alpha1

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	windowsv1 "github.com/idplane/idplane/api/windows/v1"
	windowsv1alpha1 "github.com/idplane/idplane/api/windows/v1alpha1"
)

func full() *windowsv1alpha1.GMSACredentialSpec {
	return &windowsv1alpha1.GMSACredentialSpec{
		ObjectMeta: metav1.ObjectMeta{
			Name: "webapp1-credspec", UID: "u", ResourceVersion: "7", Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{"c": "d"}, CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)),
		},
		CredSpec: windowsv1alpha1.CredSpec{Raw: []byte(`{"CmsPlugins":["ActiveDirectory"],"Unknown":{"x":1}}`)},
	}
}

// TestRoundTrip: a filled v1alpha1 object survives v1alpha1 → v1 → v1alpha1, and the two
// versions still have the same fields (a field added to one version fails here until converted).
func TestRoundTrip(t *testing.T) {
	in := full()
	var v1 windowsv1.GMSACredentialSpec
	ToV1(in, &v1)
	if string(v1.CredSpec.Raw) != string(in.CredSpec.Raw) || v1.Name != in.Name {
		t.Errorf("v1 form: %+v", v1)
	}
	var back windowsv1alpha1.GMSACredentialSpec
	FromV1(&v1, &back)
	if !reflect.DeepEqual(in, &back) {
		t.Errorf("round trip changed the object:\n in: %+v\nout: %+v", in, &back)
	}
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[windowsv1.GMSACredentialSpec](), reflect.TypeFor[windowsv1alpha1.GMSACredentialSpec]()},
		{reflect.TypeFor[windowsv1.CredSpec](), reflect.TypeFor[windowsv1alpha1.CredSpec]()},
	} {
		if a, b := fieldNames(pair[0]), fieldNames(pair[1]); !reflect.DeepEqual(a, b) {
			t.Errorf("%s fields differ between versions: v1 %v, v1alpha1 %v", pair[0].Name(), a, b)
		}
	}
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		names = append(names, t.Field(i).Name+" "+string(t.Field(i).Tag))
	}
	return names
}

func TestThroughTheScheme(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{windowsv1.AddToScheme, windowsv1alpha1.AddToScheme, AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	list := &windowsv1alpha1.GMSACredentialSpecList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []windowsv1alpha1.GMSACredentialSpec{*full()}}
	var v1 windowsv1.GMSACredentialSpecList
	if err := s.Convert(list, &v1, nil); err != nil {
		t.Fatal(err)
	}
	if v1.ResourceVersion != "9" || len(v1.Items) != 1 || string(v1.Items[0].CredSpec.Raw) != string(list.Items[0].CredSpec.Raw) {
		t.Errorf("converted list: %+v", v1)
	}
	var back windowsv1alpha1.GMSACredentialSpecList
	if err := s.Convert(&v1, &back, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(list, &back) {
		t.Errorf("list round trip:\n in: %+v\nout: %+v", list, &back)
	}
}
