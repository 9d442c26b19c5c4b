package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
)

// TestSum: SaveWith returns the checksum of the bytes it wrote, and ReadSum
// refuses a file with one bit flipped, naming it; "" checks nothing.
func TestSum(t *testing.T) {
	if got, want := Sum([]byte("abc")), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Errorf("Sum(abc) = %s, want %s", got, want)
	}
	d := devtest.Open(t)
	ts, _ := fixture(t, d)
	path := filepath.Join(t.TempDir(), "model.safetensors")
	sum, err := SaveWith(path, ts, map[string]string{"k": "v"}, SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum != Sum(raw) {
		t.Errorf("SaveWith returned %s, the file's checksum is %s", sum, Sum(raw))
	}
	if f, err := ReadSum(path, sum); err != nil || len(f.Tensors) != 3 || f.Meta["k"] != "v" {
		t.Errorf("ReadSum of the file saved: %+v, %v", f, err)
	}
	for _, i := range []int{0, len(raw) / 2, len(raw) - 1} {
		bad := append([]byte(nil), raw...)
		bad[i] ^= 0x10
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadSum(path, sum)
		if !errors.Is(err, ErrChecksum) || !strings.HasPrefix(err.Error(), "checkpoint: read "+path+": checksum mismatch: its sha256 is ") {
			t.Errorf("byte %d flipped: %v", i, err)
		}
		if _, err := ReadFileSum(path, ""); err != nil {
			t.Errorf("byte %d flipped, no checksum: %v", i, err)
		}
	}
	if _, err := ReadSum(path, "md5:00"); err == nil || !strings.Contains(err.Error(), "not sha256:<hex>") {
		t.Errorf("a checksum of another kind: %v", err)
	}
	if _, err := ReadSum(filepath.Join(t.TempDir(), "none"), sum); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
