package tensor

import (
	"fmt"
	"math"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
)

// DType is the element type of a tensor.
type DType uint8

const (
	Float32  DType = iota // IEEE 754 binary32
	Float16               // IEEE 754 binary16
	BFloat16              // reserved: no kernel supports it yet
)

var dtypeNames = [...]string{"float32", "float16", "bfloat16"}

// code is the dtype as the kernels take it (shaders/include/dtype.glsl).
func (d DType) code() kernels.DType {
	switch d {
	case Float16:
		return kernels.DTypeF16
	case BFloat16:
		return kernels.DTypeBF16
	}
	return kernels.DTypeF32
}

func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", d)
}

// Size is the number of bytes of one element.
func (d DType) Size() int {
	if d == Float32 {
		return 4
	}
	return 2
}

// bytes is the storage of n elements. fp16 storage is rounded up to whole
// 32-bit words: the packed tier writes halves in pairs.
func (d DType) bytes(n int) int64 {
	return (int64(n)*int64(d.Size()) + 3) &^ 3
}

// Widest returns the widest of the dtypes, as ops with several floating
// inputs compute in.
func Widest(ds ...DType) DType {
	w := Float16
	for _, d := range ds {
		if d == Float32 {
			return Float32
		}
	}
	return w
}

func (d DType) supported() bool { return d == Float32 || d == Float16 }

func f32bits(v float32) uint32 { return math.Float32bits(v) }

func f16bits(v float32) uint16 { return float16.Fromfloat32(v).Bits() }
