package tensor_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// lyDTypes are every dtype: layout ops copy bits.
var lyDTypes = []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16, tensor.Int32}

// lyInput uploads a tensor of dt and shape with random contents and returns
// it with its elements' bits.
func lyInput(t *testing.T, d *vk.Device, dt tensor.DType, seed uint64, shape ...int) (*tensor.Tensor, []uint32) {
	t.Helper()
	var x *tensor.Tensor
	if dt == tensor.Int32 {
		r := rand.New(rand.NewPCG(seed, 3))
		v := make([]int32, opShapeLen(shape))
		for i := range v {
			v[i] = int32(r.Uint32())
		}
		x = castKeep(t, tensor.FromInt32(d, v, shape...))
	} else {
		x, _ = opRand(t, d, seed, 1000, dt, shape...)
	}
	return x, lyBits(t, x)
}

// lyBits reads x's elements as bit patterns.
func lyBits(t *testing.T, x *tensor.Tensor) []uint32 {
	t.Helper()
	raw, err := x.Bytes()
	require.NoError(t, err)
	size := x.DType().Size()
	b := make([]uint32, x.Len())
	for i := range b {
		if size == 4 {
			b[i] = binary.LittleEndian.Uint32(raw[4*i:])
		} else {
			b[i] = uint32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
	}
	return b
}

// lyWant checks y's dtype, shape and bits.
func lyWant(t *testing.T, what string, y *tensor.Tensor, dt tensor.DType, shape []int, want []uint32) {
	t.Helper()
	castKeep(t, y)
	require.Equal(t, dt, y.DType(), what)
	require.Equal(t, shape, y.Shape(), what)
	require.Equal(t, want, lyBits(t, y), what)
}

// lyPerms returns every permutation of [0, n).
func lyPerms(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range lyPerms(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// TestPermute permutes every dtype with every permutation of small shapes
// of odd sizes, and 6-D and 8-D shapes, bit for bit; Transpose too.
func TestPermute(t *testing.T) {
	d := devtest.Open(t)
	for _, dt := range lyDTypes {
		for si, shape := range [][]int{{7}, {3, 5}, {2, 3, 5}, {3, 1, 4, 5}} {
			x, xb := lyInput(t, d, dt, uint64(si), shape...)
			for _, p := range lyPerms(len(shape)) {
				want, ws := ref.Permute(xb, shape, p)
				neg := append([]int{}, p...)
				neg[0] -= len(shape) // a negative axis counts from the end
				lyWant(t, fmt.Sprintf("Permute(%s%v, %v)", dt, shape, neg), tensor.Permute(x, neg...), dt, ws, want)
			}
			if len(shape) >= 2 {
				p := make([]int, len(shape))
				for i := range p {
					p[i] = i
				}
				p[0], p[len(p)-1] = p[len(p)-1], p[0]
				want, ws := ref.Permute(xb, shape, p)
				lyWant(t, fmt.Sprintf("Transpose(%s%v, 0, -1)", dt, shape), tensor.Transpose(x, 0, -1), dt, ws, want)
			}
		}
		for si, c := range []struct{ shape, perm []int }{
			{[]int{2, 3, 1, 2, 3, 5}, []int{5, 3, 0, 4, 2, 1}},
			{[]int{2, 1, 3, 2, 1, 2, 3, 3}, []int{7, 6, 5, 4, 3, 2, 1, 0}},
			{[]int{3, 4, 5, 33}, []int{0, 2, 1, 3}},
		} {
			x, xb := lyInput(t, d, dt, uint64(10+si), c.shape...)
			want, ws := ref.Permute(xb, c.shape, c.perm)
			lyWant(t, fmt.Sprintf("Permute(%s%v, %v)", dt, c.shape, c.perm), tensor.Permute(x, c.perm...), dt, ws, want)
		}
	}
}

// TestNarrow slices every axis of every dtype at odd offsets.
func TestNarrow(t *testing.T) {
	d := devtest.Open(t)
	shape := []int{3, 5, 7}
	for _, dt := range lyDTypes {
		x, xb := lyInput(t, d, dt, 1, shape...)
		for axis := range shape {
			for _, c := range [][2]int{{0, 1}, {1, shape[axis] - 1}, {shape[axis] / 2, 1}, {0, shape[axis]}} {
				ws := append([]int{}, shape...)
				ws[axis] = c[1]
				want := ref.Narrow(xb, shape, axis, c[0], c[1])
				what := fmt.Sprintf("Narrow(%s%v, %d, %d, %d)", dt, shape, axis, c[0], c[1])
				lyWant(t, what, tensor.Narrow(x, axis, c[0], c[1]), dt, ws, want)
			}
		}
		want := ref.Narrow(xb, shape, 2, 5, 2)
		lyWant(t, "Narrow negative", tensor.Narrow(x, -1, -2, 2), dt, []int{3, 5, 2}, want)
	}
}

// TestConcatStack joins tensors of odd lengths (so 16-bit slabs straddle
// words) along every axis, and stacks them at every position.
func TestConcatStack(t *testing.T) {
	d := devtest.Open(t)
	for _, dt := range lyDTypes {
		base := []int{3, 5, 3}
		for axis := range base {
			var xs []*tensor.Tensor
			var bits [][]uint32
			var shapes [][]int
			out := append([]int{}, base...)
			out[axis] = 0
			for i, k := range []int{1, 3, 2} {
				s := append([]int{}, base...)
				s[axis] = k
				x, xb := lyInput(t, d, dt, uint64(10*axis+i), s...)
				xs, bits, shapes = append(xs, x), append(bits, xb), append(shapes, s)
				out[axis] += k
			}
			want := ref.Concat(axis, bits, shapes)
			lyWant(t, fmt.Sprintf("Concat(%d, %s%v)", axis, dt, shapes), tensor.Concat(axis-len(base), xs...), dt, out, want)
		}
		var xs []*tensor.Tensor
		var bits [][]uint32
		for i := range 3 {
			x, xb := lyInput(t, d, dt, uint64(40+i), 5, 3)
			xs, bits = append(xs, x), append(bits, xb)
		}
		for axis := 0; axis <= 2; axis++ {
			shapes := [][]int{{5, 3}, {5, 3}, {5, 3}}
			for i := range shapes {
				shapes[i] = append(append(append([]int{}, shapes[i][:axis]...), 1), shapes[i][axis:]...)
			}
			out := append([]int{}, shapes[0]...)
			out[axis] = 3
			want := ref.Concat(axis, bits, shapes)
			lyWant(t, fmt.Sprintf("Stack(%d, %s)", axis, dt), tensor.Stack(axis, xs...), dt, out, want)
		}
		lyWant(t, "Concat of one", tensor.Concat(0, xs[0]), dt, []int{5, 3}, bits[0])
	}
}

// TestGather gathers along every axis with repeated indices, and idx
// shorter than x outside the axis (out-of-range indices: TestBadIndexGather).
func TestGather(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(5, 6))
	shape := []int{3, 4, 5}
	nan := map[tensor.DType]uint32{tensor.Float32: 0x7FC00000, tensor.Float16: 0x7E00, tensor.BFloat16: 0x7FC0}
	for _, dt := range opDTypes {
		x, xb := lyInput(t, d, dt, 2, shape...)
		for axis := range shape {
			is := []int{2, 3, 4}
			is[axis] = 7
			idx := make([]int32, opShapeLen(is))
			for i := range idx {
				idx[i] = int32(rng.IntN(shape[axis]))
			}
			ix := castKeep(t, tensor.FromInt32(d, idx, is...))
			want := ref.Gather(xb, shape, axis, idx, is, nan[dt])
			lyWant(t, fmt.Sprintf("Gather(%s%v, %d)", dt, shape, axis), tensor.Gather(x, axis-3, ix), dt, is, want)
			dy, dyv := opRand(t, d, uint64(axis), 2, dt, is...)
			dx, scale := ref.GatherBackward(dyv, idx, is, shape, axis)
			what := fmt.Sprintf("GatherBackward(%s%v, %d)", dt, is, axis)
			opRun([]opCheck{opWant(t, what, tensor.GatherBackward(dy, ix, axis, shape...), tensor.Float32, shape, dx, scale, ref.Tol(tensor.Float32, 8))})
		}
	}
}

// TestLayoutMisuse checks the typed panics, each naming the op and shapes.
func TestLayoutMisuse(t *testing.T) {
	d := devtest.Open(t)
	x, _ := opRand(t, d, 1, 1, tensor.Float16, 2, 3)
	y, _ := opRand(t, d, 2, 1, tensor.Float32, 2, 3)
	z, _ := opRand(t, d, 3, 1, tensor.Float16, 3, 3)
	ix := castKeep(t, tensor.FromInt32(d, []int32{0, 1}, 2, 1))
	ix1 := castKeep(t, tensor.FromInt32(d, []int32{0, 1}, 2))
	big := castKeep(t, tensor.FromInt32(d, []int32{0, 0, 0, 0, 0, 0, 0, 0}, 2, 4))
	ints := castKeep(t, tensor.FromInt32(d, []int32{0, 1, 2, 3, 4, 5}, 2, 3))
	nine := castKeep(t, tensor.Zeros(d, tensor.Float32, 1, 1, 1, 1, 1, 1, 1, 1, 1))
	opPanics[*tensor.UsageError](t, "short perm", func() { tensor.Permute(x, 0) }, "Permute", "[0]", "[2 3]")
	opPanics[*tensor.UsageError](t, "repeated perm", func() { tensor.Permute(x, 1, -1) }, "Permute", "twice")
	opPanics[*tensor.UsageError](t, "perm range", func() { tensor.Permute(x, 0, 2) }, "Permute", "axis 2")
	opPanics[*tensor.UsageError](t, "rank 9", func() { tensor.Permute(nine, 0, 1, 2, 3, 4, 5, 6, 7, 8) }, "Permute", "8 dimensions")
	opPanics[*tensor.UsageError](t, "transpose axis", func() { tensor.Transpose(x, 0, 2) }, "Transpose", "axis 2")
	opPanics[*tensor.UsageError](t, "narrow range", func() { tensor.Narrow(x, 1, 2, 2) }, "Narrow", "start 2, length 2", "[2 3]")
	opPanics[*tensor.UsageError](t, "narrow empty", func() { tensor.Narrow(x, 1, 0, 0) }, "Narrow", "length 0")
	opPanics[*tensor.UsageError](t, "concat none", func() { tensor.Concat(0) }, "Concat", "no tensors")
	opPanics[*tensor.DTypeError](t, "concat dtypes", func() { tensor.Concat(0, x, y) }, "Concat", "float32", "float16")
	opPanics[*tensor.ShapeError](t, "concat shapes", func() { tensor.Concat(1, x, z) }, "Concat", "[2 3]", "[3 3]")
	opPanics[*tensor.UsageError](t, "concat axis", func() { tensor.Concat(2, x, x) }, "Concat", "axis 2")
	opPanics[*tensor.ShapeError](t, "stack shapes", func() { tensor.Stack(0, x, z) }, "Stack", "[2 3]", "[3 3]")
	opPanics[*tensor.UsageError](t, "stack axis", func() { tensor.Stack(3, x, x) }, "Stack", "axis 3")
	opPanics[*tensor.DTypeError](t, "gather int x", func() { tensor.Gather(ints, 0, ix) }, "Gather", "int32")
	opPanics[*tensor.DTypeError](t, "gather float idx", func() { tensor.Gather(x, 0, y) }, "Gather", "float32")
	opPanics[*tensor.ShapeError](t, "gather rank", func() { tensor.Gather(x, 0, ix1) }, "Gather", "[2 3]", "[2]")
	opPanics[*tensor.ShapeError](t, "gather long", func() { tensor.Gather(x, 0, big) }, "Gather", "[2 3]", "[2 4]")
	opPanics[*tensor.ShapeError](t, "gather backward dy", func() { tensor.GatherBackward(y, ix, 0, 2, 3) }, "GatherBackward", "[2 3]", "[2 1]")
	opPanics[*tensor.DTypeError](t, "gather backward idx", func() { tensor.GatherBackward(y, y, 0, 2, 3) }, "GatherBackward", "float32")
	opPanics[*tensor.UsageError](t, "gather backward axis", func() { tensor.GatherBackward(x, ints, 2, 2, 3) }, "GatherBackward", "axis 2")
	r := castKeep(t, tensor.Zeros(d, tensor.Float32, 2, 3))
	r.Release()
	opPanics[*tensor.UsageError](t, "released", func() { tensor.Permute(r, 1, 0) }, "Permute", "released")
}
