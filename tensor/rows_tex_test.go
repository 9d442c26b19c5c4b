package tensor_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// rowTexShapes are rows of every length class the row kernels' texel forms
// split differently: shorter than a block of 8, odd, not a multiple of 8
// (rows starting inside a block), multiples of 8, the longest row with one
// invocation per row on a CPU driver (4096) and a vocabulary's long rows.
var rowTexShapes = [][]int{{1, 1}, {5, 1}, {3, 3}, {9, 7}, {4, 12}, {7, 13}, {6, 20}, {5, 33}, {3, 64},
	{2, 1000}, {5, 1027}, {3, 4096}, {2, 50257}}

// rowTexOps are the row ops whose kernels have texel forms, from x and a
// second input dy of x's shape (the backward passes).
var rowTexOps = []struct {
	name string
	f    func(x, dy *tensor.Tensor) *tensor.Tensor
}{
	{"Softmax", func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.Softmax(x) }},
	{"LogSoftmax", func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.LogSoftmax(x) }},
	{"SoftmaxBackward", func(x, dy *tensor.Tensor) *tensor.Tensor { return tensor.SoftmaxBackward(x, dy, -1) }},
	{"LogSoftmaxBackward", func(x, dy *tensor.Tensor) *tensor.Tensor { return tensor.LogSoftmaxBackward(x, dy, -1) }},
	{"SumAxis", func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.SumAxis(x, -1) }},
	{"MeanAxis", func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.MeanAxis(x, -1) }},
	{"MaxAxis", func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.MaxAxis(x, -1) }},
	{"MinAxes", func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.MinAxes(x, []int{-1}, false) }},
	{"Sum", func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.Sum(x) }},
	{"SumSquares", func(x, _ *tensor.Tensor) *tensor.Tensor { return tensor.SumSquares(x) }},
}

// TestRowTexels checks that the row kernels give the same bits with their
// texel forms (where the device has them) as without, over rows of every
// length class (but the softmax family's rows past 4096, which the
// storage-buffer forms sum with a tree, in another order), in every input dtype, with NaN and infinities
// in some rows; and, on rows without those, softmax, log-softmax, their
// backward passes and the row sum against the float64 reference.
func TestRowTexels(t *testing.T) {
	d := devtest.Open(t)
	type pair struct {
		what     string
		tex, buf *tensor.Tensor
	}
	var pairs []pair
	var checks []opCheck
	for _, dt := range opDTypes {
		for si, shape := range rowTexShapes {
			rows, cols := shape[0], shape[1]
			v := ref.Rand(rows*cols, uint64(si+1))
			for i := range v {
				v[i] *= 6
			}
			if rows >= 5 { // specials in rows 1 to 3, the others finite
				v[cols+cols/2] = float32(math.NaN())
				v[2*cols+cols-1] = float32(math.Inf(1))
				v[3*cols] = float32(math.Inf(-1))
			}
			x, xv := opInput(t, d, v, dt, shape...)
			dy, dyv := opRand(t, d, uint64(si+100), 1, dt, shape...)
			for _, op := range rowTexOps {
				if cols > 4096 && strings.Contains(op.name, "Softmax") {
					continue
				}
				what := fmt.Sprintf("%s %s%v", op.name, dt, shape)
				tex := op.f(x, dy)
				var buf *tensor.Tensor
				tensor.WithoutRowTexels(func() { buf = op.f(x, dy) })
				t.Cleanup(tex.Release)
				t.Cleanup(buf.Release)
				pairs = append(pairs, pair{what, tex, buf})
			}
			if rows < 5 {
				soft, logSoft, logScale := ref.SoftmaxAxis(xv, shape, 1)
				tol := ref.Tol(tensor.Float32, cols+ref.ExpRoundings)
				what := fmt.Sprintf("%s%v", dt, shape)
				y, yv := opInput(t, d, f32s(soft), dt, shape...)
				ly, lyv := opInput(t, d, f32s(logSoft), dt, shape...)
				dx, sc := ref.SoftmaxBackward(yv, dyv, shape, 1, false)
				ldx, lsc := ref.SoftmaxBackward(lyv, dyv, shape, 1, true)
				checks = append(checks,
					opWant(t, what+" Softmax", tensor.Softmax(x), tensor.Float32, shape, soft, nil, tol),
					opWant(t, what+" LogSoftmax", tensor.LogSoftmax(x), tensor.Float32, shape, logSoft, logScale, tol),
					opWant(t, what+" SoftmaxBackward", tensor.SoftmaxBackward(y, dy, 1), tensor.Float32, shape, dx, sc, tol),
					opWant(t, what+" LogSoftmaxBackward", tensor.LogSoftmaxBackward(ly, dy, 1), tensor.Float32, shape, ldx, lsc, tol))
				sum, scale := make([]float64, rows), make([]float64, rows)
				for r := range rows {
					for _, e := range xv[r*cols : (r+1)*cols] {
						sum[r] += float64(e)
						scale[r] += math.Abs(float64(e))
					}
				}
				checks = append(checks, opWant(t, what+" SumAxis", tensor.SumAxis(x, 1), tensor.Float32, shape[:1], sum, scale, ref.Tol(tensor.Float32, cols)))
			}
		}
	}
	for _, p := range pairs {
		sameBits(t, p.what, p.tex, p.buf)
	}
	opRun(checks)
}

// sameBits fails t if the texel form's result tex and the storage form's buf
// differ in any bit.
func sameBits(t *testing.T, what string, tex, buf *tensor.Tensor) {
	t.Helper()
	got, want := opBits(opRead(t, tex)), opBits(opRead(t, buf))
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: element %d is %#x with texels, %#x without", what, i, got[i], want[i])
			return
		}
	}
}

// TestSoftmaxTexelsFirstNaN checks that the softmax texel forms take a
// row's first NaN as its max, as nan_max in order does, where their max
// skips NaN and sweeps a row again for it: rows with +inf before two NaNs
// of different payloads (inf - inf would make a third) give the same bits
// with texels as without. Other ops may keep another of several payloads.
func TestSoftmaxTexelsFirstNaN(t *testing.T) {
	d := devtest.Open(t)
	for _, dt := range opDTypes {
		for _, cols := range []int{5, 20, 1027} {
			v := ref.Rand(2*cols, 7)
			v[1] = float32(math.Inf(1))
			v[cols/2] = float32(math.NaN())
			v[cols-1] = math.Float32frombits(0x7FE12345) // a top payload bit kept by fp16 and bf16 too
			x, _ := opInput(t, d, v, dt, 2, cols)
			for _, op := range rowTexOps[:2] { // Softmax, LogSoftmax
				tex := op.f(x, nil)
				var buf *tensor.Tensor
				tensor.WithoutRowTexels(func() { buf = op.f(x, nil) })
				t.Cleanup(tex.Release)
				t.Cleanup(buf.Release)
				sameBits(t, fmt.Sprintf("%s %s[2 %d]", op.name, dt, cols), tex, buf)
			}
		}
	}
}

// TestColsTexels checks that the reductions over a middle axis give the
// same bits with their texel form (on a device that has it: rows of whole
// blocks of 8) as without, for each input dtype and a 16-bit output, with
// NaN and infinities among the values, over fewer rows than the texel form
// fetches ahead (16 for sums, 4 for max and min), exactly 16, and more,
// with each remainder's extremes.
func TestColsTexels(t *testing.T) {
	d := devtest.Open(t)
	ops := []struct {
		name string
		f    func(x *tensor.Tensor) *tensor.Tensor
	}{
		{"SumAxis", func(x *tensor.Tensor) *tensor.Tensor { return tensor.SumAxis(x, 1) }},
		{"MeanAxis", func(x *tensor.Tensor) *tensor.Tensor { return tensor.MeanAxis(x, 1) }},
		{"MaxAxis", func(x *tensor.Tensor) *tensor.Tensor { return tensor.MaxAxis(x, 1) }},
		{"MinAxes", func(x *tensor.Tensor) *tensor.Tensor { return tensor.MinAxes(x, []int{1}, false) }},
		{"SumAxisAs fp16", func(x *tensor.Tensor) *tensor.Tensor { return tensor.SumAxisAs(x, 1, tensor.Float16) }},
	}
	for _, dt := range opDTypes {
		for si, shape := range [][]int{{1, 5, 8}, {2, 6, 8}, {3, 33, 16}, {2, 31, 8}, {2, 1, 24}, {3, 7, 1000}, {1, 16, 2048}} {
			v := ref.Rand(opShapeLen(shape), uint64(si+1))
			v[3], v[len(v)/2], v[len(v)-1] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
			x, _ := opInput(t, d, v, dt, shape...)
			for _, op := range ops {
				tex := op.f(x)
				var plain *tensor.Tensor
				tensor.WithoutRowTexels(func() { plain = op.f(x) })
				got, want := opBits(opRead(t, tex)), opBits(opRead(t, plain))
				tex.Release()
				plain.Release()
				for i := range got {
					if got[i] != want[i] {
						t.Errorf("%s %s%v: element %d is %#x with texels, %#x without", op.name, dt, shape, i, got[i], want[i])
						break
					}
				}
			}
		}
	}
}
