package ref

import (
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// References of the broadcasting ops, the math functions and the
// reductions over sets of axes, in float64.

// BroadcastIndex returns, for each element of a tensor of shape out in
// row-major order, the index of the element of a tensor of shape in (which
// broadcasts to out) that it reads.
func BroadcastIndex(in, out []int) []int {
	n := 1
	for _, s := range out {
		n *= s
	}
	idx := make([]int, n)
	for i := range idx {
		r, src, stride := i, 0, 1
		for j := len(out) - 1; j >= 0; j-- {
			k := r % out[j]
			r /= out[j]
			if jj := j - (len(out) - len(in)); jj >= 0 {
				if in[jj] != 1 {
					src += k * stride
				}
				stride *= in[jj]
			}
		}
		idx[i] = src
	}
	return idx
}

// Expand returns x, of shape in, broadcast to shape out.
func Expand(x []float32, in, out []int) []float32 {
	idx := BroadcastIndex(in, out)
	r := make([]float32, len(idx))
	for i, j := range idx {
		r[i] = x[j]
	}
	return r
}

// Broadcast2 returns f(a, b) with a and b broadcast to shape out, rounded
// to dt.
func Broadcast2(a []float32, as []int, b []float32, bs []int, out []int, dt tensor.DType, f func(a, b float64) float64) []float64 {
	return Map2(Expand(a, as, out), Expand(b, bs, out), dt, f)
}

// Div returns a / b.
func Div(a, b float64) float64 { return a / b }

// Rsqrt64 is 1/sqrt(x): -inf for -0, as PyTorch.
func Rsqrt64(x float64) float64 { return 1 / math.Sqrt(x) }

// Sigmoid64 is 1/(1 + e^-x).
func Sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// Pow64 is x^p as PyTorch's pow(tensor, scalar): exponents 0.5 and -0.5 go
// through sqrt (so (-inf)^0.5 is NaN and (-0)^-0.5 is -inf), others through
// C's pow.
func Pow64(x, p float64) float64 {
	switch p {
	case 0.5:
		return math.Sqrt(x)
	case -0.5:
		return Rsqrt64(x)
	}
	return math.Pow(x, p)
}

// Where returns a where cond is nonzero, else b, all broadcast to out.
func Where(cond []int32, cs []int, a []float32, as []int, b []float32, bs []int, out []int, dt tensor.DType) []float64 {
	ci, ai, bi := BroadcastIndex(cs, out), BroadcastIndex(as, out), BroadcastIndex(bs, out)
	r := make([]float64, len(ci))
	for i := range r {
		v := b[bi[i]]
		if cond[ci[i]] != 0 {
			v = a[ai[i]]
		}
		r[i] = Round(float64(v), dt)
	}
	return r
}

// ReduceAxes reduces x, of shape, over the axes flagged in red with f from
// init, returning the results in row-major order of the kept axes, with
// the number of elements each reduced.
func ReduceAxes(x []float32, shape []int, red []bool, init float64, f func(acc, v float64) float64) (r []float64, k int) {
	outShape := make([]int, len(shape))
	k = 1
	for i, s := range shape {
		outShape[i] = s
		if red[i] {
			outShape[i] = 1
			k *= s
		}
	}
	idx := BroadcastIndex(outShape, shape)
	r = make([]float64, len(x)/k)
	for i := range r {
		r[i] = init
	}
	for i, j := range idx {
		r[j] = f(r[j], float64(x[i]))
	}
	return r, k
}

// NaNMin is IEEE 754 minimum: NaN wins.
func NaNMin(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Min(a, b)
}

// NaNMax is IEEE 754 maximum: NaN wins.
func NaNMax(a, b float64) float64 { return nanMax(a, b) }
