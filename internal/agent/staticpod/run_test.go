package staticpod

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	k8stesting "k8s.io/client-go/testing"
)

// start runs the Syncer until the test ends. Directory events are acted on at once, so that
// only the fake clock decides when a resync or a retry comes.
func (f *fixture) start(t *testing.T, resync time.Duration) {
	t.Helper()
	f.syncer.settle = 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.syncer.Run(ctx, resync)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// eventually waits for cond, which the Syncer's goroutine makes true.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (f *fixture) exists(ns, name string) func() bool {
	return func() bool {
		_, err := f.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil
	}
}

// waiting reports whether Run is waiting on the clock, so that a step reaches its timer.
func (f *fixture) waiting() bool { return f.clock.HasWaiters() }

func TestRunResyncsAndWatches(t *testing.T) {
	f := newFixture(t, nil)
	writeFile(t, f.dir, "a.yaml", podYAML("a", "", ""))
	f.start(t, time.Minute)
	eventually(t, "the first sync", f.exists("default", "a-node1"))
	eventually(t, "Run to wait", f.waiting)

	// The API changes behind the node's back: nothing in the directory says so, the resync does.
	if err := f.client.CoreV1().Pods("default").Delete(context.Background(), "a-node1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Minute)
	eventually(t, "the resync to recreate the mirror pod", f.exists("default", "a-node1"))

	// A new manifest is acted on without waiting for the resync.
	writeFile(t, f.dir, "b.yaml", podYAML("b", "", ""))
	eventually(t, "the new manifest's mirror pod", f.exists("default", "b-node1"))
	if err := os.Remove(filepath.Join(f.dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removed manifest's mirror pod to go", func() bool { return !f.exists("default", "b-node1")() })
}

func TestRunRetriesWithBackoff(t *testing.T) {
	f := newFixture(t, nil)
	writeFile(t, f.dir, "a.yaml", podYAML("a", "", ""))
	var creates atomic.Int32
	f.client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if creates.Add(1) == 1 {
			return true, nil, apierrors.NewServiceUnavailable("starting")
		}
		return false, nil, nil
	})
	f.start(t, time.Hour)
	eventually(t, "the failed sync to wait for its retry", func() bool { return creates.Load() == 1 && f.waiting() })
	if f.exists("default", "a-node1")() {
		t.Fatal("mirror pod exists after a failed create")
	}
	// The first retry comes after about a second, well before the resync.
	f.clock.Step(2 * firstRetry)
	eventually(t, "the retry to create the mirror pod", f.exists("default", "a-node1"))
	if !strings.Contains(f.logs.String(), "Syncing static pods failed") {
		t.Errorf("the failure was not logged:\n%s", f.logs.String())
	}
}

func TestRunWaitsForTheDirectory(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.Dir = filepath.Join(c.Dir, "manifests") })
	dir := f.syncer.cfg.Dir
	f.start(t, time.Hour)
	eventually(t, "the failed sync to wait for its retry", f.waiting)

	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.yaml", podYAML("a", "", ""))
	f.clock.Step(2 * firstRetry)
	eventually(t, "the retry to find the directory", f.exists("default", "a-node1"))
	// Once the directory exists it is watched.
	writeFile(t, dir, "b.yaml", podYAML("b", "", ""))
	eventually(t, "the watch to see a new manifest", f.exists("default", "b-node1"))
}

func TestRunStopsWithItsContext(t *testing.T) {
	f := newFixture(t, nil)
	f.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("unreachable")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.syncer.Run(ctx, 0)
	}()
	eventually(t, "Run to wait", f.waiting)
	cancel()
	eventually(t, "Run to return", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}

// Files written as Kubernetes writes projected volumes change only through the hidden "..data"
// link: that change is acted on at once too.
func TestRunSeesAtomicWrites(t *testing.T) {
	f := newFixture(t, nil)
	version := func(name, args string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(f.dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(f.dir, name), "web.yaml", podYAML("web", args, ""))
	}
	version("..v1", "")
	symlink(t, "..v1", filepath.Join(f.dir, "..data"))
	symlink(t, filepath.Join("..data", "web.yaml"), filepath.Join(f.dir, "web.yaml"))
	f.start(t, time.Hour)
	eventually(t, "the first sync", f.exists("default", "web-node1"))
	first := f.pod(t, "default", "web-node1").Annotations[MirrorAnnotation]

	version("..v2", "    args: [--v=2]\n")
	symlink(t, "..v2", filepath.Join(f.dir, "..data_tmp"))
	if err := os.Rename(filepath.Join(f.dir, "..data_tmp"), filepath.Join(f.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new version's mirror pod", func() bool {
		p, err := f.client.CoreV1().Pods("default").Get(context.Background(), "web-node1", metav1.GetOptions{})
		return err == nil && p.Annotations[MirrorAnnotation] != first
	})
}
