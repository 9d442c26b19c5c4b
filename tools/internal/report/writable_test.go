package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "r.png")); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %d files behind", len(left))
	}
	bad := filepath.Join(dir, "no-such-dir", "r.png")
	if err := CheckWritable(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a missing folder: %v, want an error naming %s", err, bad)
	}
}
