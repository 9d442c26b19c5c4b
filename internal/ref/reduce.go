package ref

import (
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// Reduction references: float64 accumulation, rounded once to fp32 as the
// device returns them. The Abs variants give the scale for Check: a sum's
// error is bounded by its length times the sum of magnitudes, not by |sum|.

// Sum returns the sum of x and the sum of |x|.
func Sum(x []float32) (sum, abs float64) {
	for _, v := range x {
		sum += float64(v)
		abs += math.Abs(float64(v))
	}
	return Round(sum, tensor.Float32), abs
}

// SumSquares returns the sum of x[i]^2.
func SumSquares(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return Round(s, tensor.Float32)
}

// Max returns the largest element of x, NaN if there is one.
func Max(x []float32) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = nanMax(m, float64(v))
	}
	return m
}

// nanMax is IEEE 754 maximum: NaN wins, where math.Max lets +inf win.
func nanMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

// Split returns the sizes of x viewed as [outer, shape[axis], inner].
func Split(shape []int, axis int) (outer, k, inner int) {
	outer, k, inner = 1, shape[axis], 1
	for _, s := range shape[:axis] {
		outer *= s
	}
	for _, s := range shape[axis+1:] {
		inner *= s
	}
	return outer, k, inner
}

// SumAxis returns the sums of x (of the given shape) over axis, and the sums
// of magnitudes, in row-major order of the remaining axes.
func SumAxis(x []float32, shape []int, axis int) (sum, abs []float64) {
	outer, k, inner := Split(shape, axis)
	sum, abs = make([]float64, outer*inner), make([]float64, outer*inner)
	for o := range outer {
		for j := range k {
			for i := range inner {
				v := float64(x[(o*k+j)*inner+i])
				sum[o*inner+i] += v
				abs[o*inner+i] += math.Abs(v)
			}
		}
	}
	for i := range sum {
		sum[i] = Round(sum[i], tensor.Float32)
	}
	return sum, abs
}

// MaxAxis returns the maxima of x over axis; NaN wins.
func MaxAxis(x []float32, shape []int, axis int) []float64 {
	outer, k, inner := Split(shape, axis)
	m := make([]float64, outer*inner)
	for i := range m {
		m[i] = math.Inf(-1)
	}
	for o := range outer {
		for j := range k {
			for i := range inner {
				m[o*inner+i] = nanMax(m[o*inner+i], float64(x[(o*k+j)*inner+i]))
			}
		}
	}
	return m
}

// Softmax returns exp(x - m) / sum(exp(x - m)) over rows of cols elements,
// m being the row max.
func Softmax(x []float32, cols int) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x); r += cols {
		m, s := rowMaxSum(x[r : r+cols])
		for i := range cols {
			y[r+i] = Round(math.Exp(float64(x[r+i])-m)/s, tensor.Float32)
		}
	}
	return y
}

// LogSoftmax returns (x - m) - log(sum(exp(x - m))) over rows, and the scale
// of each result for Check: |x - m| + log(sum) + 1, the terms it subtracts
// and, for the log, 1: its error is the relative error of the sum.
func LogSoftmax(x []float32, cols int) (y, scale []float64) {
	y, scale = make([]float64, len(x)), make([]float64, len(x))
	for r := 0; r < len(x); r += cols {
		m, s := rowMaxSum(x[r : r+cols])
		for i := range cols {
			d := float64(x[r+i]) - m
			y[r+i] = Round(d-math.Log(s), tensor.Float32)
			scale[r+i] = math.Abs(d) + math.Log(s) + 1
		}
	}
	return y, scale
}

func rowMaxSum(row []float32) (m, s float64) {
	m = Max(row)
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	return m, s
}
