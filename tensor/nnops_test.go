package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Tests of the layer ops against float64 references. Helpers carry an "nn"
// prefix.

// nnPCG is dropout.comp's hash.
func nnPCG(v uint32) uint32 {
	state := v*747796405 + 2891336453
	word := ((state >> ((state >> 28) + 4)) ^ state) * 277803737
	return (word >> 22) ^ word
}

// nnDropout is the reference of Dropout: the mask from the hash, the kept
// values scaled by 1/(1-p), rounded to dt.
func nnDropout(x []float32, p float32, seed uint32, dt tensor.DType) (want []float64, kept []bool) {
	threshold := uint32(math.Min(float64(p)*4294967296.0, 4294967295))
	scale := 1 / (1 - p)
	want, kept = make([]float64, len(x)), make([]bool, len(x))
	for i, v := range x {
		if kept[i] = nnPCG(uint32(i)^nnPCG(seed)) >= threshold; kept[i] {
			want[i] = ref.Round(float64(v)*float64(scale), dt)
		}
	}
	return want, kept
}

func TestDropout(t *testing.T) {
	d := devtest.Open(t)
	var checks []opCheck
	for _, dt := range opDTypes {
		for _, p := range []float32{0, 0.25, 0.5, 0.9} {
			for _, shape := range [][]int{{1}, {7}, {33, 7}, {4096}} {
				what := fmt.Sprintf("Dropout %s p=%g %v", dt, p, shape)
				x, held := opRand(t, d, uint64(len(shape)), 2, dt, shape...)
				out := tensor.Dropout(x, p, 42)
				want, kept := nnDropout(held, p, 42, dt)
				checks = append(checks, opWant(t, what, out, dt, shape, want, nil, ref.Tol(dt, 1)), func() {
					got := opRead(t, out)
					for i := range got {
						if (got[i] != 0) != kept[i] {
							t.Errorf("%s[%d]: %g, kept %v", what, i, got[i], kept[i])
							return
						}
					}
				})
			}
		}
	}
	opRun(checks)

	// The same seed gives the same mask, so Dropout(dy) is the backward;
	// another seed another mask. About p of the elements go.
	x, _ := opInput(t, d, nnOnes(1<<14), tensor.Float32, 1<<14)
	a, b, c := tensor.Dropout(x, 0.25, 7), tensor.Dropout(x, 0.25, 7), tensor.Dropout(x, 0.25, 8)
	defer a.Release()
	defer b.Release()
	defer c.Release()
	va, vb, vc := opRead(t, a), opRead(t, b), opRead(t, c)
	require.Equal(t, opBits(va), opBits(vb), "one seed, two masks")
	require.NotEqual(t, opBits(va), opBits(vc), "two seeds, one mask")
	dropped := 0
	for _, v := range va {
		if v == 0 {
			dropped++
		}
	}
	require.InDelta(t, 0.25, float64(dropped)/float64(len(va)), 0.02, "fraction dropped")
}

// TestDropoutSeeded: the seed read on the device gives Dropout's mask of
// s*0x9E3779B9 + k, each op the seed written before it was recorded (a write
// waits for the work recorded before it), and a bad seed panics.
func TestDropoutSeeded(t *testing.T) {
	d := devtest.Open(t)
	seed := tensor.New(d, tensor.Int32, 1)
	defer seed.Release()
	setSeed := func(s uint32) {
		t.Helper()
		require.NoError(t, seed.SetBytes([]byte{byte(s), byte(s >> 8), byte(s >> 16), byte(s >> 24)}))
	}
	for _, dt := range opDTypes {
		x, held := opRand(t, d, 3, 2, dt, 33, 7)
		var outs []*tensor.Tensor
		var wants [][]float64
		for _, c := range []struct{ s, k uint32 }{{0xDEADBEEF, 1}, {0xDEADBEEF, 2}, {5, 1}, {0xFFFFFFFF, 0}} {
			setSeed(c.s)
			outs = append(outs, tensor.DropoutSeeded(x, 0.5, seed, c.k))
			want, _ := nnDropout(held, 0.5, c.s*0x9E3779B9+c.k, dt)
			wants = append(wants, want)
		}
		for i, out := range outs {
			got := opRead(t, out)
			for j := range got {
				if float64(got[j]) != wants[i][j] {
					t.Fatalf("DropoutSeeded %s, seed %d: [%d] = %g, want %g", dt, i, j, got[j], wants[i][j])
				}
			}
			out.Release()
		}
		x.Release()
	}

	z := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		x := tensor.Zeros(d, dt, shape...)
		t.Cleanup(x.Release)
		return x
	}
	x := z(tensor.Float32, 4)
	opPanics[*tensor.ShapeError](t, "DropoutSeeded, two seeds", func() { tensor.DropoutSeeded(x, 0.5, z(tensor.Int32, 2), 0) }, "DropoutSeeded", "[2]")
	opPanics[*tensor.DTypeError](t, "DropoutSeeded, fp32 seed", func() { tensor.DropoutSeeded(x, 0.5, z(tensor.Float32, 1), 0) }, "DropoutSeeded", "float32")
	opPanics[*tensor.UsageError](t, "DropoutSeeded p=1", func() { tensor.DropoutSeeded(x, 1, seed, 0) }, "DropoutSeeded", "[0, 1)")
	opPanics[*tensor.DTypeError](t, "DropoutSeeded of int32", func() { tensor.DropoutSeeded(z(tensor.Int32, 4), 0.5, seed, 0) }, "DropoutSeeded")
}

func nnOnes(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

func TestScaleByItem(t *testing.T) {
	d := devtest.Open(t)
	s, _ := opInput(t, d, []float32{-1.5}, tensor.Float32, 1)
	var checks []opCheck
	for _, in := range opDTypes {
		for _, out := range opDTypes {
			for _, shape := range [][]int{{1}, {7}, {33, 7}} {
				x, held := opRand(t, d, 3, 1, in, shape...)
				want, fill := make([]float64, len(held)), make([]float64, len(held))
				for i, v := range held {
					want[i] = ref.Round(0.5*-1.5*float64(v), out)
					fill[i] = ref.Round(0.5*-1.5, out)
				}
				what := fmt.Sprintf("%s to %s %v", in, out, shape)
				checks = append(checks,
					opWant(t, "ScaleByItem "+what, tensor.ScaleByItem(x, s, 0.5, out), out, shape, want, nil, ref.Tol(out, 2)),
					opWant(t, "BroadcastItem "+what, tensor.BroadcastItem(s, 0.5, out, shape...), out, shape, fill, nil, ref.Tol(out, 1)))
			}
		}
	}
	opRun(checks)
}

func TestAccumulate(t *testing.T) {
	d := devtest.Open(t)
	for _, dt := range opDTypes {
		for _, shape := range [][]int{{1}, {7}, {33, 7}} {
			dst, a := opRand(t, d, 1, 1, tensor.Float32, shape...)
			src, b := opRand(t, d, 2, 1, dt, shape...)
			require.NoError(t, tensor.Accumulate(dst, src))
			require.NoError(t, tensor.Accumulate(dst, src))
			ref.Check(t, fmt.Sprintf("Accumulate %s %v", dt, shape), opRead(t, dst),
				ref.Map2(a, b, tensor.Float32, func(a, b float64) float64 { return a + 2*b }), nil, ref.Tol(tensor.Float32, 2))
		}
	}
}

// nnLogProbs returns log-softmaxed random logits [rows, cols] and Int32
// labels, with the values they hold.
func nnLogProbs(t *testing.T, d *vk.Device, rows, cols int) (logp, labels *tensor.Tensor, lp []float32, y []int32) {
	t.Helper()
	logits, _ := opRand(t, d, 5, 3, tensor.Float32, rows, cols)
	logp = tensor.LogSoftmax(logits)
	t.Cleanup(logp.Release)
	y = make([]int32, rows)
	for r := range y {
		y[r] = int32((r * 7) % cols)
	}
	labels = targetLabels(t, d, y...)
	return logp, labels, opRead(t, logp), y
}

func TestNLL(t *testing.T) {
	d := devtest.Open(t)
	logp, labels, lp, y := nnLogProbs(t, d, 9, 5)
	want := make([]float64, len(y))
	for r, c := range y {
		want[r] = -float64(lp[r*5+int(c)])
	}
	out := tensor.NLL(logp, labels)
	defer out.Release()
	require.Equal(t, []int{9}, out.Shape())
	ref.Check(t, "NLL", opRead(t, out), want, nil, 0)
	// Labels out of range: target_test.go.
}

func TestCrossEntropyBackward(t *testing.T) {
	d := devtest.Open(t)
	const rows, cols, alpha = 9, 5, float32(1.0 / 9)
	logp, labels, lp, y := nnLogProbs(t, d, rows, cols)
	dy, _ := opInput(t, d, []float32{3}, tensor.Float32, 1)
	want, scale := make([]float64, len(lp)), make([]float64, len(lp))
	k := float64(alpha) * 3
	for i, v := range lp {
		g := math.Exp(float64(v))
		scale[i] = k * (g + 1)
		if int32(i%cols) == y[i/cols] {
			g--
		}
		want[i] = k * g
	}
	out := tensor.CrossEntropyBackward(logp, labels, dy, alpha)
	defer out.Release()
	require.Equal(t, []int{rows, cols}, out.Shape())
	ref.Check(t, "CrossEntropyBackward", opRead(t, out), want, scale, ref.Tol(tensor.Float32, ref.ExpRoundings))
}

// nnLayerNorm is the float64 reference of LayerNorm and its backward over
// rows of cols, with the scales of their errors for ref.Check.
type nnLayerNorm struct {
	y, yScale, stats     []float64
	dx, dxScale          []float64
	dgamma, dbeta, gbAbs []float64
}

func nnLayerNormRef(x, gamma, beta, dy []float32, cols int, eps float64) nnLayerNorm {
	var r nnLayerNorm
	n := len(x)
	r.y, r.yScale, r.dx, r.dxScale = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	r.dgamma, r.dbeta, r.gbAbs = make([]float64, cols), make([]float64, cols), make([]float64, cols)
	for lo := 0; lo < n; lo += cols {
		var mean, vr, mg, mgx float64
		for i := range cols {
			mean += float64(x[lo+i]) / float64(cols)
		}
		for i := range cols {
			vr += (float64(x[lo+i]) - mean) * (float64(x[lo+i]) - mean) / float64(cols)
		}
		rstd := 1 / math.Sqrt(vr+eps)
		r.stats = append(r.stats, mean, rstd)
		xhat := func(i int) float64 { return (float64(x[lo+i]) - mean) * rstd }
		for i := range cols {
			g := float64(dy[lo+i]) * float64(gamma[i])
			mg += g / float64(cols)
			mgx += g * xhat(i) / float64(cols)
		}
		for i := range cols {
			g := float64(dy[lo+i]) * float64(gamma[i])
			r.y[lo+i] = xhat(i)*float64(gamma[i]) + float64(beta[i])
			r.yScale[lo+i] = (math.Abs(xhat(i))+1)*math.Abs(float64(gamma[i])) + math.Abs(float64(beta[i]))
			r.dx[lo+i] = rstd * (g - mg - xhat(i)*mgx)
			r.dxScale[lo+i] = rstd * (math.Abs(g) + math.Abs(mg) + math.Abs(xhat(i)*mgx) + 1)
			r.dgamma[i] += float64(dy[lo+i]) * xhat(i)
			r.dbeta[i] += float64(dy[lo+i])
			r.gbAbs[i] += math.Abs(float64(dy[lo+i])) * (math.Abs(xhat(i)) + 1)
		}
	}
	return r
}

func TestLayerNorm(t *testing.T) {
	d := devtest.Open(t)
	const eps = 1e-5
	for _, shape := range [][]int{{1, 1}, {5, 7}, {3, 4, 16}, {2, 300}, {70, 3}, {130, 9}, {2, 5000}, {150, 8}} {
		cols := shape[len(shape)-1]
		rows := opShapeLen(shape) / cols
		x, xv := opRand(t, d, 11, 2, tensor.Float32, shape...)
		gamma, gv := opRand(t, d, 12, 1.5, tensor.Float32, cols)
		beta, bv := opRand(t, d, 13, 1, tensor.Float32, cols)
		dy, dyv := opRand(t, d, 14, 1, tensor.Float32, shape...)
		r := nnLayerNormRef(xv, gv, bv, dyv, cols, eps)
		tol := ref.Tol(tensor.Float32, 4*cols)
		what := fmt.Sprintf("LayerNorm %v", shape)

		y, stats := tensor.LayerNorm(x, gamma, beta, eps)
		dx, dgamma, dbeta := tensor.LayerNormBackward(dy, x, gamma, stats)
		for _, o := range []*tensor.Tensor{y, stats, dx, dgamma, dbeta} {
			defer o.Release()
		}
		require.Equal(t, shape, y.Shape(), what)
		require.Equal(t, []int{rows, 2}, stats.Shape(), what)
		require.Equal(t, shape, dx.Shape(), what)
		require.Equal(t, []int{cols}, dgamma.Shape(), what)
		require.Equal(t, []int{cols}, dbeta.Shape(), what)
		if cols > 1 { // a row of one element has no spread: its rstd is 1/sqrt(eps)
			ref.Check(t, what+" y", opRead(t, y), r.y, r.yScale, tol)
			ref.Check(t, what+" dx", opRead(t, dx), r.dx, r.dxScale, tol)
		}
		ref.Check(t, what+" stats", opRead(t, stats), r.stats, nil, tol)
		ref.Check(t, what+" dgamma", opRead(t, dgamma), r.dgamma, r.gbAbs, tol)
		ref.Check(t, what+" dbeta", opRead(t, dbeta), r.dbeta, r.gbAbs, tol)
	}
}

// TestLayerOpsErrors: an input that carries an error reaches every output
// computed from it (LayerNormBackward's dbeta is dy's sum alone), and
// Accumulate returns it.
func TestLayerOpsErrors(t *testing.T) {
	bad := stFailed(t, tensor.Float32, 4, 3)
	d := bad.Device()
	ok := func(shape ...int) *tensor.Tensor {
		x := tensor.Zeros(d, tensor.Float32, shape...)
		t.Cleanup(x.Release)
		return x
	}
	labels := tensor.Zeros(d, tensor.Int32, 4)
	t.Cleanup(labels.Release)
	y, stats := tensor.LayerNorm(bad, ok(3), ok(3), 1e-5)
	dx, dg, db := tensor.LayerNormBackward(ok(4, 3), bad, ok(3), ok(4, 2))
	defer db.Release()
	for i, out := range []*tensor.Tensor{
		tensor.Dropout(bad, 0.5, 1), tensor.ScaleByItem(bad, ok(1), 2, tensor.Float16),
		tensor.NLL(bad, labels), tensor.CrossEntropyBackward(bad, labels, ok(1), 1),
		y, stats, dx, dg,
	} {
		_, err := out.Float32s()
		require.ErrorIsf(t, err, vk.ErrOutOfDeviceMemory, "output %d", i)
	}
	require.ErrorIs(t, tensor.Accumulate(ok(4, 3), bad), vk.ErrOutOfDeviceMemory)
	require.ErrorIs(t, tensor.Accumulate(bad, ok(4, 3)), vk.ErrOutOfDeviceMemory)
}

func TestLayerOpsPanics(t *testing.T) {
	d := devtest.Open(t)
	z := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		x := tensor.Zeros(d, dt, shape...)
		t.Cleanup(x.Release)
		return x
	}
	f32, f16 := tensor.Float32, tensor.Float16
	opPanics[*tensor.UsageError](t, "Dropout p=1", func() { tensor.Dropout(z(f32, 2), 1, 0) }, "Dropout", "[0, 1)")
	opPanics[*tensor.UsageError](t, "Dropout p=NaN", func() { tensor.Dropout(z(f32, 2), float32(math.NaN()), 0) }, "Dropout")
	opPanics[*tensor.ShapeError](t, "ScaleByItem of two", func() { tensor.ScaleByItem(z(f32, 3), z(f32, 2), 1, f32) }, "ScaleByItem", "[2]")
	opPanics[*tensor.DTypeError](t, "BroadcastItem of fp16", func() { tensor.BroadcastItem(z(f16, 1), 1, f32, 3) }, "BroadcastItem", "float16")
	opPanics[*tensor.ShapeError](t, "Accumulate shapes", func() { tensor.Accumulate(z(f32, 3, 2), z(f32, 2, 3)) }, "Accumulate", "[3 2]", "[2 3]")
	opPanics[*tensor.DTypeError](t, "Accumulate into fp16", func() { tensor.Accumulate(z(f16, 3), z(f32, 3)) }, "Accumulate", "float16")
	i32 := tensor.Int32
	opPanics[*tensor.ShapeError](t, "NLL labels", func() { tensor.NLL(z(f32, 4, 3), z(i32, 3)) }, "NLL", "[4 3]", "[3]")
	opPanics[*tensor.DTypeError](t, "NLL fp16", func() { tensor.NLL(z(f16, 4, 3), z(i32, 4)) }, "NLL", "float16")
	opPanics[*tensor.ShapeError](t, "CrossEntropyBackward dy", func() { tensor.CrossEntropyBackward(z(f32, 4, 3), z(i32, 4), z(f32, 2), 1) },
		"CrossEntropyBackward", "[2]")
	opPanics[*tensor.ShapeError](t, "LayerNorm gamma", func() { tensor.LayerNorm(z(f32, 4, 3), z(f32, 4), z(f32, 3), 1e-5) }, "LayerNorm", "[4 3]", "[4]")
	opPanics[*tensor.DTypeError](t, "LayerNorm fp16", func() { tensor.LayerNorm(z(f16, 4, 3), z(f32, 3), z(f32, 3), 1e-5) }, "LayerNorm", "float16")
	opPanics[*tensor.ShapeError](t, "LayerNormBackward dy", func() { tensor.LayerNormBackward(z(f32, 3, 4), z(f32, 4, 3), z(f32, 3), z(f32, 4, 2)) },
		"LayerNormBackward", "[3 4]", "[4 3]")
}
