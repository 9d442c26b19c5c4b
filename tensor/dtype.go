package tensor

import (
	"fmt"
	"math"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
)

// DType is the element type of a tensor, a code that travels unchanged down
// to the kernels, which switch on it (shaders/include/dtype.glsl):
//
//   - Float32: IEEE 754 binary32.
//   - Float16: IEEE 754 binary16 (5 exponent bits, 11-bit significand).
//   - BFloat16: bfloat16, the top half of a binary32 (8 exponent bits,
//     8-bit significand): fp32's range at lower precision.
//   - Int32: two's complement 32-bit integers, for indices and class
//     labels; arithmetic ops refuse them.
//
// 16-bit elements are stored two per 32-bit word, low half first, and a
// tensor's storage is rounded up to whole words.
type DType uint8

// The dtypes.
const (
	Float32  DType = iota // IEEE 754 binary32
	Float16               // IEEE 754 binary16
	BFloat16              // bfloat16: the top half of a binary32
	Int32                 // two's complement 32-bit integer
)

var dtypeNames = [...]string{"float32", "float16", "bfloat16", "int32"}

// codes are the dtypes as the kernels take them, indexed by DType.
var codes = [...]kernels.DType{kernels.DTypeF32, kernels.DTypeF16, kernels.DTypeBF16, kernels.DTypeI32}

// wantFloating is the DTypeError.Want of floating ops.
const wantFloating = "float32, float16 or bfloat16"

// code is the dtype as the kernels take it. Ops check their dtypes first; an
// unknown one here is a bug in package tensor.
func (d DType) code() kernels.DType {
	if !d.valid() {
		panic(fmt.Sprintf("tensor: no kernel code for %s", d))
	}
	return codes[d]
}

func (d DType) String() string {
	if d.valid() {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", d)
}

// Size is the number of bytes of one element (0 for an unknown dtype).
func (d DType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Float16, BFloat16:
		return 2
	}
	return 0
}

// bytes is the storage of n elements. 16-bit storage is rounded up to whole
// 32-bit words: on the packed tier kernels write halves in pairs.
func (d DType) bytes(n int) int64 {
	return (int64(n)*int64(d.Size()) + 3) &^ 3
}

// valid reports whether d is one of the four dtypes.
func (d DType) valid() bool { return d <= Int32 }

// floating reports whether d is a floating dtype, which every arithmetic op
// takes.
func (d DType) floating() bool { return d <= BFloat16 }

// wide reports whether an element of d fills a 32-bit word.
func (d DType) wide() bool { return d == Float32 || d == Int32 }

// Widest returns the dtype an op with floating inputs of dtypes ds computes
// in, by PyTorch's promotion: Float32 if any is Float32, or if Float16 and
// BFloat16 meet (neither holds the other: fp16 has the precision, bf16 the
// range); otherwise the one 16-bit dtype given. It panics with a
// *DTypeError for Int32 or an unknown dtype (integers are not promoted), and
// with a *UsageError when ds is empty.
func Widest(ds ...DType) DType {
	if len(ds) == 0 {
		usagePanic("Widest", "no dtypes")
	}
	w := ds[0]
	for _, d := range ds {
		if !d.floating() {
			panic(&DTypeError{Op: "Widest", Got: d, Want: wantFloating})
		}
		if d != w {
			w = Float32
		}
	}
	return w
}

// checkFloating panics with a *DTypeError naming op unless the output dtype
// out and every input's dtype are floating.
func checkFloating(op string, out DType, in ...*Tensor) {
	for _, t := range in {
		if !t.dtype.floating() {
			panic(&DTypeError{Op: op, Got: t.dtype, Want: wantFloating + " input"})
		}
	}
	if !out.floating() {
		panic(&DTypeError{Op: op, Got: out, Want: wantFloating + " output"})
	}
}

// Host conversions, for uploads, downloads and fills. They match the
// kernels' integer code bit for bit.

// Encode16 rounds each value of src to dt, Float16 or BFloat16, into dst
// as Cast rounds on the device (to nearest even, the same bits): what
// Tensor.Write16s uploads. It panics with a *DTypeError for other dtypes
// and a *UsageError unless dst and src have the same length.
func Encode16(dt DType, dst []uint16, src []float32) {
	if len(dst) != len(src) {
		usagePanic("Encode16", "%d values into %d", len(src), len(dst))
	}
	switch dt {
	case Float16:
		for i, v := range src {
			dst[i] = f16bits(v)
		}
	case BFloat16:
		for i, v := range src {
			dst[i] = bf16bits(v)
		}
	default:
		panic(&DTypeError{Op: "Encode16", Got: dt, Want: "float16 or bfloat16"})
	}
}

func f16bits(v float32) uint16 { return float16.Fromfloat32(v).Bits() }

// bf16bits rounds v to bfloat16 bits, to nearest even; NaN keeps its sign
// and top payload bits and is quieted.
func bf16bits(v float32) uint16 {
	x := math.Float32bits(v)
	if x&0x7FFFFFFF > 0x7F800000 {
		return uint16(x>>16 | 0x0040)
	}
	return uint16((x + 0x7FFF + (x>>16)&1) >> 16)
}

// bf16value widens bfloat16 bits to float32, exactly.
func bf16value(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// toInt32 converts v as Cast does: toward zero, saturating, NaN giving 0.
func toInt32(v float32) int32 {
	switch {
	case v != v:
		return 0
	case v >= math.MaxInt32:
		return math.MaxInt32
	case v <= math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}
