package everynamespace_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/idplane/idplane/internal/controller/everynamespace"
	"github.com/idplane/idplane/internal/controller/everynamespace/everynamespacetest"
)

func TestNamespaceGone(t *testing.T) {
	configMaps := corev1.Resource("configmaps")
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"namespace deleted", apierrors.NewNotFound(corev1.Resource("namespaces"), "team"), true},
		{"namespace terminating", everynamespacetest.TerminatingRefusal(configMaps, "kept"), true},
		{"admission not ready", apierrors.NewForbidden(configMaps, "kept", errors.New("not yet ready to handle request")), false},
		{"already exists", apierrors.NewAlreadyExists(configMaps, "kept"), false},
		{"server error", apierrors.NewInternalError(errors.New("etcd down")), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := everynamespace.NamespaceGone(tc.err); got != tc.want {
				t.Errorf("NamespaceGone(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
