package mnist

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const testdata = "../testdata/mnist"

// What the files in testdata hold (counted independently of this package).
var (
	trainFirst = []uint8{0, 7, 3, 3, 5, 3, 4, 7, 2, 5}
	testFirst  = []uint8{0, 0, 3, 2, 1, 4, 5, 0, 5, 4}
	trainCount = [10]int{790, 888, 816, 814, 784, 680, 813, 837, 775, 803}
	testCount  = [10]int{211, 239, 175, 218, 196, 183, 201, 233, 169, 175}
)

func TestLoadTestdata(t *testing.T) {
	train, test, err := Load(testdata)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		s      *Set
		n      int
		first  []uint8
		count  [10]int
		sum784 float64 // sum of the first image's raw pixels
	}{
		{"train", train, 8000, trainFirst, trainCount, 40547},
		{"test", test, 2000, testFirst, testCount, 50284},
	} {
		s := c.s
		if s.N != c.n || s.Rows != 28 || s.Cols != 28 || len(s.Labels) != c.n || len(s.Images) != c.n*28*28 {
			t.Fatalf("%s: N %d, %dx%d, %d labels, %d pixels", c.name, s.N, s.Rows, s.Cols, len(s.Labels), len(s.Images))
		}
		if !slices.Equal(s.Labels[:10], c.first) {
			t.Errorf("%s: first labels %v, want %v", c.name, s.Labels[:10], c.first)
		}
		var count [10]int
		for _, l := range s.Labels {
			count[l]++
		}
		if count != c.count {
			t.Errorf("%s: label counts %v, want %v", c.name, count, c.count)
		}
		lo, hi := slices.Min(s.Images), slices.Max(s.Images)
		if lo != 0 || hi != 1 {
			t.Errorf("%s: pixels in [%v, %v], want [0, 1]", c.name, lo, hi)
		}
		var sum float64
		for _, p := range s.Images[:784] {
			sum += float64(p) * 255
		}
		if sum < c.sum784-0.5 || sum > c.sum784+0.5 {
			t.Errorf("%s: first image sums to %v, want %v", c.name, sum, c.sum784)
		}
	}
}

// gunzip returns the decompressed content of a testdata file.
func gunzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(testdata, name+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func write(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadForms loads the testdata uncompressed, mixed, and with gzip
// content under a plain name, and checks each gives the same sets.
func TestLoadForms(t *testing.T) {
	want, wantTest, err := Load(testdata)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{TrainImages, TrainLabels, TestImages, TestLabels}
	raw := map[string][]byte{}
	for _, n := range names {
		raw[n] = gunzip(t, n)
	}
	forms := map[string]func(i int, n string) (string, []byte){
		"plain": func(_ int, n string) (string, []byte) { return n, raw[n] },
		"mixed": func(i int, n string) (string, []byte) {
			if i%2 == 0 {
				return n, raw[n]
			}
			return n + ".gz", gz(t, raw[n])
		},
		"gzip unnamed": func(_ int, n string) (string, []byte) { return n, gz(t, raw[n]) },
		"plain as .gz": func(_ int, n string) (string, []byte) { return n + ".gz", raw[n] },
	}
	for form, f := range forms {
		dir := t.TempDir()
		for i, n := range names {
			name, b := f(i, n)
			write(t, dir, name, b)
		}
		train, test, err := Load(dir)
		if err != nil {
			t.Errorf("%s: %v", form, err)
			continue
		}
		if !slices.Equal(train.Images, want.Images) || !slices.Equal(train.Labels, want.Labels) ||
			!slices.Equal(test.Images, wantTest.Images) || !slices.Equal(test.Labels, wantTest.Labels) {
			t.Errorf("%s: sets differ from the testdata's", form)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	img := idx(imgMagic, []uint32{3, 2, 2}, seq(12))
	lbl := idx(lblMagic, []uint32{3}, []byte{1, 2, 3})
	good := gz(t, img)
	flip := func(b []byte, i int) []byte {
		b = slices.Clone(b)
		b[(i+len(b))%len(b)] ^= 0xff
		return b
	}
	cases := []struct {
		name           string
		trainImages    []byte // gzipped unless named raw
		trainLabels    []byte
		raw            bool
		want           string
		wantNotExist   bool
		skipTrainFiles bool
	}{
		{name: "missing", skipTrainFiles: true, want: "neither train-images-idx3-ubyte nor train-images-idx3-ubyte.gz", wantNotExist: true},
		{name: "labels truncated", trainImages: good, trainLabels: gz(t, lbl[:len(lbl)-1]), want: "truncated data: 2 of 3 bytes"},
		{name: "fewer labels", trainImages: good, trainLabels: gz(t, idx(lblMagic, []uint32{2}, []byte{1, 2})), want: "train set in"},
		{name: "crc", trainImages: flip(good, -8), trainLabels: gz(t, lbl), want: "decompress: gzip: invalid checksum"},
		{name: "size", trainImages: flip(good, -1), trainLabels: gz(t, lbl), want: "decompress: gzip: invalid checksum"},
		{name: "deflate", trainImages: flip(good, 12), trainLabels: gz(t, lbl), want: "train-images-idx3-ubyte.gz"},
		{name: "gzip truncated", trainImages: good[:len(good)-4], trainLabels: gz(t, lbl), want: "decompress: unexpected EOF"},
		{name: "gzip header", trainImages: []byte{0x1f, 0x8b, 1}, trainLabels: gz(t, lbl), want: "decompress: unexpected EOF"},
		{name: "gzip garbage after", trainImages: append(slices.Clone(good), bytes.Repeat([]byte{1}, 16)...), trainLabels: gz(t, lbl), want: "gzip: invalid header"},
		{name: "raw trailing", trainImages: append(slices.Clone(img), 0), trainLabels: lbl, raw: true, want: "trailing bytes"},
		{name: "bad label", trainImages: img, trainLabels: idx(lblMagic, []uint32{3}, []byte{1, 2, 42}), raw: true, want: "train-labels-idx1-ubyte: label 2 is 42"},
	}
	for i, c := range cases {
		dir := t.TempDir()
		// A valid test set, so any error comes from the training files.
		write(t, dir, TestImages, img)
		write(t, dir, TestLabels+".gz", gz(t, lbl))
		if !c.skipTrainFiles {
			ext := ".gz"
			if c.raw {
				ext = ""
			}
			write(t, dir, TrainImages+ext, c.trainImages)
			write(t, dir, TrainLabels+ext, c.trainLabels)
		}
		train, test, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "mnist: ") {
			t.Errorf("%d %s: error %v, want one containing %q", i, c.name, err, c.want)
		}
		if c.wantNotExist != errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%d %s: errors.Is(%v, fs.ErrNotExist) = %v", i, c.name, err, !c.wantNotExist)
		}
		if train != nil || test != nil {
			t.Errorf("%d %s: sets returned with an error", i, c.name)
		}
	}
}

func TestBatch(t *testing.T) {
	train, _, err := Load(testdata)
	if err != nil {
		t.Fatal(err)
	}
	const size = 3
	x := make([]float32, size*784)
	y := make([]int32, size)
	train.Batch(2, size, x, y)
	if !slices.Equal(x, train.Images[6*784:9*784]) {
		t.Error("batch 2 holds the wrong images")
	}
	if want := []int32{4, 7, 2}; !slices.Equal(y, want) {
		t.Errorf("batch 2 labels %v, want %v", y, want)
	}
	last := train.N/size - 1
	train.Batch(last, size, x, y) // the last full batch
	for i, c := range []struct {
		i, size int
		x       []float32
		y       []int32
	}{
		{last + 1, size, x, y},
		{-1, size, x, y},
		{0, 0, x[:0], y[:0]},
		{0, train.N + 1, x, y},
		{0, size, x[1:], y},
		{0, size, x, y[1:]},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%d: Batch(%d, %d, %d, %d) did not panic", i, c.i, c.size, len(c.x), len(c.y))
				}
			}()
			train.Batch(c.i, c.size, c.x, c.y)
		}()
	}
}

func TestSubset(t *testing.T) {
	_, test, err := Load(testdata)
	if err != nil {
		t.Fatal(err)
	}
	s := test.Subset(10)
	if s.N != 10 || s.Rows != 28 || s.Cols != 28 || len(s.Images) != 7840 || !slices.Equal(s.Labels, testFirst) {
		t.Fatalf("Subset(10): N %d, %dx%d, %d pixels, labels %v", s.N, s.Rows, s.Cols, len(s.Images), s.Labels)
	}
	if &s.Images[0] != &test.Images[0] {
		t.Error("Subset copied the images; it should share them")
	}
	_ = append(s.Labels, 9) // must not write into test
	if test.Labels[10] != 5 {
		t.Error("appending to a subset wrote into its parent")
	}
	if all := test.Subset(1 << 20); all.N != test.N || len(all.Images) != len(test.Images) {
		t.Errorf("Subset beyond N: N %d", all.N)
	}
	if empty := test.Subset(0); empty.N != 0 || len(empty.Images) != 0 || len(empty.Labels) != 0 {
		t.Errorf("Subset(0): %+v", empty)
	}
	defer func() {
		if recover() == nil {
			t.Error("Subset(-1) did not panic")
		}
	}()
	test.Subset(-1)
}
