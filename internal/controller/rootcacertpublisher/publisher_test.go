package rootcacertpublisher

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/idplane/idplane/internal/controller/everynamespace"
	"github.com/idplane/idplane/internal/controller/everynamespace/everynamespacetest"
)

const caPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func configMap(namespace, name string, data, annotations, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations, Labels: labels},
		Data:       data,
	}
}

var (
	published   = map[string]string{DataKey: caPEM}
	described   = map[string]string{DescriptionAnnotation: Description}
	wantCreated = configMap("team", ConfigMapName, published, described, nil)
)

func TestEnsure(t *testing.T) {
	cases := []struct {
		name       string
		configMaps []*corev1.ConfigMap
		createErr  error // the server's answer to a create
		// want is what is written (created or updated), nil for no write.
		want    *corev1.ConfigMap
		wantErr bool
	}{
		{name: "missing", want: wantCreated},
		{name: "missing, other configmaps there",
			configMaps: []*corev1.ConfigMap{configMap("team", "app", published, nil, nil), configMap("other", ConfigMapName, published, described, nil)},
			want:       wantCreated},
		{name: "current", configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, published, described, nil)}},
		{name: "current with extra labels and annotations",
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, published,
				map[string]string{DescriptionAnnotation: Description, "example.com/note": "x"}, map[string]string{"team": "a"})}},
		{name: "CA changed",
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, map[string]string{DataKey: "forged"}, described, nil)},
			want:       wantCreated},
		{name: "data key added",
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, map[string]string{DataKey: caPEM, "extra": "x"}, described, nil)},
			want:       wantCreated},
		{name: "data emptied",
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, nil, described, nil)},
			want:       wantCreated},
		{name: "description removed",
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, published, nil, nil)},
			want:       wantCreated},
		{name: "description edited is kept while the data is current",
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, published, map[string]string{DescriptionAnnotation: "ours"}, nil)}},
		{name: "restoring keeps other labels and annotations, resets the description",
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, map[string]string{DataKey: "forged"},
				map[string]string{DescriptionAnnotation: "ours", "example.com/note": "x"}, map[string]string{"team": "a"})},
			want: configMap("team", ConfigMapName, published,
				map[string]string{DescriptionAnnotation: Description, "example.com/note": "x"}, map[string]string{"team": "a"})},
		{name: "created meanwhile",
			createErr: apierrors.NewAlreadyExists(corev1.Resource("configmaps"), ConfigMapName), want: wantCreated},
		{name: "namespace deleted meanwhile",
			createErr: apierrors.NewNotFound(corev1.Resource("namespaces"), "team"), want: wantCreated},
		{name: "namespace terminating meanwhile",
			createErr: everynamespacetest.TerminatingRefusal(corev1.Resource("configmaps"), ConfigMapName), want: wantCreated},
		{name: "admission not ready is retried",
			createErr: apierrors.NewForbidden(corev1.Resource("configmaps"), ConfigMapName, errors.New("not yet ready to handle request")),
			want:      wantCreated, wantErr: true},
		{name: "server error is retried",
			createErr: apierrors.NewInternalError(errors.New("etcd down")), want: wantCreated, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			for _, cm := range tc.configMaps {
				objects = append(objects, cm)
			}
			client := fake.NewClientset(objects...)
			if tc.createErr != nil {
				client.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.createErr
				})
			}
			factory := informers.NewSharedInformerFactory(client, 0)
			configMaps := factory.Core().V1().ConfigMaps()
			p := &publisher{client: client, caPEM: caPEM, configMaps: configMaps.Lister()}
			for _, cm := range tc.configMaps {
				if err := configMaps.Informer().GetIndexer().Add(cm); err != nil {
					t.Fatal(err)
				}
			}
			client.ClearActions()
			err := p.ensure(context.Background(), "team")
			if (err != nil) != tc.wantErr {
				t.Errorf("ensure: %v, want error %v", err, tc.wantErr)
			}
			var written []*corev1.ConfigMap
			for _, a := range client.Actions() {
				// Creates and updates carry the object written; the two action interfaces are the same.
				write, ok := a.(k8stesting.CreateAction)
				if !ok {
					t.Errorf("unexpected request %s %s", a.GetVerb(), a.GetResource().Resource)
					continue
				}
				written = append(written, write.GetObject().(*corev1.ConfigMap))
			}
			switch {
			case tc.want == nil && len(written) > 0:
				t.Errorf("wrote %+v, want no write", written)
			case tc.want != nil && len(written) != 1:
				t.Errorf("%d writes, want one", len(written))
			case tc.want != nil:
				if diff := cmp.Diff(tc.want, written[0]); diff != "" {
					t.Errorf("written configmap (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// The running publisher keeps the configmap where and when everynamespacetest says, and restores
// an edited one.
func TestRun(t *testing.T) {
	client, waitPublished := everynamespacetest.Run(t, everynamespacetest.Controller{
		New: func(client kubernetes.Interface, factory informers.SharedInformerFactory) (*everynamespace.Loop, error) {
			return New(client, factory.Core().V1().Namespaces(), factory.Core().V1().ConfigMaps(), []byte(caPEM))
		},
		Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
		Name:     ConfigMapName,
		Right:    func(obj runtime.Object) bool { return obj.(*corev1.ConfigMap).Data[DataKey] == caPEM },
	})
	forged := configMap("new", ConfigMapName, map[string]string{DataKey: "forged"}, described, nil)
	if _, err := client.CoreV1().ConfigMaps("new").Update(t.Context(), forged, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("new")
}
