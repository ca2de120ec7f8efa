package apiserver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idplane/idplane/internal/controller/rootcacertpublisher"
	"github.com/idplane/idplane/internal/controller/serviceaccount"
)

// Every namespace, the system ones and a new one, gets the default ServiceAccount and
// kube-root-ca.crt with the CA that verifies the server; both come back when deleted and the CA
// when edited.
func TestNamespaceContent(t *testing.T) {
	ts := startTestServer(t, t.TempDir(), nil)
	ctx := context.Background()
	core := ts.client.CoreV1()
	mustCreate(t, core.Namespaces().Create, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})

	account := func(ns string) (*corev1.ServiceAccount, error) {
		return core.ServiceAccounts(ns).Get(ctx, serviceaccount.DefaultName, metav1.GetOptions{})
	}
	rootCA := func(ns string) (*corev1.ConfigMap, error) {
		return core.ConfigMaps(ns).Get(ctx, rootcacertpublisher.ConfigMapName, metav1.GetOptions{})
	}
	var ca string
	eventually(t, "kube-root-ca.crt in team", func() error {
		cm, err := rootCA("team")
		if err != nil {
			return err
		}
		ca = cm.Data[rootcacertpublisher.DataKey]
		return nil
	})
	// The published CA alone must let a client trust the server.
	cfg := rest.CopyConfig(ts.config)
	cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.CAData = "", []byte(ca)
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{}); err != nil {
		t.Fatalf("verifying the server with the published CA: %v", err)
	}

	for _, ns := range append([]string{"team"}, systemNamespaces...) {
		eventually(t, "default serviceaccount in "+ns, func() error {
			_, err := account(ns)
			return err
		})
		eventually(t, "kube-root-ca.crt in "+ns, func() error {
			cm, err := rootCA(ns)
			if err != nil {
				return err
			}
			if cm.Data[rootcacertpublisher.DataKey] != ca || cm.Annotations[rootcacertpublisher.DescriptionAnnotation] != rootcacertpublisher.Description {
				return fmt.Errorf("unexpected contents: %+v", cm)
			}
			return nil
		})
	}

	// Deleted objects come back as new ones.
	sa, err := account("team")
	if err != nil {
		t.Fatal(err)
	}
	if err := core.ServiceAccounts("team").Delete(ctx, sa.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "default serviceaccount recreated", func() error {
		got, err := account("team")
		if err == nil && got.UID == sa.UID {
			err = errors.New("still the deleted one")
		}
		return err
	})
	cm, err := rootCA("team")
	if err != nil {
		t.Fatal(err)
	}
	if err := core.ConfigMaps("team").Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "kube-root-ca.crt recreated", func() error {
		got, err := rootCA("team")
		if err == nil && got.UID == cm.UID {
			err = errors.New("still the deleted one")
		}
		return err
	})

	// An edited CA is reverted; the editor's own label stays.
	cm, err = rootCA("team")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[rootcacertpublisher.DataKey] = "not a CA"
	cm.Labels = map[string]string{"edited-by": "test"}
	if _, err := core.ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "kube-root-ca.crt restored", func() error {
		cm, err := rootCA("team")
		if err != nil {
			return err
		}
		if cm.Data[rootcacertpublisher.DataKey] != ca {
			return errors.New("ca.crt not restored")
		}
		if cm.Labels["edited-by"] != "test" {
			return fmt.Errorf("labels %v lost the editor's", cm.Labels)
		}
		return nil
	})
}
