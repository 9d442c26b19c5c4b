package mnist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// idx builds an IDX stream: the four magic bytes, big-endian dimensions,
// then body.
func idx(magic [4]byte, dims []uint32, body []byte) []byte {
	b := append([]byte(nil), magic[:]...)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, body...)
}

var (
	imgMagic = [4]byte{0, 0, 8, 3}
	lblMagic = [4]byte{0, 0, 8, 1}
)

// seq returns n bytes 0, 1, 2, ...
func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// errReader returns its data, then err.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

var errDisk = errors.New("disk on fire")

func TestReadImages(t *testing.T) {
	valid := idx(imgMagic, []uint32{2, 2, 3}, seq(12))
	cases := []struct {
		name string
		in   []byte
		want string // substring of the error; "" for success
	}{
		{"valid", valid, ""},
		{"no images", idx(imgMagic, []uint32{0, 28, 28}, nil), ""},
		{"empty", nil, "truncated header"},
		{"short magic", []byte{0, 0, 8}, "truncated header"},
		{"magic only", imgMagic[:], "truncated header"},
		{"two dims", idx(imgMagic, []uint32{2, 2}, nil), "truncated header"},
		{"byte-swapped", idx([4]byte{3, 8, 0, 0}, []uint32{2, 2, 3}, seq(12)), "wrong endianness"},
		{"swapped labels magic", idx([4]byte{1, 8, 0, 0}, []uint32{2}, nil), "wrong endianness"},
		{"labels file", idx(lblMagic, []uint32{2}, []byte{1, 2}), "1 dimensions, want 3"},
		{"float elements", idx([4]byte{0, 0, 0x0d, 3}, []uint32{1, 1, 1}, seq(4)), "element type 0x0d, want 0x08"},
		{"not idx", []byte("GIF89a......"), "not an IDX file"},
		{"gzip", []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0}, "not an IDX file"},
		{"zero rows", idx(imgMagic, []uint32{5, 0, 28}, nil), "image size 0x28 is empty"},
		{"zero cols", idx(imgMagic, []uint32{5, 28, 0}, nil), "image size 28x0 is empty"},
		{"absurd", idx(imgMagic, []uint32{1 << 31, 1 << 31, 1 << 31}, nil), "hold more than 2147483648 bytes"},
		{"wraps 64 bits", idx(imgMagic, []uint32{0xffffffff, 0xffffffff, 0xffffffff}, nil), "hold more than"},
		{"one over cap", idx(imgMagic, []uint32{1<<21 + 1, 32, 32}, nil), "hold more than"},
		{"at cap, truncated", idx(imgMagic, []uint32{1 << 21, 32, 32}, seq(5)), "truncated data: 5 of 2147483648 bytes"},
		{"truncated data", valid[:len(valid)-1], "truncated data: 11 of 12 bytes"},
		{"no data", idx(imgMagic, []uint32{2, 2, 3}, nil), "truncated data: 0 of 12 bytes"},
		{"trailing byte", append(slices.Clone(valid), 0), "trailing bytes"},
	}
	for i, c := range cases {
		n, rows, cols, px, err := ReadImages(bytes.NewReader(c.in))
		if c.want == "" {
			if err != nil {
				t.Errorf("%d %s: %v", i, c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "mnist: images: ") {
			t.Errorf("%d %s: error %v, want one containing %q", i, c.name, err, c.want)
		}
		if n != 0 || rows != 0 || cols != 0 || px != nil {
			t.Errorf("%d %s: got %d %d %d %d pixels with an error", i, c.name, n, rows, cols, len(px))
		}
	}

	n, rows, cols, px, err := ReadImages(bytes.NewReader(valid))
	if err != nil || n != 2 || rows != 2 || cols != 3 || !bytes.Equal(px, seq(12)) {
		t.Errorf("valid: got %d %d %d %v, %v", n, rows, cols, px, err)
	}
	if _, _, _, _, err := ReadImages(bytes.NewReader(nil)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("empty: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, _, _, _, err := ReadImages(&errReader{valid[:20], errDisk}); !errors.Is(err, errDisk) {
		t.Errorf("failing reader: %v, want %v", err, errDisk)
	}
	if _, _, _, _, err := ReadImages(&errReader{valid, errDisk}); !errors.Is(err, errDisk) {
		t.Errorf("reader failing at the end: %v, want %v", err, errDisk)
	}
}

func TestReadLabels(t *testing.T) {
	valid := idx(lblMagic, []uint32{4}, []byte{0, 9, 3, 7})
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"valid", valid, ""},
		{"none", idx(lblMagic, []uint32{0}, nil), ""},
		{"empty", nil, "truncated header"},
		{"no count", lblMagic[:], "truncated header"},
		{"short count", append(lblMagic[:], 0, 0), "truncated header"},
		{"byte-swapped", idx([4]byte{1, 8, 0, 0}, []uint32{4}, []byte{0, 9, 3, 7}), "wrong endianness"},
		{"images file", idx(imgMagic, []uint32{1, 1, 1}, []byte{1}), "3 dimensions, want 1"},
		{"int32 labels", idx([4]byte{0, 0, 0x0c, 1}, []uint32{1}, seq(4)), "element type 0x0c"},
		{"not idx", []byte("hello, world"), "not an IDX file"},
		{"label 10", idx(lblMagic, []uint32{3}, []byte{1, 2, 10}), "label 2 is 10, want 0 to 9"},
		{"label 255", idx(lblMagic, []uint32{1}, []byte{255}), "label 0 is 255"},
		{"absurd", idx(lblMagic, []uint32{0xffffffff}, nil), "hold more than"},
		{"truncated", valid[:len(valid)-2], "truncated data: 2 of 4 bytes"},
		{"trailing", append(slices.Clone(valid), 1, 2), "trailing bytes"},
	}
	for i, c := range cases {
		ls, err := ReadLabels(bytes.NewReader(c.in))
		if c.want == "" {
			if err != nil {
				t.Errorf("%d %s: %v", i, c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "mnist: labels: ") {
			t.Errorf("%d %s: error %v, want one containing %q", i, c.name, err, c.want)
		}
		if ls != nil {
			t.Errorf("%d %s: got labels %v with an error", i, c.name, ls)
		}
	}
	if ls, err := ReadLabels(bytes.NewReader(valid)); err != nil || !bytes.Equal(ls, []byte{0, 9, 3, 7}) {
		t.Errorf("valid: %v, %v", ls, err)
	}
}

// TestHugeHeaderAllocatesLittle checks that memory follows the bytes read,
// not the size a header claims.
func TestHugeHeaderAllocatesLittle(t *testing.T) {
	in := idx(imgMagic, []uint32{1 << 21, 32, 32}, seq(100)) // claims 2 GiB
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, _, _, err := ReadImages(bytes.NewReader(in)); err == nil {
		t.Fatal("no error for a truncated 2 GiB file")
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("allocated %d bytes for a %d-byte input", got, len(in))
	}
}
