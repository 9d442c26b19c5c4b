package checkpoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/vkamp/vkamp/tensor"
)

// MaxHeader is the largest JSON header Read accepts, as the reference
// implementation does: it bounds what a corrupt length makes Read allocate.
const MaxHeader = 100 << 20

const metaKey = "__metadata__"

var (
	dtypeName = map[tensor.DType]string{tensor.Float32: "F32", tensor.Float16: "F16", tensor.BFloat16: "BF16", tensor.Int32: "I32"}
	nameDType = map[string]tensor.DType{"F32": tensor.Float32, "F16": tensor.Float16, "BF16": tensor.BFloat16, "I32": tensor.Int32}
)

// entry is one tensor in a header; its data are the size bytes at begin.
type entry struct {
	name  string
	dtype tensor.DType
	shape []int
	begin int64
	size  int64
}

// encodeHeader returns the length-prefixed header for entries laid out back
// to back in order, padded with spaces to a multiple of 8 bytes.
func encodeHeader(entries []entry, meta map[string]string) []byte {
	var b bytes.Buffer
	b.Write(make([]byte, 8)) // the length, filled in below
	b.WriteByte('{')
	if len(meta) > 0 {
		m, _ := json.Marshal(meta) // a map[string]string always marshals
		b.WriteString(`"` + metaKey + `":`)
		b.Write(m)
	}
	var off int64
	for i, e := range entries {
		if i > 0 || len(meta) > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(e.name)
		b.Write(name)
		fmt.Fprintf(&b, `:{"dtype":"%s","shape":[`, dtypeName[e.dtype])
		for j, s := range e.shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(s))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, off, off+e.size)
		off += e.size
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	out := b.Bytes()
	binary.LittleEndian.PutUint64(out, uint64(len(out)-8))
	return out
}

// parse reads and validates a safetensors file of size bytes.
func parse(r io.ReaderAt, size int64) (*File, error) {
	var lenBuf [8]byte
	if size < 8 {
		return nil, fmt.Errorf("file of %d bytes has no 8-byte header length", size)
	}
	if err := readAt(r, lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeader {
		return nil, fmt.Errorf("header length %d exceeds %d bytes (corrupt or not safetensors)", n, MaxHeader)
	}
	if n > uint64(size-8) {
		return nil, fmt.Errorf("header length %d exceeds the %d bytes after it (truncated)", n, size-8)
	}
	hdr := make([]byte, n)
	if err := readAt(r, hdr, 8); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	entries, meta, err := decodeHeader(hdr)
	if err != nil {
		return nil, err
	}
	bufLen := size - 8 - int64(n)
	if err := checkLayout(entries, bufLen); err != nil {
		return nil, err
	}
	// Allocated only now: the header has shown that the file holds it.
	data := make([]byte, bufLen)
	if err := readAt(r, data, 8+int64(n)); err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	f := &File{Tensors: make(map[string]HostTensor, len(entries)), Meta: meta}
	for _, e := range entries {
		f.order = append(f.order, e.name)
		end := e.begin + e.size
		f.Tensors[e.name] = HostTensor{DType: e.dtype, Shape: e.shape, Data: data[e.begin:end:end]}
	}
	return f, nil
}

// tensorInfo is a header entry as JSON; pointers tell missing from zero.
type tensorInfo struct {
	DType   *string  `json:"dtype"`
	Shape   *[]int64 `json:"shape"`
	Offsets *[]int64 `json:"data_offsets"`
}

// decodeHeader parses the JSON header token by token, since decoding into a
// map would silently keep the last of duplicate names.
func decodeHeader(hdr []byte) ([]entry, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("header is not a JSON object: %v", jsonErr(tok, err))
	}
	var entries []entry
	var meta map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("header JSON: %w", err)
		}
		name := tok.(string) // More and Token only yield string keys in an object
		if seen[name] {
			return nil, nil, fmt.Errorf("duplicate name %q in header", name)
		}
		seen[name] = true
		if name == metaKey {
			if err := dec.Decode(&meta); err != nil {
				return nil, nil, fmt.Errorf("%s must map strings to strings: %w", metaKey, err)
			}
			continue
		}
		var info tensorInfo
		if err := dec.Decode(&info); err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		e, err := info.entry(name)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", name, err)
		}
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, fmt.Errorf("header JSON: %w", err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("header has more after its JSON object: %v", jsonErr(tok, err))
	}
	return entries, meta, nil
}

func jsonErr(tok json.Token, err error) any {
	if err != nil {
		return err
	}
	return tok
}

// entry checks one header entry on its own.
func (info *tensorInfo) entry(name string) (entry, error) {
	if info.DType == nil || info.Shape == nil || info.Offsets == nil {
		return entry{}, errors.New(`want "dtype", "shape" and "data_offsets"`)
	}
	dt, ok := nameDType[*info.DType]
	if !ok {
		return entry{}, fmt.Errorf("dtype %q is not F32, F16 or BF16", *info.DType)
	}
	shape := make([]int, len(*info.Shape))
	elems := int64(1)
	for i, s := range *info.Shape {
		if s < 0 || int64(int(s)) != s {
			return entry{}, fmt.Errorf("shape %v has dimension %d", *info.Shape, s)
		}
		shape[i] = int(s)
	}
	if !slices.Contains(shape, 0) { // a zero anywhere makes it empty, whatever the rest
		for _, s := range shape {
			if int64(s) > math.MaxInt64/int64(dt.Size())/elems {
				return entry{}, fmt.Errorf("shape %v overflows", shape)
			}
			elems *= int64(s)
		}
	} else {
		elems = 0
	}
	off := *info.Offsets
	if len(off) != 2 {
		return entry{}, fmt.Errorf("data_offsets %v, want [begin, end]", off)
	}
	if off[0] < 0 || off[1] < off[0] {
		return entry{}, fmt.Errorf("data_offsets %v are not 0 <= begin <= end", off)
	}
	if size := elems * int64(dt.Size()); off[1]-off[0] != size {
		return entry{}, fmt.Errorf("data_offsets %v hold %d bytes, but %s%v needs %d", off, off[1]-off[0], dtypeName[dt], shape, size)
	}
	return entry{name: name, dtype: dt, shape: shape, begin: off[0], size: off[1] - off[0]}, nil
}

// checkLayout checks that the entries tile a buffer of bufLen bytes: within
// it, no overlap, no gap, nothing after the last.
func checkLayout(entries []entry, bufLen int64) error {
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.begin, b.begin), cmp.Compare(a.size, b.size))
	})
	var pos int64
	prev := "the start of the buffer"
	for _, e := range sorted {
		end := e.begin + e.size
		switch {
		case end > bufLen:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] beyond the %d-byte buffer (truncated)", e.name, e.begin, end, bufLen)
		case e.begin < pos:
			return fmt.Errorf("tensors %s and %q overlap at byte %d", prev, e.name, e.begin)
		case e.begin > pos:
			return fmt.Errorf("gap of %d bytes between %s and %q", e.begin-pos, prev, e.name)
		}
		pos = end
		prev = strconv.Quote(e.name)
	}
	if pos != bufLen {
		return fmt.Errorf("%d bytes after the last tensor's data", bufLen-pos)
	}
	return nil
}

// readAt fills p from off; io.EOF means the file shrank while being read.
func readAt(r io.ReaderAt, p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
