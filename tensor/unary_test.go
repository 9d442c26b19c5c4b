package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// mathOps are the unary math ops: inputs uniform in [-in, in), so that
// log, sqrt and rsqrt also see negative inputs (NaN).
var mathOps = []struct {
	name string
	in   float32
	k    int // roundings for ref.Tol
	dev  func(x *tensor.Tensor, out tensor.DType) *tensor.Tensor
	f    func(x float64) float64
}{
	{"Neg", 1, 1, tensor.Neg, func(x float64) float64 { return -x }},
	{"Log", 4, 8, tensor.Log, math.Log},
	{"Sqrt", 4, 2, tensor.Sqrt, math.Sqrt},
	{"Rsqrt", 4, 4, tensor.Rsqrt, ref.Rsqrt64},
	{"Tanh", 4, ref.ExpRoundings, tensor.Tanh, math.Tanh},
	{"Sigmoid", 8, ref.ExpRoundings, tensor.Sigmoid, ref.Sigmoid64},
	{"SiLU", 8, ref.ExpRoundings + 1, tensor.SiLU, func(x float64) float64 { return x * ref.Sigmoid64(x) }},
	{"Mish", 8, ref.ExpRoundings + 4, tensor.Mish, ref.Mish64},
}

// powExps are the exponents of the Pow tests: PyTorch's special cases (2,
// 3, ±0.5, -1, -2), integers odd and even, fractions, 0, ±inf and NaN.
var powExps = []float32{2, 3, 0.5, -0.5, -1, -2, 0, 1, 4, 5, 1.7, -2.3,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}

func TestMath(t *testing.T) {
	d := devtest.Open(t)
	t.Run("Random", func(t *testing.T) { mathRandom(t, d) })
	t.Run("Specials", func(t *testing.T) { mathSpecials(t, d) })
	t.Run("Pow", func(t *testing.T) { mathPow(t, d) })
	t.Run("SignedZeros", func(t *testing.T) { mathSignedZeros(t, d) })
	t.Run("Panics", func(t *testing.T) {
		ints := bcInts(t, d, []int32{1, 2}, 2)
		x, _ := opRand(t, d, 1, 1, tensor.Float32, 2)
		for _, op := range mathOps {
			opPanics[*tensor.DTypeError](t, op.name, func() { op.dev(ints, tensor.Float32) }, op.name, "int32")
			opPanics[*tensor.DTypeError](t, op.name+" out", func() { op.dev(x, tensor.Int32) }, op.name, "int32")
		}
		opPanics[*tensor.DTypeError](t, "Pow", func() { tensor.Pow(ints, 2, tensor.Float32) }, "Pow", "int32")
	})
}

func mathRandom(t *testing.T, d *vk.Device) {
	var checks []opCheck
	for oi, op := range mathOps {
		for _, c := range ewCombos(true) {
			shape := []int{7, 33}
			x, xv := opRand(t, d, uint64(oi), op.in, c[0], shape...)
			what := fmt.Sprintf("%s(%s -> %s)", op.name, c[0], c[2])
			checks = append(checks, opWant(t, what, op.dev(x, c[2]), c[2], shape, ref.Map(xv, c[2], op.f), nil, ref.Tol(c[2], op.k)))
		}
	}
	// Log near 1, where GLSL's log may be off by 2^-21 absolute.
	near := make([]float32, 64)
	for i := range near {
		near[i] = 1 + float32(i-32)*0x1p-12
	}
	x, xv := opInput(t, d, near, tensor.Float32, len(near))
	checks = append(checks, opWant(t, "Log near 1", tensor.Log(x, tensor.Float32), tensor.Float32, []int{len(near)},
		ref.Map(xv, tensor.Float32, math.Log), nil, ref.Tol(tensor.Float32, 8)))
	opRun(checks)
}

func mathSpecials(t *testing.T, d *vk.Device) {
	var checks []opCheck
	n := len(opSpecials)
	for _, op := range mathOps {
		for _, c := range ewCombos(true) {
			x, xv := opInput(t, d, opSpecials, c[0], n)
			what := fmt.Sprintf("%s(%s -> %s) specials", op.name, c[0], c[2])
			checks = append(checks, opWant(t, what, op.dev(x, c[2]), c[2], []int{n}, ref.Map(xv, c[2], op.f), nil, ref.Tol(c[2], op.k)))
		}
	}
	opRun(checks)
}

// mathPow checks every exponent on random values and on the specials.
func mathPow(t *testing.T, d *vk.Device) {
	var checks []opCheck
	vals := append(ref.Rand(64, 9), opSpecials...)
	for i := range 64 {
		vals[i] *= 4
	}
	for pi, p := range powExps {
		for _, c := range ewCombos(true) {
			if pi%3 != 0 && c[0] != c[2] {
				continue // all combinations for some exponents, same-dtype for the rest
			}
			x, xv := opInput(t, d, vals, c[0], len(vals))
			what := fmt.Sprintf("Pow(%s, %g -> %s)", c[0], p, c[2])
			want := ref.Map(xv, c[2], func(x float64) float64 { return ref.Pow64(x, float64(p)) })
			checks = append(checks, opWant(t, what, tensor.Pow(x, p, c[2]), c[2], []int{len(vals)}, want, nil, ref.Tol(c[2], ref.ExpRoundings)))
		}
	}
	opRun(checks)
}

// mathSignedZeros checks the sign of zero results, which ref.Check does not:
// sqrt(-0) is -0, tanh and odd powers keep the sign, even powers drop it.
func mathSignedZeros(t *testing.T, d *vk.Device) {
	negZero := float32(math.Copysign(0, -1))
	for _, dt := range opDTypes {
		x, _ := opInput(t, d, []float32{0, negZero}, dt, 2)
		for _, c := range []struct {
			name string
			out  *tensor.Tensor
			want [2]bool // sign bits
		}{
			{"Neg", tensor.Neg(x, dt), [2]bool{true, false}},
			{"Sqrt", tensor.Sqrt(x, dt), [2]bool{false, true}},
			{"Tanh", tensor.Tanh(x, dt), [2]bool{false, true}},
			{"Pow 3", tensor.Pow(x, 3, dt), [2]bool{false, true}},
			{"Pow 5", tensor.Pow(x, 5, dt), [2]bool{false, true}},
			{"Pow 0.5", tensor.Pow(x, 0.5, dt), [2]bool{false, true}},
			{"Pow 2", tensor.Pow(x, 2, dt), [2]bool{false, false}},
			{"Pow 1.5", tensor.Pow(x, 1.5, dt), [2]bool{false, false}},
		} {
			t.Cleanup(c.out.Release)
			v := opRead(t, c.out)
			for i := range v {
				if v[i] != 0 || math.Signbit(float64(v[i])) != c.want[i] {
					t.Errorf("%s(%s %g) = %g, want a zero with sign bit %v", c.name, dt, []float32{0, negZero}[i], v[i], c.want[i])
				}
			}
		}
	}
}
