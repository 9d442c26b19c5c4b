package tensor_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// pool2x2Shapes take pooling's two-by-two texel forms (kernel 2, stride 2,
// rows of whole blocks of 8, even heights): the MNIST example's conv2
// output (24x24, here with fewer planes), rows of one block (a 3-D input),
// rows of two and of five blocks.
var pool2x2Shapes = [][]int{{2, 3, 24, 24}, {5, 2, 8}, {1, 5, 6, 16}, {2, 2, 10, 40}}

// pool2x2Input is x with the values that take pooling's special paths: NaN
// (a window's maximum, ending its scan; some signalling), infinities,
// windows of -inf only, -0 and +0, subnormals of each dtype and ties.
func pool2x2Input(n int, seed uint64) []float32 {
	v := ref.Rand(n, seed)
	for i := range v {
		v[i] *= 4
		switch {
		case i%11 == 3:
			v[i] = float32(math.NaN())
		case i%13 == 5:
			v[i] = float32(math.Inf(1))
		case i%17 == 2:
			v[i] = float32(math.Inf(-1))
		case i%19 == 7:
			v[i] = float32(math.Copysign(0, -1))
		case i%23 == 1:
			v[i] = 1e-40 // subnormal in fp32 and bf16
		case i%23 == 12:
			v[i] = -3e-6 // subnormal in fp16
		case i%37 == 4:
			v[i] = math.Float32frombits(0x7FA00000) // signalling (pool2x2Upload keeps it so)
		case i%31 == 9:
			v[i] = 0 // +0, which ties with -0
		case i%29 == 0 && i > 0:
			v[i] = v[i-1] // a tie within a window's row
		}
	}
	return v
}

// TestPool2x2Texels checks that max and average pooling and their backward
// passes give the same bits, argmaxes included, with the two-by-two texel
// forms (on a device that has them) as with the general kernels, in every
// dtype, on inputs with every special value. In average pooling a NaN
// matches any NaN: an average over inf and -inf makes one, whose sign the
// CPU picks by the order the compiler gave the operands (x86 keeps the
// first NaN).
func TestPool2x2Texels(t *testing.T) {
	d := devtest.Open(t)
	k := [2]int{2, 2}
	type pair struct {
		what       string
		tex, plain *tensor.Tensor
		avg        bool // NaN matches NaN
	}
	var pairs []pair
	for si, xs := range pool2x2Shapes {
		n := 1
		for _, s := range xs {
			n *= s
		}
		ys := append(append([]int{}, xs[:len(xs)-2]...), xs[len(xs)-2]/2, xs[len(xs)-1]/2)
		for _, dt := range opDTypes {
			v := pool2x2Input(n, uint64(si+1))
			for i := range 8 { // the first four windows are -inf only
				v[i], v[xs[len(xs)-1]+i] = float32(math.Inf(-1)), float32(math.Inf(-1))
			}
			x := pool2x2Upload(t, d, v, dt, xs)
			dyv := ref.Rand(n/4, uint64(si+50))
			// NaN (one signalling) and -0 gradients
			dyv[1], dyv[2], dyv[3] = float32(math.NaN()), float32(math.Copysign(0, -1)), math.Float32frombits(0x7FA00000)
			dy := pool2x2Upload(t, d, dyv, dt, ys)
			ops := func() []*tensor.Tensor {
				y, arg := tensor.MaxPool2d(x, k, [2]int{}, [2]int{})
				return []*tensor.Tensor{y, arg, tensor.MaxPool2dBackward(dy, arg, xs, k, [2]int{}, [2]int{}),
					tensor.AvgPool2d(x, k, [2]int{}, [2]int{}), tensor.AvgPool2dBackward(dy, xs, k, [2]int{}, [2]int{})}
			}
			tex := ops()
			var plain []*tensor.Tensor
			tensor.WithoutPool2x2(func() { plain = ops() })
			for i, name := range []string{"MaxPool2d", "argmax", "MaxPool2dBackward", "AvgPool2d", "AvgPool2dBackward"} {
				t.Cleanup(tex[i].Release)
				t.Cleanup(plain[i].Release)
				pairs = append(pairs, pair{fmt.Sprintf("%s %s%v", name, dt, xs), tex[i], plain[i], i >= 3})
			}
		}
	}
	for _, p := range pairs {
		got, want := pool2x2Bits(t, p.tex), pool2x2Bits(t, p.plain)
		for i := range got {
			if got[i] != want[i] && !(p.avg && pool2x2NaN(p.tex.DType(), got[i]) && pool2x2NaN(p.tex.DType(), want[i])) {
				t.Errorf("%s: element %d is %#x with texels, %#x without", p.what, i, got[i], want[i])
				break
			}
		}
	}
}

// pool2x2Upload is opInput's x, but for a 16-bit dtype it keeps signalling
// NaNs signalling, as the host's conversions do not.
func pool2x2Upload(t *testing.T, d *vk.Device, v []float32, dt tensor.DType, shape []int) *tensor.Tensor {
	t.Helper()
	if dt != tensor.Float16 && dt != tensor.BFloat16 {
		x, _ := opInput(t, d, v, dt, shape...)
		return x
	}
	bits := make([]uint16, len(v))
	for i, f := range v {
		switch {
		case math.Float32bits(f) == 0x7FA00000 && dt == tensor.Float16:
			bits[i] = 0x7D00 // its payload, quiet bit clear
		case math.Float32bits(f) == 0x7FA00000:
			bits[i] = 0x7FA0
		default:
			bits[i] = ref.Bits16(f, dt)
		}
	}
	var x *tensor.Tensor
	if dt == tensor.Float16 {
		x = tensor.FromFloat16(d, float16s(bits), shape...)
	} else {
		x = tensor.FromBFloat16(d, bits, shape...)
	}
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Release)
	return x
}

// pool2x2Bits returns x's elements as bits: 16-bit ones as stored, so that
// a NaN left signalling shows, and int32 argmaxes as they are.
func pool2x2Bits(t *testing.T, x *tensor.Tensor) []uint32 {
	t.Helper()
	if dt := x.DType(); dt == tensor.Float16 || dt == tensor.BFloat16 {
		raw, err := x.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]uint32, x.Len())
		for i := range out {
			out[i] = uint32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
		return out
	}
	if x.DType() != tensor.Int32 {
		return opBits(opRead(t, x))
	}
	v, err := x.Int32s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(v))
	for i, e := range v {
		out[i] = uint32(e)
	}
	return out
}

// pool2x2NaN reports whether b, bits as pool2x2Bits gives them, are a NaN
// of dtype dt.
func pool2x2NaN(dt tensor.DType, b uint32) bool {
	switch dt {
	case tensor.Float16:
		return b&0x7FFF > 0x7C00
	case tensor.BFloat16:
		return b&0x7FFF > 0x7F80
	}
	return b&0x7FFFFFFF > 0x7F800000
}
