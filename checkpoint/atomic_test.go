package checkpoint

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type state struct {
	Step  int               `json:"step"`
	Scale float64           `json:"scale"`
	Names map[string]string `json:"names"`
}

func TestJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	want := state{Step: 1200, Scale: 65536, Names: map[string]string{"opt": "adam"}}
	if err := SaveJSON(path, want); err != nil {
		t.Fatal(err)
	}
	var got state
	if err := LoadJSON(path, &got); err != nil {
		t.Fatal(err)
	}
	if got.Step != want.Step || got.Scale != want.Scale || got.Names["opt"] != "adam" {
		t.Errorf("got %+v, want %+v", got, want)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("new file: mode %v, %v; want 0644", fi.Mode(), err)
	}
	// A replaced file keeps its mode.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SaveJSON(path, want); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file: mode %v, %v; want 0600", fi.Mode(), err)
	}
}

func TestLoadJSONErrors(t *testing.T) {
	dir := t.TempDir()
	if err := LoadJSON(filepath.Join(dir, "none.json"), new(state)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	path := filepath.Join(dir, "bad.json")
	for i, b := range []string{"", `{"step": 1`, `{"step": "one"}`, `[1]`} {
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := LoadJSON(path, new(state)); err == nil || !strings.HasPrefix(err.Error(), "checkpoint: load "+path+": ") {
			t.Errorf("%d %q: error %v", i, b, err)
		}
	}
}

// TestAtomicFailures checks that every failure leaves the old file and no
// temporary file behind.
func TestAtomicFailures(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := SaveJSON(path, state{Step: 1}); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)

	// A value JSON cannot encode fails before any file is made.
	if err := SaveJSON(path, map[string]any{"c": make(chan int)}); err == nil {
		t.Error("saving a channel: no error")
	}
	checkOnly(t, dir, path, old)

	// A write that fails half way.
	boom := errors.New("boom")
	err := writeAtomic(path, func(w io.Writer) error {
		if _, err := w.Write(make([]byte, 3<<20)); err != nil { // past the buffer: on disk
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("failing write: %v", err)
	}
	checkOnly(t, dir, path, old)

	// The rename fails: path is a non-empty directory.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "f"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SaveJSON(sub, state{Step: 2}); err == nil {
		t.Error("saving over a directory: no error")
	}
	checkOnly(t, sub, filepath.Join(sub, "f"), old)
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	checkOnly(t, dir, path, old)

	// No temporary file can be made: the directory is a file, or missing.
	if err := SaveJSON(filepath.Join(path, "x.json"), state{}); err == nil {
		t.Errorf("directory is a file: %v", err)
	}
	if err := SaveJSON(filepath.Join(dir, "none", "x.json"), state{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
	checkOnly(t, dir, path, old)
}

func TestAtomicReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permissions do not stop root")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := SaveJSON(path, state{Step: 1}); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(path)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if err := SaveJSON(path, state{Step: 2}); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("read-only directory: %v, want permission denied", err)
	}
	checkOnly(t, dir, path, old)
}
