package atomicwriter

import (
	"bytes"
	"path/filepath"
	"testing"
)

func benchmarkSets() [2]map[string]FileProjection {
	var sets [2]map[string]FileProjection
	for i, fill := range []byte{'A', 'B'} {
		sets[i] = map[string]FileProjection{
			"token":     {Data: bytes.Repeat([]byte{fill}, 1024), Mode: 0o600},
			"ca.crt":    {Data: bytes.Repeat([]byte{fill}, 4096), Mode: 0o644},
			"namespace": {Data: []byte{fill}, Mode: 0o644},
		}
	}
	return sets
}

// BenchmarkWriteChanged measures a full swap: new timestamped directory, files synced, ..data
// renamed, old directory removed.
func BenchmarkWriteChanged(b *testing.B) {
	w, err := New(filepath.Join(b.TempDir(), "vol"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	sets := benchmarkSets()
	i := 0
	for b.Loop() {
		if _, err := w.Write(sets[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkWriteUnchanged measures the check that finds the files already on disk.
func BenchmarkWriteUnchanged(b *testing.B) {
	w, err := New(filepath.Join(b.TempDir(), "vol"), "bench")
	if err != nil {
		b.Fatal(err)
	}
	set := benchmarkSets()[0]
	if _, err := w.Write(set); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if changed, err := w.Write(set); err != nil || changed {
			b.Fatal(changed, err)
		}
	}
}
