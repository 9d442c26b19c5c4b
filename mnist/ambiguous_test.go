package mnist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSet writes a set of n images of rows×cols pixels and their labels
// to dir under the names images and labels.
func writeSet(t *testing.T, dir, images, labels string, n, rows, cols int) {
	t.Helper()
	write(t, dir, images, idx(imgMagic, []uint32{uint32(n), uint32(rows), uint32(cols)}, seq(n*rows*cols)))
	write(t, dir, labels, idx(lblMagic, []uint32{uint32(n)}, make([]byte, n)))
}

// TestLoadImageSizesDiffer checks that a test set whose images are not the
// size of the training set's is refused, naming both sizes.
func TestLoadImageSizesDiffer(t *testing.T) {
	dir := t.TempDir()
	writeSet(t, dir, TrainImages, TrainLabels, 3, 28, 28)
	writeSet(t, dir, TestImages, TestLabels, 2, 14, 56)
	train, test, err := Load(dir)
	if err == nil {
		t.Fatalf("train %dx%d and test %dx%d images loaded without error", train.Rows, train.Cols, test.Rows, test.Cols)
	}
	for _, want := range []string{"mnist: ", "28x28", "14x56", TestImages} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if train != nil || test != nil {
		t.Error("sets returned with an error")
	}
}

// TestLoadPlainAndGzip checks that a directory holding one file both plain
// and gzipped is refused, naming both paths, whichever file it is.
func TestLoadPlainAndGzip(t *testing.T) {
	for _, name := range []string{TrainImages, TrainLabels, TestImages, TestLabels} {
		dir := t.TempDir()
		writeSet(t, dir, TrainImages, TrainLabels, 3, 2, 2)
		writeSet(t, dir, TestImages, TestLabels, 2, 2, 2)
		// The .gz copy holds the same bytes: even identical files are
		// refused, since which one was meant cannot be known.
		plain, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, name+".gz", gz(t, plain))
		train, test, err := Load(dir)
		if err == nil {
			t.Errorf("%s and %s.gz: loaded without error", name, name)
			continue
		}
		for _, want := range []string{"mnist: ", filepath.Join(dir, name) + " and ", filepath.Join(dir, name+".gz")} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", name, err, want)
			}
		}
		if train != nil || test != nil {
			t.Errorf("%s: sets returned with an error", name)
		}
	}
}
