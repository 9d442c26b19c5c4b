package checkpoint

import (
	"encoding/binary"
	"fmt"

	"github.com/vkamp/vkamp/tensor"
)

// NonFinite counts the NaNs and the infinities among the elements of data,
// elements of dtype dt stored little-endian as a file holds them. Int32
// elements have neither.
func NonFinite(dt tensor.DType, data []byte) (nan, inf int) {
	count := func(exp, frac uint32, x uint32) {
		if x&exp == exp {
			if x&frac != 0 {
				nan++
			} else {
				inf++
			}
		}
	}
	switch dt {
	case tensor.Float32:
		for i := 0; i+4 <= len(data); i += 4 {
			count(0x7f800000, 0x007fffff, binary.LittleEndian.Uint32(data[i:]))
		}
	case tensor.Float16:
		for i := 0; i+2 <= len(data); i += 2 {
			count(0x7c00, 0x03ff, uint32(binary.LittleEndian.Uint16(data[i:])))
		}
	case tensor.BFloat16:
		for i := 0; i+2 <= len(data); i += 2 {
			count(0x7f80, 0x007f, uint32(binary.LittleEndian.Uint16(data[i:])))
		}
	}
	return nan, inf
}

// NonFiniteError is the error of a save (SaveOptions.Finite) or a load
// (File.CheckFinite) refused because tensors hold NaN or inf. It names the
// first such tensor.
type NonFiniteError struct {
	Op          string // "save" or "load"
	Path        string
	Name        string // the first tensor, in the order given, holding NaN or inf
	NaN, Inf    int    // its NaNs and infinities
	Len         int    // its elements
	Tensors, Of int    // how many tensors hold NaN or inf, of how many
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("checkpoint: %s %s: %q holds %d NaN and %d inf of its %d values (%d of %d tensors hold NaN or inf): refused",
		e.Op, e.Path, e.Name, e.NaN, e.Inf, e.Len, e.Tensors, e.Of)
}

// CheckFinite returns a *NonFiniteError naming the first tensor of f, in
// the file's order, that holds a NaN or an infinity, or nil.
func (f *File) CheckFinite() error {
	var refused *NonFiniteError
	for _, name := range f.order {
		h := f.Tensors[name]
		nan, inf := NonFinite(h.DType, h.Data)
		if nan+inf == 0 {
			continue
		}
		if refused == nil {
			elems := len(h.Data) / h.DType.Size()
			refused = &NonFiniteError{Op: "load", Path: f.path, Name: name, NaN: nan, Inf: inf, Len: elems, Of: len(f.order)}
		}
		refused.Tensors++
	}
	if refused != nil {
		return refused
	}
	return nil
}

// NegativeError is the error of a load (File.CheckNonNegative) refused
// because a tensor that holds squares, an optimizer's second moments, has
// negative values: their square roots would be NaN at the next step.
type NegativeError struct {
	Path, Name string
	Negative   int // its negative values (-0 is not one)
	Len        int // its elements
}

func (e *NegativeError) Error() string {
	return fmt.Sprintf("checkpoint: load %s: %q holds %d negative values of its %d, where it holds squares: refused",
		e.Path, e.Name, e.Negative, e.Len)
}

// CheckNonNegative returns a *NegativeError naming the first of the named
// float tensors of f that holds a value below zero, or nil. Names f does
// not hold are skipped (File.Check reports those).
func (f *File) CheckNonNegative(names []string) error {
	for _, name := range names {
		h, ok := f.Tensors[name]
		if !ok {
			continue
		}
		neg, size := 0, h.DType.Size()
		for i := 0; i+size <= len(h.Data); i += size {
			switch h.DType {
			case tensor.Float32:
				x := binary.LittleEndian.Uint32(h.Data[i:])
				if x&0x80000000 != 0 && x&0x7fffffff != 0 {
					neg++
				}
			case tensor.Float16, tensor.BFloat16:
				x := binary.LittleEndian.Uint16(h.Data[i:])
				if x&0x8000 != 0 && x&0x7fff != 0 {
					neg++
				}
			}
		}
		if neg > 0 {
			return &NegativeError{Path: f.path, Name: name, Negative: neg, Len: len(h.Data) / size}
		}
	}
	return nil
}
