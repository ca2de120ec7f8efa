// Package everynamespacetest runs a controller built on everynamespace against a fake clientset
// and checks what every such controller must do, so that each controller's tests add only what
// is its own.
package everynamespacetest

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/idplane/idplane/internal/controller/everynamespace"
)

// Controller is the controller under test.
type Controller struct {
	// New builds it on client and factory's informers.
	New func(client kubernetes.Interface, factory informers.SharedInformerFactory) (*everynamespace.Loop, error)
	// Resource and Name say which object it keeps.
	Resource schema.GroupVersionResource
	Name     string
	// Right reports whether the object is as the controller keeps it; nil: any object is.
	Right func(runtime.Object) bool
}

// Run runs c until the test ends and checks that it makes the object right in an active namespace
// there at the start and in one created later, again when the object is deleted, and that it
// never creates the object in a terminating namespace. It returns the client and a wait for the
// object to be right in a namespace, for the controller's own checks.
func Run(t *testing.T, c Controller) (client *fake.Clientset, waitRight func(namespace string)) {
	t.Helper()
	namespace := func(name string, phase corev1.NamespacePhase) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
	}
	client = fake.NewClientset(namespace("existing", corev1.NamespaceActive), namespace("leaving", corev1.NamespaceTerminating))
	factory := informers.NewSharedInformerFactory(client, 0)
	loop, err := c.New(client, factory)
	if err != nil {
		t.Fatal(err)
	}
	// t.Context ends before the cleanups run.
	ctx := t.Context()
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop.Run(ctx, 1)
	}()
	t.Cleanup(func() {
		<-done
		factory.Shutdown()
	})
	objects := client.Tracker()
	waitRight = func(ns string) {
		t.Helper()
		var got runtime.Object
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			var err error
			got, err = objects.Get(c.Resource, ns, c.Name)
			return err == nil && (c.Right == nil || c.Right(got)), nil
		})
		if err != nil {
			t.Fatalf("%s %s/%s not made right: %+v", c.Resource.Resource, ns, c.Name, got)
		}
	}
	waitRight("existing")
	factory.WaitForCacheSync(ctx.Done())
	if _, err := client.CoreV1().Namespaces().Create(ctx, namespace("new", corev1.NamespaceActive), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRight("new")
	if err := objects.Delete(c.Resource, "new", c.Name); err != nil {
		t.Fatal(err)
	}
	waitRight("new")
	if _, err := objects.Get(c.Resource, "leaving", c.Name); !apierrors.IsNotFound(err) {
		t.Errorf("%s %s in a terminating namespace: %v", c.Resource.Resource, c.Name, err)
	}
	return client, waitRight
}

// TerminatingRefusal is NamespaceLifecycle's answer to a create of resource name in a terminating
// namespace.
func TerminatingRefusal(resource schema.GroupResource, name string) error {
	err := apierrors.NewForbidden(resource, name, errors.New("namespace is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause})
	return err
}
