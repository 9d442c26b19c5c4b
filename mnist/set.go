package mnist

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// The standard file names; Load also accepts each with ".gz" appended.
const (
	TrainImages = "train-images-idx3-ubyte"
	TrainLabels = "train-labels-idx1-ubyte"
	TestImages  = "t10k-images-idx3-ubyte"
	TestLabels  = "t10k-labels-idx1-ubyte"
)

// Set is a set of labelled digits in host memory.
type Set struct {
	// Images holds N*Rows*Cols pixels, row-major, image after image, scaled
	// from 0..255 to [0, 1].
	Images []float32
	// Labels holds the N digits, 0 to 9.
	Labels []uint8
	// N is the number of digits, Rows×Cols the size of each image.
	N, Rows, Cols int
}

// Load reads the training and test sets from dir, which holds the four
// standard files, each as NAME or NAME.gz (gzip is recognised by its
// content, so either name works for either form). A file present under both
// names is an error, as are test images of another size than the training
// images.
func Load(dir string) (train, test *Set, err error) {
	var trainPath, testPath string
	if train, trainPath, err = loadSet(dir, "train", TrainImages, TrainLabels); err != nil {
		return nil, nil, err
	}
	if test, testPath, err = loadSet(dir, "test", TestImages, TestLabels); err != nil {
		return nil, nil, err
	}
	if test.Rows != train.Rows || test.Cols != train.Cols {
		return nil, nil, fmt.Errorf("mnist: test images in %s are %dx%d pixels, training images in %s are %dx%d: both sets must have one size",
			testPath, test.Rows, test.Cols, trainPath, train.Rows, train.Cols)
	}
	return train, test, nil
}

// loadSet reads one set and returns it with the path of its images.
func loadSet(dir, what, images, labels string) (*Set, string, error) {
	var n, rows, cols int
	var pixels []byte
	var imagePath string
	err := readFile(dir, images, func(r io.Reader, path string) (err error) {
		imagePath = path
		n, rows, cols, pixels, err = readImages(r, path)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	var ls []uint8
	err = readFile(dir, labels, func(r io.Reader, path string) (err error) {
		ls, err = readLabels(r, path)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(ls) != n {
		return nil, "", fmt.Errorf("mnist: %s set in %s: %d images but %d labels", what, dir, n, len(ls))
	}
	s := &Set{Images: make([]float32, len(pixels)), Labels: ls, N: n, Rows: rows, Cols: cols}
	for i, p := range pixels {
		s.Images[i] = float32(p) / 255
	}
	return s, imagePath, nil
}

// readFile opens dir/name or dir/name.gz and passes its decompressed
// content and its path to read. Both present is an error: which one was
// meant cannot be known, and they may differ.
func readFile(dir, name string, read func(r io.Reader, path string) error) error {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err == nil {
		switch _, gzErr := os.Stat(path + ".gz"); {
		case gzErr == nil:
			f.Close()
			return fmt.Errorf("mnist: both %s and %s.gz exist: keep one of them", path, path)
		case !errors.Is(gzErr, fs.ErrNotExist):
			f.Close()
			return fmt.Errorf("mnist: %w", gzErr)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		path += ".gz"
		f, err = os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("mnist: neither %s nor %s.gz in %s: %w", name, name, dir, fs.ErrNotExist)
		}
	}
	if err != nil {
		return fmt.Errorf("mnist: %w", err) // *PathError names the file
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	// An IDX file starts with two zero bytes, gzip with 1f 8b.
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("mnist: %s: decompress: %w", path, err)
		}
		r = unzipper{zr}
	}
	return read(r, path)
}

// Batch fills x with the pixels and y with the labels, as int32 class
// indices (what the losses take, through tensor.FromInt32), of digits i*size to i*size+size-1: batch i of the s.N/size full
// batches, in file order. x must hold size*Rows*Cols values and y size.
// Batch panics if the batch is not wholly in s or a buffer has the wrong
// length.
func (s *Set) Batch(i, size int, x []float32, y []int32) {
	if size < 1 || i < 0 || i >= s.N/size {
		panic(fmt.Sprintf("mnist: Batch(%d, %d) of a set of %d digits", i, size, s.N))
	}
	px := s.Rows * s.Cols
	if len(x) != size*px || len(y) != size {
		panic(fmt.Sprintf("mnist: Batch of %d: x holds %d values, want %d; y holds %d, want %d", size, len(x), size*px, len(y), size))
	}
	first := i * size
	copy(x, s.Images[first*px:(first+size)*px])
	for j, l := range s.Labels[first : first+size] {
		y[j] = int32(l)
	}
}

// Subset returns the first n digits of s, or all of them when s has fewer.
// It shares memory with s. Subset panics if n is negative.
func (s *Set) Subset(n int) *Set {
	if n < 0 {
		panic(fmt.Sprintf("mnist: Subset(%d)", n))
	}
	n = min(n, s.N)
	px := s.Rows * s.Cols
	// Full slice expressions, so appending to the subset cannot overwrite s.
	return &Set{Images: s.Images[: n*px : n*px], Labels: s.Labels[:n:n], N: n, Rows: s.Rows, Cols: s.Cols}
}

// unzipper marks errors from a gzip stream as such: a truncated stream
// otherwise reads as a bare "unexpected EOF".
type unzipper struct{ r io.Reader }

func (u unzipper) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("decompress: %w", err)
	}
	return n, err
}
