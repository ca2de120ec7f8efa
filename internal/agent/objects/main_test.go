package objects

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// client-go's fake clientset cannot stream a watch's initial list; informers fall back to a
	// plain list and watch without this client feature.
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	os.Exit(m.Run())
}
