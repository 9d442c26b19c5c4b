package tensor_test

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"testing/quick"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestReduce checks the reductions on one device, so that the subtests share
// its pipelines.
func TestReduce(t *testing.T) {
	d := devtest.Open(t)
	t.Run("Random", func(t *testing.T) { rdRandom(t, d) })
	t.Run("Large", func(t *testing.T) { rdLarge(t, d) })
	t.Run("Exact", func(t *testing.T) { rdExact(t, d) })
	t.Run("Specials", func(t *testing.T) { rdSpecials(t, d) })
	t.Run("Deterministic", func(t *testing.T) { rdDeterministic(t, d) })
	t.Run("Panics", func(t *testing.T) { rdPanics(t, d) })
	t.Run("Property", func(t *testing.T) { rdProperty(t, d) })
}

// rdWithout returns shape without axis, or [1] if nothing is left.
func rdWithout(shape []int, axis int) []int {
	s := slices.Delete(slices.Clone(shape), axis, axis+1)
	if len(s) == 0 {
		return []int{1}
	}
	return s
}

// rdAll registers every reduction of x (values xv) against the reference,
// with tolerances scaled by the reduction length.
func rdAll(t *testing.T, name string, x *tensor.Tensor, xv []float32, shape []int) []opCheck {
	f32, n := tensor.Float32, len(xv)
	sum, abs := ref.Sum(xv)
	ss := ref.SumSquares(xv)
	checks := []opCheck{
		opWant(t, name+" Sum", tensor.Sum(x), f32, []int{1}, []float64{sum}, []float64{abs}, ref.Tol(f32, n)),
		opWant(t, name+" Mean", tensor.Mean(x), f32, []int{1}, []float64{sum / float64(n)}, []float64{abs / float64(n)}, ref.Tol(f32, n)),
		opWant(t, name+" SumSquares", tensor.SumSquares(x), f32, []int{1}, []float64{ss}, nil, ref.Tol(f32, n)),
		opWant(t, name+" Max", tensor.Max(x), f32, []int{1}, []float64{ref.Max(xv)}, nil, 0),
	}
	for axis := range shape {
		sums, abss := ref.SumAxis(xv, shape, axis)
		k := shape[axis]
		means, absm := make([]float64, len(sums)), make([]float64, len(sums))
		for i := range sums {
			means[i], absm[i] = sums[i]/float64(k), abss[i]/float64(k)
		}
		out := rdWithout(shape, axis)
		what := fmt.Sprintf("%s axis %d", name, axis)
		checks = append(checks,
			opWant(t, what+" SumAxis", tensor.SumAxis(x, axis), f32, out, sums, abss, ref.Tol(f32, k)),
			opWant(t, what+" MeanAxis", tensor.MeanAxis(x, axis), f32, out, means, absm, ref.Tol(f32, k)),
			opWant(t, what+" MaxAxis", tensor.MaxAxis(x, axis-len(shape)), f32, out, ref.MaxAxis(xv, shape, axis), nil, 0))
	}
	cols := shape[len(shape)-1]
	ls, lscale := ref.LogSoftmax(xv, cols)
	tol := ref.Tol(f32, cols+ref.ExpRoundings)
	return append(checks,
		opWant(t, name+" Softmax", tensor.Softmax(x), f32, shape, ref.Softmax(xv, cols), nil, tol),
		opWant(t, name+" LogSoftmax", tensor.LogSoftmax(x), f32, shape, ls, lscale, tol))
}

// rdRandom checks every reduction over every axis of every test shape.
func rdRandom(t *testing.T, d *vk.Device) {
	var checks []opCheck
	for _, dt := range opDTypes {
		for si, shape := range opShapes {
			x, xv := opRand(t, d, uint64(si), 3, dt, shape...)
			checks = append(checks, rdAll(t, fmt.Sprintf("%s%v", dt, shape), x, xv, shape)...)
		}
	}
	opRun(checks)
}

// rdLarge covers the two-pass whole-tensor scheme: 1M elements (256K with
// -short), the sizes at which it starts, and (without -short) one past the
// most partials. Every reduction runs on fp16; fp32 gets the whole and axis
// sums.
func rdLarge(t *testing.T, d *vk.Device) {
	shape := []int{1024, 1024}
	if testing.Short() {
		shape = []int{256, 1024} // still two passes
	}
	h, hv := opRand(t, d, 7, 1, tensor.Float16, shape...)
	checks := rdAll(t, fmt.Sprintf("float16%v", shape), h, hv, shape)
	x, xv := opRand(t, d, 8, 1, tensor.Float32, shape...)
	sum, abs := ref.Sum(xv)
	f32, n := tensor.Float32, len(xv)
	checks = append(checks,
		opWant(t, "float32 Sum", tensor.Sum(x), f32, []int{1}, []float64{sum}, []float64{abs}, ref.Tol(f32, n)),
		opWant(t, "float32 SumSquares", tensor.SumSquares(x), f32, []int{1}, []float64{ref.SumSquares(xv)}, nil, ref.Tol(f32, n)),
		opWant(t, "float32 Max", tensor.Max(x), f32, []int{1}, []float64{ref.Max(xv)}, nil, 0))
	for axis := range shape {
		sums, abss := ref.SumAxis(xv, shape, axis)
		checks = append(checks, opWant(t, fmt.Sprintf("float32 SumAxis %d", axis), tensor.SumAxis(x, axis), f32,
			rdWithout(shape, axis), sums, abss, ref.Tol(f32, shape[axis])))
	}
	sizes := []int{4095, 4096, 8193, 65537, 999_999}
	if !testing.Short() {
		// Past 1024 partials of 256 invocations × 32: Sum only, it is slow.
		n := 1024*256*32 + 1
		x, xv := opRand(t, d, 3, 1, tensor.Float16, n)
		sum, abs := ref.Sum(xv)
		checks = append(checks, opWant(t, fmt.Sprintf("Sum[%d]", n), tensor.Sum(x), f32, []int{1}, []float64{sum}, []float64{abs}, ref.Tol(f32, n)))
	}
	for _, n := range sizes {
		x, xv := opRand(t, d, uint64(n), 1, tensor.Float16, n)
		sum, abs := ref.Sum(xv)
		checks = append(checks,
			opWant(t, fmt.Sprintf("Sum[%d]", n), tensor.Sum(x), f32, []int{1}, []float64{sum}, []float64{abs}, ref.Tol(f32, n)),
			opWant(t, fmt.Sprintf("Max[%d]", n), tensor.Max(x), f32, []int{1}, []float64{ref.Max(xv)}, nil, 0))
	}
	opRun(checks)
}

// rdExact sums small integers, which fp32 adds exactly in any order: every
// element must be counted once, so results are compared bit for bit.
func rdExact(t *testing.T, d *vk.Device) {
	shape := []int{1000, 1023}
	if testing.Short() {
		shape[0] = 100
	}
	v := ref.Rand(opShapeLen(shape), 99)
	for i := range v {
		v[i] = float32(math.Round(float64(v[i]) * 4))
	}
	var checks []opCheck
	for _, dt := range opDTypes {
		x, xv := opInput(t, d, v, dt, shape...)
		sum, _ := ref.Sum(xv)
		name := dt.String()
		checks = append(checks,
			opWant(t, name+" Sum", tensor.Sum(x), tensor.Float32, []int{1}, []float64{sum}, nil, 0),
			opWant(t, name+" SumSquares", tensor.SumSquares(x), tensor.Float32, []int{1}, []float64{ref.SumSquares(xv)}, nil, 0))
		for axis := range shape {
			sums, _ := ref.SumAxis(xv, shape, axis)
			checks = append(checks, opWant(t, fmt.Sprintf("%s SumAxis %d", name, axis), tensor.SumAxis(x, axis),
				tensor.Float32, rdWithout(shape, axis), sums, nil, 0))
		}
	}
	opRun(checks)
}

// rdSpecials puts NaN and infinities in rows: results follow float64 math
// (NaN wins everywhere; inf - inf is NaN; a -inf logit has probability 0).
func rdSpecials(t *testing.T, d *vk.Device) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	rows := [][]float32{
		{1, -2, 0.5, 3, 0},
		{1, nan, 0.5, 3, 0},
		{1, -2, inf, 3, 0},
		{1, -inf, 0.5, 3, 0},
		{-inf, -inf, -inf, -inf, -inf},
		{inf, -inf, 0.5, 3, 0},
		{inf, 2, inf, 3, 0},
		{65504, 65504, 65504, 65504, 65504},
	}
	var v []float32
	for _, r := range rows {
		v = append(v, r...)
	}
	shape := []int{len(rows), len(rows[0])}
	var checks []opCheck
	for _, dt := range opDTypes {
		x, xv := opInput(t, d, v, dt, shape...)
		checks = append(checks, rdAll(t, dt.String()+" specials", x, xv, shape)...)
		for i, r := range rows {
			x, xv := opInput(t, d, r, dt, len(r))
			checks = append(checks, rdAll(t, fmt.Sprintf("%s row %d", dt, i), x, xv, []int{len(r)})...)
		}
	}
	opRun(checks)
}

// rdDeterministic runs each reduction twice: the bits must be equal.
func rdDeterministic(t *testing.T, d *vk.Device) {
	x, _ := opRand(t, d, 5, 1, tensor.Float32, 1024, 1024)
	h, _ := opRand(t, d, 6, 1, tensor.Float16, 1000, 257)
	s, _ := opRand(t, d, 4, 1, tensor.Float32, 33, 1000)
	ops := map[string]func() *tensor.Tensor{
		"Sum":          func() *tensor.Tensor { return tensor.Sum(x) },
		"SumSquares":   func() *tensor.Tensor { return tensor.SumSquares(h) },
		"Mean":         func() *tensor.Tensor { return tensor.Mean(h) },
		"SumAxis 0":    func() *tensor.Tensor { return tensor.SumAxis(h, 0) },
		"SumAxis 1":    func() *tensor.Tensor { return tensor.SumAxis(x, 1) },
		"Softmax":      func() *tensor.Tensor { return tensor.Softmax(h) },
		"LogSoftmax":   func() *tensor.Tensor { return tensor.LogSoftmax(s) },
		"GELUBackward": func() *tensor.Tensor { return tensor.GELUBackward(h, h, tensor.Float16) },
	}
	for name, op := range ops {
		a, b := op(), op()
		ga, gb := opRead(t, a), opRead(t, b)
		a.Release()
		b.Release()
		if !slices.Equal(opBits(ga), opBits(gb)) {
			t.Errorf("%s: two runs differ", name)
		}
	}
}

// rdPanics checks the typed panics of misuse.
func rdPanics(t *testing.T, d *vk.Device) {
	x, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3)
	opPanics[*tensor.UsageError](t, "SumAxis 2", func() { tensor.SumAxis(x, 2) }, "SumAxis", "axis 2", "[2 3]")
	opPanics[*tensor.UsageError](t, "MaxAxis -3", func() { tensor.MaxAxis(x, -3) }, "MaxAxis", "axis -3")
	opPanics[*tensor.UsageError](t, "MeanAxis nil", func() { tensor.MeanAxis(nil, 0) }, "MeanAxis", "nil")
	y, _ := opRand(t, d, 2, 1, tensor.Float16, 4)
	y.Release()
	opPanics[*tensor.UsageError](t, "Softmax released", func() { tensor.Softmax(y) }, "Softmax", "released")
	ints := tensor.Zeros(d, tensor.Int32, 2, 3)
	t.Cleanup(ints.Release)
	for name, op := range map[string]func(*tensor.Tensor) *tensor.Tensor{
		"Sum": tensor.Sum, "Mean": tensor.Mean, "SumSquares": tensor.SumSquares, "Max": tensor.Max,
		"Softmax": tensor.Softmax, "LogSoftmax": tensor.LogSoftmax,
		"SumAxis":  func(x *tensor.Tensor) *tensor.Tensor { return tensor.SumAxis(x, 0) },
		"MeanAxis": func(x *tensor.Tensor) *tensor.Tensor { return tensor.MeanAxis(x, 1) },
		"MaxAxis":  func(x *tensor.Tensor) *tensor.Tensor { return tensor.MaxAxis(x, 0) },
	} {
		opPanics[*tensor.DTypeError](t, name+" of int32", func() { op(ints) }, name, "int32")
	}
}

// rdProperty checks identities that need no reference on random small
// shapes and dtypes: reducing an axis then the rest equals reducing all,
// softmax rows sum to 1, x - x is 0 and x + x is 2x exactly.
func rdProperty(t *testing.T, d *vk.Device) {
	prop := func(r, c uint8, half bool, seed uint16) bool {
		rows, cols := int(r)%40+1, int(c)%40+1
		dt := tensor.Float32
		if half {
			dt = tensor.Float16
		}
		x, xv := opRand(t, d, uint64(seed), 2, dt, rows, cols)
		_, abs := ref.Sum(xv)
		var sc tensor.Scope
		defer sc.Release()
		get := func(y *tensor.Tensor) []float32 { return opRead(t, sc.Track(y)) }
		ok := true
		fail := func(format string, args ...any) {
			t.Errorf("[%d %d] %s seed %d: "+format, append([]any{rows, cols, dt, seed}, args...)...)
			ok = false
		}
		s := get(tensor.Sum(x))[0]
		for axis := range 2 {
			s2 := get(tensor.Sum(sc.Track(tensor.SumAxis(x, axis))))[0]
			if math.Abs(float64(s2-s)) > 2*ref.Tol(tensor.Float32, len(xv))*abs {
				fail("Sum(SumAxis(x, %d)) = %g, Sum(x) = %g", axis, s2, s)
			}
			m2 := get(tensor.Max(sc.Track(tensor.MaxAxis(x, axis))))[0]
			if m := get(tensor.Max(x))[0]; m2 != m {
				fail("Max(MaxAxis(x, %d)) = %g, Max(x) = %g", axis, m2, m)
			}
		}
		rowSums := get(tensor.SumAxis(sc.Track(tensor.Softmax(x)), 1))
		for i, v := range rowSums {
			if math.Abs(float64(v)-1) > ref.Tol(tensor.Float32, 2*cols+ref.ExpRoundings) {
				fail("softmax row %d sums to %g", i, v)
			}
		}
		if got := get(tensor.Sub(x, x, dt)); slices.ContainsFunc(got, func(v float32) bool { return v != 0 }) {
			fail("x - x is not 0: %v", got)
		}
		if !slices.Equal(opBits(get(tensor.Add(x, x, dt))), opBits(get(tensor.Scale(x, 2, dt)))) {
			fail("x + x differs from 2x")
		}
		return ok
	}
	cfg := &quick.Config{MaxCount: 30, Rand: rand.New(rand.NewSource(1))}
	if err := quick.Check(prop, cfg); err != nil {
		t.Error(err)
	}
}
