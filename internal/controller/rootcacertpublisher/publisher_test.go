package rootcacertpublisher

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

const caPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

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

// terminatingRefusal is NamespaceLifecycle's answer to a create in a terminating namespace.
func terminatingRefusal() error {
	err := apierrors.NewForbidden(corev1.Resource("configmaps"), ConfigMapName, errors.New("namespace is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause})
	return err
}

func TestSync(t *testing.T) {
	active := namespace("team", corev1.NamespaceActive)
	cases := []struct {
		name       string
		namespace  *corev1.Namespace // in the cache; nil: not there
		configMaps []*corev1.ConfigMap
		createErr  error // the server's answer to a create
		// want is what is written (created or updated), nil for no write.
		want    *corev1.ConfigMap
		wantErr bool
	}{
		{name: "missing", namespace: active, want: wantCreated},
		{name: "missing, other configmaps there", namespace: active,
			configMaps: []*corev1.ConfigMap{configMap("team", "app", published, nil, nil), configMap("other", ConfigMapName, published, described, nil)},
			want:       wantCreated},
		{name: "current", namespace: active, configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, published, described, nil)}},
		{name: "current with extra labels and annotations", namespace: active,
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, published,
				map[string]string{DescriptionAnnotation: Description, "example.com/note": "x"}, map[string]string{"team": "a"})}},
		{name: "CA changed", namespace: active,
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, map[string]string{DataKey: "forged"}, described, nil)},
			want:       wantCreated},
		{name: "data key added", namespace: active,
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, map[string]string{DataKey: caPEM, "extra": "x"}, described, nil)},
			want:       wantCreated},
		{name: "data emptied", namespace: active,
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, nil, described, nil)},
			want:       wantCreated},
		{name: "description removed", namespace: active,
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, published, nil, nil)},
			want:       wantCreated},
		{name: "description edited is kept while the data is current", namespace: active,
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, published, map[string]string{DescriptionAnnotation: "ours"}, nil)}},
		{name: "restoring keeps other labels and annotations, resets the description", namespace: active,
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, map[string]string{DataKey: "forged"},
				map[string]string{DescriptionAnnotation: "ours", "example.com/note": "x"}, map[string]string{"team": "a"})},
			want: configMap("team", ConfigMapName, published,
				map[string]string{DescriptionAnnotation: Description, "example.com/note": "x"}, map[string]string{"team": "a"})},
		{name: "terminating namespace", namespace: namespace("team", corev1.NamespaceTerminating)},
		{name: "terminating namespace with a changed CA", namespace: namespace("team", corev1.NamespaceTerminating),
			configMaps: []*corev1.ConfigMap{configMap("team", ConfigMapName, map[string]string{DataKey: "forged"}, described, nil)}},
		{name: "namespace gone", namespace: nil},
		{name: "created meanwhile", namespace: active,
			createErr: apierrors.NewAlreadyExists(corev1.Resource("configmaps"), ConfigMapName), want: wantCreated},
		{name: "namespace deleted meanwhile", namespace: active,
			createErr: apierrors.NewNotFound(corev1.Resource("namespaces"), "team"), want: wantCreated},
		{name: "namespace terminating meanwhile", namespace: active, createErr: terminatingRefusal(), want: wantCreated},
		{name: "admission not ready is retried", namespace: active,
			createErr: apierrors.NewForbidden(corev1.Resource("configmaps"), ConfigMapName, errors.New("not yet ready to handle request")),
			want:      wantCreated, wantErr: true},
		{name: "server error is retried", namespace: active,
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
			namespaces, configMaps := factory.Core().V1().Namespaces(), factory.Core().V1().ConfigMaps()
			p, err := New(client, namespaces, configMaps, []byte(caPEM))
			if err != nil {
				t.Fatal(err)
			}
			if tc.namespace != nil {
				if err := namespaces.Informer().GetIndexer().Add(tc.namespace); err != nil {
					t.Fatal(err)
				}
			}
			for _, cm := range tc.configMaps {
				if err := configMaps.Informer().GetIndexer().Add(cm); err != nil {
					t.Fatal(err)
				}
			}
			client.ClearActions()
			err = p.sync(context.Background(), "team")
			if (err != nil) != tc.wantErr {
				t.Errorf("sync: %v, want error %v", err, tc.wantErr)
			}
			var written []*corev1.ConfigMap
			for _, a := range client.Actions() {
				switch a := a.(type) {
				case k8stesting.CreateAction:
					written = append(written, a.GetObject().(*corev1.ConfigMap))
				case k8stesting.UpdateAction:
					written = append(written, a.GetObject().(*corev1.ConfigMap))
				default:
					t.Errorf("unexpected request %s %s", a.GetVerb(), a.GetResource().Resource)
				}
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

func TestEvents(t *testing.T) {
	cm := configMap("a", ConfigMapName, published, described, nil)
	cases := []struct {
		name string
		do   func(*Publisher)
		want []string
	}{
		{"namespace added", func(p *Publisher) { p.namespaceChanged(namespace("a", corev1.NamespaceActive)) }, []string{"a"}},
		{"configmap changed", func(p *Publisher) { p.configMapChanged(cm) }, []string{"a"}},
		{"configmap deleted, seen late", func(p *Publisher) {
			p.configMapChanged(cache.DeletedFinalStateUnknown{Key: "a/" + ConfigMapName, Obj: cm})
		}, []string{"a"}},
		{"another configmap changed", func(p *Publisher) { p.configMapChanged(configMap("a", "app", nil, nil, nil)) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			factory := informers.NewSharedInformerFactory(client, 0)
			p, err := New(client, factory.Core().V1().Namespaces(), factory.Core().V1().ConfigMaps(), []byte(caPEM))
			if err != nil {
				t.Fatal(err)
			}
			tc.do(p)
			var got []string
			for p.queue.Len() > 0 {
				key, _ := p.queue.Get()
				got = append(got, key)
				p.queue.Done(key)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// The running publisher fills existing and new namespaces and restores a deleted or edited
// configmap.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(namespace("existing", corev1.NamespaceActive))
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := New(client, factory.Core().V1().Namespaces(), factory.Core().V1().ConfigMaps(), []byte(caPEM))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, 1)
	}()
	defer func() {
		cancel()
		<-done
		factory.Shutdown()
	}()
	waitPublished := func(ns string) {
		t.Helper()
		var got *corev1.ConfigMap
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			got, err = client.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
			return err == nil && got.Data[DataKey] == caPEM, nil
		})
		if err != nil {
			t.Fatalf("configmap %s/%s not published: %+v", ns, ConfigMapName, got)
		}
	}
	waitPublished("existing")
	factory.WaitForCacheSync(ctx.Done())
	if _, err := client.CoreV1().Namespaces().Create(ctx, namespace("new", corev1.NamespaceActive), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("new")
	if err := client.CoreV1().ConfigMaps("new").Delete(ctx, ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("new")
	forged := configMap("new", ConfigMapName, map[string]string{DataKey: "forged"}, described, nil)
	if _, err := client.CoreV1().ConfigMaps("new").Update(ctx, forged, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished("new")
}
