//go:build unix

package staticpod

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO or device in the directory is refused without being opened: opening a FIFO for reading
// would block the agent until something writes to it.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	symlink(t, "/dev/null", filepath.Join(dir, "null.yaml"))
	ms, err := Load(testConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("got %d outcomes, want 2: %+v", len(ms), ms)
	}
	for _, m := range ms {
		if m.Pod != nil || m.Err == nil || !strings.Contains(m.Err.Error(), "not a regular file") {
			t.Errorf("%s: got pod %v err %v, want refused as not a regular file", m.File, m.Pod, m.Err)
		}
	}
}
