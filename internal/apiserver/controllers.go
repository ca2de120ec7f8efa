package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	namespacecontroller "github.com/idplane/idplane/internal/controller/namespace"
)

// systemNamespaces exist from the first start; NamespaceLifecycle keeps the first three from
// being deleted.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

func addControllers(srv *genericapiserver.GenericAPIServer, client kubernetes.Interface, dyn dynamic.Interface, factory informers.SharedInformerFactory) error {
	namespaces, err := namespacecontroller.New(client, dyn, factory.Core().V1().Namespaces())
	if err != nil {
		return err
	}
	err = srv.AddPostStartHook("start-informers", func(ctx genericapiserver.PostStartHookContext) error {
		factory.Start(ctx.Done())
		return nil
	})
	if err != nil {
		return err
	}
	err = srv.AddPostStartHook("system-namespaces", func(ctx genericapiserver.PostStartHookContext) error {
		return ensureNamespaces(ctx, client)
	})
	if err != nil {
		return err
	}
	return srv.AddPostStartHook("namespace-controller", func(ctx genericapiserver.PostStartHookContext) error {
		go namespaces.Run(ctx, 2)
		return nil
	})
}

func ensureNamespaces(ctx context.Context, client kubernetes.Interface) error {
	for _, name := range systemNamespaces {
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %q: %w", name, err)
		}
	}
	return nil
}
