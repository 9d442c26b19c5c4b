package mnist

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the seed corpus under testdata/fuzz")

func FuzzReadImages(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		n, rows, cols, px, err := ReadImages(bytes.NewReader(in))
		if err != nil {
			return
		}
		if rows < 1 || cols < 1 || len(px) != n*rows*cols || len(in) != 16+len(px) {
			t.Fatalf("%d images of %dx%d, %d pixels from %d bytes", n, rows, cols, len(px), len(in))
		}
	})
}

func FuzzReadLabels(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		ls, err := ReadLabels(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(in) != 8+len(ls) {
			t.Fatalf("%d labels from %d bytes", len(ls), len(in))
		}
		for i, l := range ls {
			if l > 9 {
				t.Fatalf("label %d is %d", i, l)
			}
		}
	})
}

// seeds is the committed corpus: valid tiny files and a few near misses.
func seeds() map[string][]byte {
	return map[string][]byte{
		"FuzzReadImages/valid":       idx(imgMagic, []uint32{2, 2, 3}, seq(12)),
		"FuzzReadImages/empty_set":   idx(imgMagic, []uint32{0, 28, 28}, nil),
		"FuzzReadImages/swapped":     idx([4]byte{3, 8, 0, 0}, []uint32{1, 1, 1}, []byte{7}),
		"FuzzReadImages/truncated":   idx(imgMagic, []uint32{2, 2, 3}, seq(7)),
		"FuzzReadImages/huge":        idx(imgMagic, []uint32{1 << 21, 32, 32}, seq(3)),
		"FuzzReadLabels/valid":       idx(lblMagic, []uint32{4}, []byte{0, 9, 3, 7}),
		"FuzzReadLabels/bad_label":   idx(lblMagic, []uint32{2}, []byte{1, 10}),
		"FuzzReadLabels/images_file": idx(imgMagic, []uint32{1, 1, 1}, []byte{1}),
	}
}

// TestSeedCorpus checks the committed seeds, or rewrites them with -update.
func TestSeedCorpus(t *testing.T) {
	for name, in := range seeds() {
		path := filepath.Join("testdata", "fuzz", name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is missing or stale (%v): run go test -run TestSeedCorpus -update", path, err)
		}
	}
}
