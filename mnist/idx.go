package mnist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxBytes is the most data an IDX header may claim. It bounds what a
// corrupt header can make the reader attempt; the full MNIST training images
// are 47 MB.
const MaxBytes = 1 << 31

const (
	typeUbyte  = 0x08 // the only IDX element type MNIST uses
	imageMagic = 0x00000803
	labelMagic = 0x00000801
)

// ReadImages decodes an IDX3 stream of unsigned bytes: n images of rows×cols
// pixels, row-major, image after image, 0 the background and 255 the ink.
// It reads r to the end; bytes after the data are an error.
func ReadImages(r io.Reader) (n, rows, cols int, pixels []byte, err error) {
	return readImages(r, "images")
}

// ReadLabels decodes an IDX1 stream of unsigned bytes, each a digit 0 to 9.
// It reads r to the end; bytes after the data are an error.
func ReadLabels(r io.Reader) ([]uint8, error) { return readLabels(r, "labels") }

// readImages is ReadImages naming the stream what in its errors.
func readImages(r io.Reader, what string) (n, rows, cols int, pixels []byte, err error) {
	dims, err := readHeader(r, what, imageMagic)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	n, rows, cols = int(dims[0]), int(dims[1]), int(dims[2])
	if rows == 0 || cols == 0 {
		return 0, 0, 0, nil, fmt.Errorf("mnist: %s: image size %dx%d is empty", what, rows, cols)
	}
	pixels, err = readBody(r, what, dims)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return n, rows, cols, pixels, nil
}

// readLabels is ReadLabels naming the stream what in its errors.
func readLabels(r io.Reader, what string) ([]uint8, error) {
	dims, err := readHeader(r, what, labelMagic)
	if err != nil {
		return nil, err
	}
	labels, err := readBody(r, what, dims)
	if err != nil {
		return nil, err
	}
	for i, l := range labels {
		if l > 9 {
			return nil, fmt.Errorf("mnist: %s: label %d is %d, want 0 to 9", what, i, l)
		}
	}
	return labels, nil
}

// readHeader reads the magic number and the dimensions, checking that their
// product fits in MaxBytes.
func readHeader(r io.Reader, what string, magic uint32) ([]uint32, error) {
	var m [4]byte
	if _, err := io.ReadFull(r, m[:]); err != nil {
		return nil, fmt.Errorf("mnist: %s: truncated header: %w", what, eof(err))
	}
	got := binary.BigEndian.Uint32(m[:])
	ndim := int(magic & 0xff)
	switch {
	case got == magic:
	case m[0] == 0 && m[1] == 0 && m[2] != typeUbyte:
		return nil, fmt.Errorf("mnist: %s: element type 0x%02x, want 0x%02x (unsigned byte)", what, m[2], typeUbyte)
	case m[0] == 0 && m[1] == 0:
		return nil, fmt.Errorf("mnist: %s: %d dimensions, want %d", what, m[3], ndim)
	case m[2] == 0 && m[3] == 0:
		// An IDX magic read in the wrong byte order: someone wrote it
		// little-endian.
		return nil, fmt.Errorf("mnist: %s: magic 0x%08x is byte-swapped: wrong endianness (IDX is big-endian)", what, got)
	default:
		return nil, fmt.Errorf("mnist: %s: magic 0x%08x, want 0x%08x: not an IDX file", what, got, magic)
	}
	raw := make([]byte, 4*ndim)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("mnist: %s: truncated header: %w", what, eof(err))
	}
	dims := make([]uint32, ndim)
	total := uint64(1)
	for i := range dims {
		dims[i] = binary.BigEndian.Uint32(raw[4*i:])
		// Checked before multiplying, so three 32-bit sizes cannot wrap.
		if d := uint64(dims[i]); d != 0 && total > MaxBytes/d {
			return nil, fmt.Errorf("mnist: %s: dimensions %v hold more than %d bytes", what, dims[:i+1], uint64(MaxBytes))
		}
		total *= uint64(dims[i])
	}
	return dims, nil
}

// readBody reads the product of dims bytes and checks that r ends there.
// It grows the buffer as data arrive rather than trusting the header.
func readBody(r io.Reader, what string, dims []uint32) ([]byte, error) {
	size := int64(1)
	for _, d := range dims {
		size *= int64(d)
	}
	var buf bytes.Buffer
	buf.Grow(int(min(size, 1<<16)))
	if _, err := buf.ReadFrom(io.LimitReader(r, size)); err != nil {
		return nil, fmt.Errorf("mnist: %s: %w", what, err)
	}
	if int64(buf.Len()) < size {
		return nil, fmt.Errorf("mnist: %s: truncated data: %d of %d bytes for dimensions %v", what, buf.Len(), size, dims)
	}
	var extra [1]byte
	switch n, err := io.ReadFull(r, extra[:]); {
	case n > 0:
		return nil, fmt.Errorf("mnist: %s: trailing bytes after the %d bytes for dimensions %v", what, size, dims)
	case err != io.EOF:
		return nil, fmt.Errorf("mnist: %s: after data: %w", what, err)
	}
	return buf.Bytes(), nil
}

// eof turns a clean EOF inside a header into io.ErrUnexpectedEOF: either way
// the header is cut short.
func eof(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
