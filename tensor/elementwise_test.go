package tensor_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// ewOp is one elementwise op in the table tests; unary ops ignore b.
type ewOp struct {
	name   string
	unary  bool
	in     float32 // inputs are uniform in [-in, in)
	k      int     // roundings for ref.Tol
	dev    func(a, b *tensor.Tensor, out tensor.DType) *tensor.Tensor
	ref    func(a, b []float32, out tensor.DType) []float64
	scales func(a, b []float32) []float64 // for ref.Check; nil means |want|
}

const ewAlpha, ewScale = -0.75, 1.5

var ewOps = []ewOp{
	{name: "Add", in: 1, k: 1, dev: tensor.Add, ref: ref.Add},
	{name: "Sub", in: 1, k: 1, dev: tensor.Sub, ref: ref.Sub},
	{name: "Mul", in: 1, k: 1, dev: tensor.Mul, ref: ref.Mul},
	{name: "Axpy", in: 1, k: 2,
		dev: func(x, y *tensor.Tensor, out tensor.DType) *tensor.Tensor { return tensor.Axpy(ewAlpha, x, y, out) },
		ref: func(x, y []float32, out tensor.DType) []float64 { return ref.Axpy(ewAlpha, x, y, out) },
		// alpha*x may be rounded before y is added: the error scales with the terms.
		scales: func(x, y []float32) []float64 {
			s := make([]float64, len(x))
			for i := range x {
				s[i] = math.Abs(ewAlpha*float64(x[i])) + math.Abs(float64(y[i]))
			}
			return s
		}},
	{name: "ReLUBackward", in: 1, k: 1, dev: tensor.ReLUBackward, ref: ref.ReLUBackward},
	{name: "GELUBackward", in: 4, k: ref.ExpRoundings, dev: tensor.GELUBackward, ref: ref.GELUBackward,
		// GELU' = Phi(x) + x phi(x) crosses zero near x = -0.75: scale by the terms.
		scales: geluGradScales},
	{name: "SiLUBackward", in: 4, k: ref.ExpRoundings + 3, dev: tensor.SiLUBackward, ref: ref.SiLUBackward,
		// SiLU' = s(1 + x(1-s)) crosses zero near x = -1.28: scale by the terms.
		scales: geluGradScales},
	{name: "MishBackward", in: 4, k: ref.ExpRoundings + 6, dev: tensor.MishBackward, ref: ref.MishBackward,
		// Mish' crosses zero near x = -1.19: scale by the terms.
		scales: geluGradScales},
	{name: "GELUTanhBackward", in: 4, k: ref.ExpRoundings, dev: tensor.GELUTanhBackward, ref: ref.GELUTanhBackward,
		// GELU' = s + 2x s(1-s)u' crosses zero near x = -0.75: scale by the terms.
		scales: geluGradScales},
	{name: "Scale", unary: true, in: 1, k: 1,
		dev: func(a, _ *tensor.Tensor, out tensor.DType) *tensor.Tensor { return tensor.Scale(a, ewScale, out) },
		ref: func(a, _ []float32, out tensor.DType) []float64 { return ref.Scale(a, ewScale, out) }},
	{name: "ReLU", unary: true, in: 1, k: 1,
		dev: func(a, _ *tensor.Tensor, out tensor.DType) *tensor.Tensor { return tensor.ReLU(a, out) },
		ref: func(a, _ []float32, out tensor.DType) []float64 { return ref.ReLU(a, out) }},
	{name: "Exp", unary: true, in: 4, k: ref.ExpRoundings,
		dev: func(a, _ *tensor.Tensor, out tensor.DType) *tensor.Tensor { return tensor.Exp(a, out) },
		ref: func(a, _ []float32, out tensor.DType) []float64 { return ref.Map(a, out, math.Exp) }},
	{name: "GELU", unary: true, in: 4, k: ref.ExpRoundings,
		dev: func(a, _ *tensor.Tensor, out tensor.DType) *tensor.Tensor { return tensor.GELU(a, out) },
		ref: func(a, _ []float32, out tensor.DType) []float64 { return ref.GELU(a, out) }},
	{name: "GELUTanh", unary: true, in: 4, k: ref.ExpRoundings,
		dev: func(a, _ *tensor.Tensor, out tensor.DType) *tensor.Tensor { return tensor.GELUTanh(a, out) },
		ref: func(a, _ []float32, out tensor.DType) []float64 { return ref.GELUTanh(a, out) }},
}

// geluGradScales are the scales of GELU's gradient errors: the terms of
// dy*GELU'(x), which cancel near x = -0.75.
func geluGradScales(dy, x []float32) []float64 {
	s := make([]float64, len(x))
	for i := range x {
		s[i] = math.Abs(float64(dy[i])) * (1 + math.Abs(float64(x[i])))
	}
	return s
}

// ewCombos lists the (a, b, out) dtypes of an op: all 27 for binary ops,
// the nine with b unused for unary ones.
func ewCombos(unary bool) [][3]tensor.DType {
	var c [][3]tensor.DType
	for _, a := range opDTypes {
		for _, b := range opDTypes {
			for _, o := range opDTypes {
				if !unary || b == opDTypes[0] {
					c = append(c, [3]tensor.DType{a, b, o})
				}
			}
		}
	}
	return c
}

// TestElementwise checks the elementwise ops on one device, so that the
// subtests share its pipelines (compiling them dominates on SwiftShader).
func TestElementwise(t *testing.T) {
	d := devtest.Open(t)
	t.Run("Random", func(t *testing.T) { ewRandom(t, d) })
	t.Run("AddBias", func(t *testing.T) { ewAddBias(t, d) })
	t.Run("Specials", func(t *testing.T) { ewSpecials(t, d) })
	t.Run("Panics", func(t *testing.T) { ewPanics(t, d) })
}

// ewRandom checks every op, dtype combination and shape against the float64
// reference.
func ewRandom(t *testing.T, d *vk.Device) {
	var checks []opCheck
	for oi, op := range ewOps {
		for _, c := range ewCombos(op.unary) {
			for si, shape := range opShapes {
				seed := uint64(1000*oi + 10*si)
				a, av := opRand(t, d, seed, op.in, c[0], shape...)
				b, bv := opRand(t, d, seed+1, op.in, c[1], shape...)
				what := fmt.Sprintf("%s(%s, %s -> %s)%v", op.name, c[0], c[1], c[2], shape)
				var scale []float64
				if op.scales != nil {
					scale = op.scales(av, bv)
				}
				checks = append(checks, opWant(t, what, op.dev(a, b, c[2]), c[2], shape,
					op.ref(av, bv, c[2]), scale, ref.Tol(c[2], op.k)))
			}
		}
	}
	opRun(checks)
}

// ewAddBias broadcasts a bias of the last dimension over every row.
func ewAddBias(t *testing.T, d *vk.Device) {
	var checks []opCheck
	for _, c := range ewCombos(false) {
		for si, shape := range opShapes {
			n := shape[len(shape)-1]
			x, xv := opRand(t, d, uint64(si), 1, c[0], shape...)
			b, bv := opRand(t, d, uint64(si)+100, 1, c[1], n)
			what := fmt.Sprintf("AddBias(%s, %s -> %s)%v", c[0], c[1], c[2], shape)
			checks = append(checks, opWant(t, what, tensor.AddBias(x, b, c[2]), c[2], shape,
				ref.AddBias(xv, bv, c[2]), nil, ref.Tol(c[2], 1)))
		}
	}
	opRun(checks)
}

// ewSpecials feeds NaN, ±inf, ±0, fp16 limits and an fp16
// overflow through every op: the results must follow float64 arithmetic
// (NaN in gives NaN out; inf*0 and inf-inf give NaN).
func ewSpecials(t *testing.T, d *vk.Device) {
	n := len(opSpecials)
	as, bs := make([]float32, n*n), make([]float32, n*n)
	for i := range n {
		for j := range n {
			as[i*n+j], bs[i*n+j] = opSpecials[i], opSpecials[j]
		}
	}
	var checks []opCheck
	for _, op := range ewOps {
		for _, c := range ewCombos(op.unary) {
			a, av := opInput(t, d, as, c[0], n, n)
			b, bv := opInput(t, d, bs, c[1], n, n)
			var scale []float64
			if op.scales != nil {
				scale = op.scales(av, bv)
			}
			what := fmt.Sprintf("%s(%s, %s -> %s)", op.name, c[0], c[1], c[2])
			checks = append(checks, opWant(t, what, op.dev(a, b, c[2]), c[2], []int{n, n},
				op.ref(av, bv, c[2]), scale, ref.Tol(c[2], op.k)))
		}
		x, xv := opInput(t, d, as, tensor.Float32, n, n)
		bias, bv := opInput(t, d, opSpecials, tensor.Float32, n)
		checks = append(checks, opWant(t, "AddBias specials", tensor.AddBias(x, bias, tensor.Float32), tensor.Float32,
			[]int{n, n}, ref.AddBias(xv, bv, tensor.Float32), nil, ref.Tol(tensor.Float32, 1)))
	}
	opRun(checks)
}

// ewPanics checks the typed panics of misuse: their messages name the op and
// both shapes, or the op and the dtype. Every op refuses Int32, in and out.
func ewPanics(t *testing.T, d *vk.Device) {
	a, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3)
	b, _ := opRand(t, d, 2, 1, tensor.Float16, 3, 2)
	bias, _ := opRand(t, d, 3, 1, tensor.Float32, 2)
	ints := tensor.Zeros(d, tensor.Int32, 2, 3)
	t.Cleanup(ints.Release)
	for _, op := range ewOps {
		opPanics[*tensor.DTypeError](t, op.name+" into int32", func() { op.dev(a, a, tensor.Int32) }, op.name, "int32")
		opPanics[*tensor.DTypeError](t, op.name+" of int32", func() { op.dev(ints, a, tensor.Float32) }, op.name, "int32")
		opPanics[*tensor.DTypeError](t, op.name+" into DType(9)", func() { op.dev(a, a, tensor.DType(9)) }, op.name, "DType(9)")
		if op.unary {
			continue
		}
		opPanics[*tensor.ShapeError](t, op.name, func() { op.dev(a, b, tensor.Float32) }, op.name, "[2 3]", "[3 2]")
		opPanics[*tensor.DTypeError](t, op.name+" with int32", func() { op.dev(a, ints, tensor.Float32) }, op.name, "int32")
	}
	opPanics[*tensor.ShapeError](t, "AddBias", func() { tensor.AddBias(a, bias, tensor.Float32) }, "AddBias", "[2 3]", "[2]")
	opPanics[*tensor.ShapeError](t, "AddBias 2-D bias", func() { tensor.AddBias(b, a, tensor.Float32) }, "AddBias", "[3 2]", "[2 3]")
	intBias := tensor.Zeros(d, tensor.Int32, 3)
	t.Cleanup(intBias.Release)
	opPanics[*tensor.DTypeError](t, "AddBias int32 bias", func() { tensor.AddBias(a, intBias, tensor.Float32) }, "AddBias", "int32")
	bias3, _ := opRand(t, d, 5, 1, tensor.BFloat16, 3)
	opPanics[*tensor.DTypeError](t, "AddBias into int32", func() { tensor.AddBias(a, bias3, tensor.Int32) }, "AddBias", "int32")
	released, _ := opRand(t, d, 4, 1, tensor.Float32, 2, 3)
	released.Release()
	opPanics[*tensor.UsageError](t, "released", func() { tensor.Add(a, released, tensor.Float32) }, "Add", "released")
}

// TestElementwiseErrorPropagation checks that an input carrying an error
// gives outputs carrying the same error, without any work recorded.
// TestGELUTail checks GELU's relative error where x*Phi(x) is tiny, past
// the inputs of TestElementwise: Phi(x) comes from erfc of |x|, not from
// 1 + erf(x), which cancels. From x = -12 (GELU 2e-32, still a normal fp32)
// to 12 it stays within 2e-5 (1.04e-5 on lavapipe and SwiftShader).
func TestGELUTail(t *testing.T) {
	d := devtest.Open(t)
	var xs []float32
	for x := -12.0; x <= 12; x += 1.0 / 1024 {
		xs = append(xs, float32(x))
	}
	x := tensor.FromFloat32(d, xs, len(xs))
	defer x.Release()
	y := tensor.GELU(x, tensor.Float32)
	defer y.Release()
	got, err := y.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	worst, at := 0.0, float32(0)
	for i, v := range xs {
		want := float64(v) * 0.5 * math.Erfc(-float64(v)/math.Sqrt2)
		if want == 0 {
			continue
		}
		if e := math.Abs(float64(got[i])-want) / math.Abs(want); e > worst || math.IsNaN(e) {
			worst, at = e, v
		}
	}
	if !(worst <= 2e-5) {
		t.Errorf("GELU(%g): relative error %.3g, want at most 2e-5", at, worst)
	}
}

func TestElementwiseErrorPropagation(t *testing.T) {
	d := devtest.Open(t)
	bad := tensor.New(d, tensor.Float32, 1<<31-1) // 8 GiB: over every device's allocation limit here
	defer bad.Release()
	if bad.Err() == nil {
		t.Skip("the device allocated 8 GiB; no failing tensor to propagate")
	}
	before := d.Stats().Dispatches
	outs := []*tensor.Tensor{
		tensor.Add(bad, bad, tensor.Float16), tensor.ReLU(bad, tensor.Float32), tensor.GELUBackward(bad, bad, tensor.Float32),
		tensor.Sum(bad), tensor.Mean(bad), tensor.SumAxis(bad, 0), tensor.Softmax(bad), tensor.SumSquares(bad), tensor.Max(bad),
	}
	for i, o := range outs {
		if !errors.Is(o.Err(), bad.Err()) && o.Err() != bad.Err() {
			t.Errorf("output %d: error %v, want %v", i, o.Err(), bad.Err())
		}
		if _, err := o.Float32s(); err == nil {
			t.Errorf("output %d: read succeeded", i)
		}
	}
	if n := d.Stats().Dispatches - before; n != 0 {
		t.Errorf("%d dispatches recorded for failed inputs", n)
	}
}

// TestElementwiseGridLoops runs fp32 ops (a binary, a unary and
// Accumulate) over three passes of a CPU driver's capped grid (ewiseGrid)
// and 3 more: every invocation loops over blocks, and invocation 0 makes
// the last n % 4 elements.
func TestElementwiseGridLoops(t *testing.T) {
	d := devtest.Open(t)
	n := 3*tensor.EwiseSweep(d) + 3
	av, bv := make([]float32, n), make([]float32, n)
	for i := range av {
		av[i], bv[i] = float32(i%1000)/8-60, float32(i%777)/16
	}
	a, b, at := tensor.FromFloat32(d, av, n), tensor.FromFloat32(d, bv, n), tensor.FromFloat32(d, bv, n)
	st, nt := tensor.Add(a, b, tensor.Float32), tensor.Neg(a, tensor.Float32)
	for _, x := range []*tensor.Tensor{a, b, at, st, nt} {
		defer x.Release()
	}
	if err := tensor.Accumulate(at, a); err != nil {
		t.Fatal(err)
	}
	sum, neg, acc := opRead(t, st), opRead(t, nt), opRead(t, at)
	bad := 0
	for i := range av {
		if (sum[i] != av[i]+bv[i] || neg[i] != -av[i] || acc[i] != sum[i]) && bad < 5 {
			t.Errorf("element %d of %d: add %g, neg %g, accumulated %g; want %g, %g, %g", i, n, sum[i], neg[i], acc[i], av[i]+bv[i], -av[i], av[i]+bv[i])
			bad++
		}
	}
}

// TestReLUAllHalves: ReLU from fp16 to fp16 of every half, twice over and
// a ragged tail, gives what decoding, ReLU in fp32 and rounding give (the
// texel form works on the halves' bits): NaN kept and quieted, negative
// numbers and -0 to +0, the rest as they were.
func TestReLUAllHalves(t *testing.T) {
	for _, det := range []bool{false, true} {
		d := devtest.Open(t, vk.Options{Deterministic: det})
		const n = 2<<16 + 5
		in := make([]float16.Float16, n)
		for i := range in {
			in[i] = float16.Frombits(uint16(i))
		}
		x := tensor.FromFloat16(d, in, n)
		y := tensor.ReLU(x, tensor.Float16)
		raw, err := y.Bytes()
		require.NoError(t, err)
		x.Release()
		y.Release()
		bad := 0
		for i, h := range in {
			v := h.Float32()
			if !(v > 0 || v != v) {
				v = 0
			}
			want := float16.Fromfloat32(v).Bits()
			if got := binary.LittleEndian.Uint16(raw[2*i:]); got != want && bad < 10 {
				t.Errorf("deterministic %v: ReLU(%#04x) = %#04x, want %#04x", det, h.Bits(), got, want)
				bad++
			}
		}
	}
}

// TestReLUBackwardAllHalves: fp16 dy and x to fp16 (the texel form's bits
// path on CPU drivers) gives dy where x > 0, x where it is NaN (quieted, as
// decoding makes it), else +0, for every half as x (against dy of both
// signs, a subnormal, inf and a signalling NaN) and as dy (against positive,
// zero, negative and NaN x), in both modes, with a ragged tail.
func TestReLUBackwardAllHalves(t *testing.T) {
	dys := []uint16{0x3C00, 0xBC00, 0x0001, 0x7C00, 0x7C01}
	xs := []uint16{0x3555, 0x0000, 0x8000, 0x0001, 0x8001, 0xC000, 0x7C00, 0xFC00, 0x7D00}
	var dy, x []float16.Float16
	for _, v := range dys {
		for h := range 1 << 16 {
			dy, x = append(dy, float16.Frombits(v)), append(x, float16.Frombits(uint16(h)))
		}
	}
	for _, v := range xs {
		for h := range 1 << 16 {
			dy, x = append(dy, float16.Frombits(uint16(h))), append(x, float16.Frombits(v))
		}
	}
	n := len(x) - 3 // a partial last block
	for _, det := range []bool{false, true} {
		d := devtest.Open(t, vk.Options{Deterministic: det})
		tdy, tx := tensor.FromFloat16(d, dy[:n], n), tensor.FromFloat16(d, x[:n], n)
		y := tensor.ReLUBackward(tdy, tx, tensor.Float16)
		raw, err := y.Bytes()
		require.NoError(t, err)
		for _, r := range []*tensor.Tensor{tdy, tx, y} {
			r.Release()
		}
		bad := 0
		for i := range n {
			g, v := dy[i].Float32(), x[i].Float32()
			want := float16.Fromfloat32(0).Bits()
			switch {
			case v != v:
				want = float16.Fromfloat32(v).Bits()
			case v > 0:
				want = float16.Fromfloat32(g).Bits()
			}
			if got := binary.LittleEndian.Uint16(raw[2*i:]); got != want && bad < 10 {
				t.Errorf("deterministic %v: ReLUBackward(dy %#04x, x %#04x) = %#04x, want %#04x", det, dy[i].Bits(), x[i].Bits(), got, want)
				bad++
			}
		}
	}
}
