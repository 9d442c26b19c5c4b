package ref

import (
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// Elementwise references: exact float64 arithmetic on the inputs, rounded
// once to the output dtype, as the device stores them.

// ExpRoundings is the k to pass to Tol for ops through exp (GELU, softmax):
// the fp32 rounding of exp's argument u is amplified by |u|, and driver exp
// is a few ulp from exact.
const ExpRoundings = 64

// Map returns f(a[i]) for each i, rounded to out.
func Map(a []float32, out tensor.DType, f func(a float64) float64) []float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = Round(f(float64(a[i])), out)
	}
	return r
}

// Map2 returns f(a[i], b[i]) for each i, rounded to out.
func Map2(a, b []float32, out tensor.DType, f func(a, b float64) float64) []float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = Round(f(float64(a[i]), float64(b[i])), out)
	}
	return r
}

// Add returns a + b.
func Add(a, b []float32, out tensor.DType) []float64 {
	return Map2(a, b, out, func(a, b float64) float64 { return a + b })
}

// Sub returns a - b.
func Sub(a, b []float32, out tensor.DType) []float64 {
	return Map2(a, b, out, func(a, b float64) float64 { return a - b })
}

// Mul returns a * b.
func Mul(a, b []float32, out tensor.DType) []float64 {
	return Map2(a, b, out, func(a, b float64) float64 { return a * b })
}

// Axpy returns alpha*x + y.
func Axpy(alpha float32, x, y []float32, out tensor.DType) []float64 {
	return Map2(x, y, out, func(x, y float64) float64 { return float64(alpha)*x + y })
}

// Scale returns s*a.
func Scale(a []float32, s float32, out tensor.DType) []float64 {
	return Map(a, out, func(a float64) float64 { return float64(s) * a })
}

// AddBias returns x + bias[i % len(bias)].
func AddBias(x, bias []float32, out tensor.DType) []float64 {
	r := make([]float64, len(x))
	for i := range x {
		r[i] = Round(float64(x[i])+float64(bias[i%len(bias)]), out)
	}
	return r
}

// ReLU returns max(x, 0), NaN for NaN.
func ReLU(x []float32, out tensor.DType) []float64 { return Map(x, out, relu) }

func relu(x float64) float64 {
	if x > 0 || math.IsNaN(x) {
		return x
	}
	return 0
}

// ReLUBackward returns dy where x > 0, else 0, and NaN where x is NaN.
func ReLUBackward(dy, x []float32, out tensor.DType) []float64 {
	return Map2(dy, x, out, func(dy, x float64) float64 {
		if math.IsNaN(x) {
			return x
		}
		if x > 0 {
			return dy
		}
		return 0
	})
}

const (
	geluK = 0.7978845608028654 // sqrt(2/pi)
	geluC = 0.044715
)

// GELU returns x*Phi(x) = 0.5x*erfc(-x/sqrt(2)), the exact GELU (PyTorch's
// default).
func GELU(x []float32, out tensor.DType) []float64 { return Map(x, out, Gelu64) }

// Gelu64 is the exact GELU in float64, through erfc so that it keeps its
// relative accuracy where 1 + erf(x/sqrt(2)) cancels (x negative).
func Gelu64(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }

// GELUBackward returns dy * GELU'(x), the exact form's derivative.
func GELUBackward(dy, x []float32, out tensor.DType) []float64 {
	return Map2(dy, x, out, func(dy, x float64) float64 { return dy * GeluGrad64(x) })
}

// SiLUBackward returns dy * SiLU'(x) = dy * s(1 + x(1 - s)), s = sigmoid(x),
// PyTorch's formula (NaN at -inf).
func SiLUBackward(dy, x []float32, out tensor.DType) []float64 {
	return Map2(dy, x, out, func(dy, x float64) float64 {
		s := Sigmoid64(x)
		return dy * s * (1 + x*(1-s))
	})
}

// Mish64 is x tanh(log(1 + e^x)), PyTorch's mish (NaN at -inf).
func Mish64(x float64) float64 { return x * math.Tanh(math.Log1p(math.Exp(x))) }

// MishBackward returns dy * Mish'(x) = dy * (t + x s(1 - t^2)), t =
// tanh(softplus(x)), s = sigmoid(x), PyTorch's formula (NaN at -inf).
func MishBackward(dy, x []float32, out tensor.DType) []float64 {
	return Map2(dy, x, out, func(dy, x float64) float64 {
		t := math.Tanh(math.Log1p(math.Exp(x)))
		return dy * (t + x*Sigmoid64(x)*(1-t*t))
	})
}

// GeluGrad64 is the derivative of the exact GELU: Phi(x) + x*phi(x). It is
// NaN at -inf, where the formula gives inf*0.
func GeluGrad64(x float64) float64 {
	return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
}

// GELUTanh returns 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), PyTorch's
// approximate='tanh'.
func GELUTanh(x []float32, out tensor.DType) []float64 { return Map(x, out, GeluTanh64) }

// GeluTanh64 is GELU's tanh form in float64, written x*sigmoid(2u), which
// equals the tanh form and is accurate where 1 + tanh(u) cancels.
func GeluTanh64(x float64) float64 {
	u := geluK * (x + geluC*x*x*x)
	return x / (1 + math.Exp(-2*u))
}

// GELUTanhBackward returns dy * GELU'(x) of the tanh form.
func GELUTanhBackward(dy, x []float32, out tensor.DType) []float64 {
	return Map2(dy, x, out, func(dy, x float64) float64 { return dy * GeluTanhGrad64(x) })
}

// GeluTanhGrad64 is the derivative of GELU's tanh form: with s =
// sigmoid(2u), s + 2x s(1-s) u'. It is NaN at ±inf, where the formula
// gives inf*0.
func GeluTanhGrad64(x float64) float64 {
	u := geluK * (x + geluC*x*x*x)
	du := geluK * (1 + 3*geluC*x*x)
	s := 1 / (1 + math.Exp(-2*u))
	return s + 2*x*du*s*(1-s)
}
