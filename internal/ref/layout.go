package ref

import (
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// The references of the layout ops: plain index arithmetic over row-major
// slices of any element type, so that tests compare bits.

// Strides returns the row-major strides of shape, in elements.
func Strides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// unravel returns the index of flat element e of shape.
func unravel(e int, shape []int) []int {
	idx := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = e % shape[k]
		e /= shape[k]
	}
	return idx
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// Permute returns x (of shape) with axis i of the result being axis perm[i]
// of x (non-negative axes), and the result's shape.
func Permute[T any](x []T, shape, perm []int) ([]T, []int) {
	out := make([]int, len(perm))
	for i, a := range perm {
		out[i] = shape[a]
	}
	st := Strides(shape)
	y := make([]T, len(x))
	for e := range y {
		idx, off := unravel(e, out), 0
		for i, a := range perm {
			off += idx[i] * st[a]
		}
		y[e] = x[off]
	}
	return y, out
}

// Narrow returns elements [start, start+length) of x along axis.
func Narrow[T any](x []T, shape []int, axis, start, length int) []T {
	out := append([]int(nil), shape...)
	out[axis] = length
	st := Strides(shape)
	y := make([]T, numel(out))
	for e := range y {
		idx, off := unravel(e, out), start*st[axis]
		for k := range idx {
			off += idx[k] * st[k]
		}
		y[e] = x[off]
	}
	return y
}

// Concat joins xs of the given shapes along axis.
func Concat[T any](axis int, xs [][]T, shapes [][]int) []T {
	outer, inner := 1, 1
	for _, s := range shapes[0][:axis] {
		outer *= s
	}
	for _, s := range shapes[0][axis+1:] {
		inner *= s
	}
	var y []T
	for o := range outer {
		for i, x := range xs {
			n := shapes[i][axis] * inner
			y = append(y, x[o*n:(o+1)*n]...)
		}
	}
	return y
}

// Gather is torch.gather: the result has idxShape, and element idx is x at
// the same index but idx's value along axis, or nan where that value is
// outside [0, shape[axis]).
func Gather[T any](x []T, shape []int, axis int, idx []int32, idxShape []int, nan T) []T {
	st := Strides(shape)
	y := make([]T, len(idx))
	for e := range y {
		j := int(idx[e])
		if j < 0 || j >= shape[axis] {
			y[e] = nan
			continue
		}
		at, off := unravel(e, idxShape), 0
		at[axis] = j
		for k := range at {
			off += at[k] * st[k]
		}
		y[e] = x[off]
	}
	return y
}

// SoftmaxAxis returns the softmax of x over axis, rounded to fp32, and its
// log-softmax with the scale of each result for Check (as LogSoftmax).
func SoftmaxAxis(x []float32, shape []int, axis int) (soft, logSoft, logScale []float64) {
	outer, k, inner := Split(shape, axis)
	soft, logSoft, logScale = make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
	row := make([]float32, k)
	for o := range outer {
		for i := range inner {
			at := func(j int) int { return (o*k+j)*inner + i }
			for j := range k {
				row[j] = x[at(j)]
			}
			m, s := rowMaxSum(row)
			for j := range k {
				d := float64(row[j]) - m
				soft[at(j)] = Round(math.Exp(d)/s, tensor.Float32)
				logSoft[at(j)] = Round(d-math.Log(s), tensor.Float32)
				logScale[at(j)] = math.Abs(d) + math.Log(s) + 1
			}
		}
	}
	return soft, logSoft, logScale
}

// SoftmaxBackward returns, over axis, y*(dy - sum(dy*y)) (log false) or
// dy - exp(y)*sum(dy) (log true), and the scale of each result's error for
// Check: the magnitudes of the terms it adds.
func SoftmaxBackward(y, dy []float32, shape []int, axis int, log bool) (dx, scale []float64) {
	outer, k, inner := Split(shape, axis)
	dx, scale = make([]float64, len(y)), make([]float64, len(y))
	for o := range outer {
		for i := range inner {
			at := func(j int) int { return (o*k+j)*inner + i }
			var s, abs float64
			for j := range k {
				g, v := float64(dy[at(j)]), float64(y[at(j)])
				if log {
					s, abs = s+g, abs+math.Abs(g)
				} else {
					s, abs = s+g*v, abs+math.Abs(g*v)
				}
			}
			for j := range k {
				g, v := float64(dy[at(j)]), float64(y[at(j)])
				if log {
					dx[at(j)] = g - math.Exp(v)*s
					scale[at(j)] = math.Abs(g) + math.Exp(v)*abs
				} else {
					dx[at(j)] = v * (g - s)
					scale[at(j)] = math.Abs(v) * (math.Abs(g) + abs)
				}
			}
		}
	}
	return dx, scale
}

// GatherBackward is the gradient of Gather with respect to x of xShape: dy
// (idx's shape) summed into the elements it was gathered from, and the sum
// of magnitudes of each, for Check.
func GatherBackward(dy []float32, idx []int32, idxShape, xShape []int, axis int) (dx, scale []float64) {
	st := Strides(xShape)
	dx, scale = make([]float64, numel(xShape)), make([]float64, numel(xShape))
	for e, j := range idx {
		if j < 0 || int(j) >= xShape[axis] {
			continue
		}
		at, off := unravel(e, idxShape), 0
		at[axis] = int(j)
		for k := range at {
			off += at[k] * st[k]
		}
		dx[off] += float64(dy[e])
		scale[off] += math.Abs(float64(dy[e]))
	}
	return dx, scale
}
