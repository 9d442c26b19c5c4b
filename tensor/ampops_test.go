package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Tests of LossScale. Helpers carry an "amp" prefix.

// ampState reads the scale and tracker.
func ampState(t *testing.T, ls *tensor.LossScale) (float64, int) {
	t.Helper()
	s, tr, err := ls.State()
	require.NoError(t, err)
	return s, tr
}

func ampItem(t *testing.T, x *tensor.Tensor) float32 {
	t.Helper()
	v, err := x.Item()
	require.NoError(t, err)
	return v
}

func TestLossScaleScale(t *testing.T) {
	d := devtest.Open(t)
	ls := tensor.NewLossScale(1024, 3)
	defer ls.Close()
	require.Nil(t, ls.Device(), "a state before the first Scale")
	s, tr := ampState(t, ls)
	require.Equal(t, 1024.0, s)
	require.Equal(t, 3, tr)
	for _, dt := range opDTypes {
		x, held := opInput(t, d, []float32{1.5, -2, 60, 0.25, 3}, dt, 5)
		out := ls.Scale(x)
		want := make([]float64, len(held))
		for i, v := range held {
			want[i] = float64(v) * 1024 // exact, and within fp16's range
		}
		opRun([]opCheck{opWant(t, "Scale "+dt.String(), out, dt, []int{5}, want, nil, 0)})
	}
	require.Equal(t, d, ls.Device())

	// Problems with the loss come back in the result.
	other := devtest.Open(t)
	y := tensor.Zeros(other, tensor.Float32, 1)
	defer y.Release()
	_, err := ls.Scale(y).Float32s()
	require.ErrorContains(t, err, "another device")
	gone := tensor.Zeros(d, tensor.Float32, 1)
	gone.Release()
	_, err = ls.Scale(gone).Float32s()
	require.ErrorContains(t, err, "released")
	opPanics[*tensor.UsageError](t, "Scale(nil)", func() { ls.Scale(nil) }, "LossScale.Scale", "nil")
}

// TestLossScaleUnscale: gradients of both dtypes, in several blocks and a
// chunk past the first, are multiplied by the reciprocal exactly as fp32
// arithmetic rounds it; found says whether one held an inf or NaN.
func TestLossScaleUnscale(t *testing.T) {
	defer tensor.SetTableChunks(2, 1)() // on a CPU driver, chunks longer than a GPU's, the last shorter
	d := devtest.Open(t, vk.Options{BlockSize: 64 << 10})
	const scale = 3072.0
	inv := float32(1 / float64(float32(scale)))
	ls := tensor.NewLossScale(scale, 0)
	defer ls.Close()
	loss, _ := opInput(t, d, []float32{1}, tensor.Float32, 1)
	ls.Scale(loss).Release()
	var tab tensor.BlockTable
	defer tab.Close()
	found := tensor.New(d, tensor.Float32, 1)
	defer found.Release()

	a, av := opRand(t, d, 1, 1000, tensor.Float32, 2*tensor.UnscaleChunk(d)+3616) // a block of its own, three chunks
	b, bv := opRand(t, d, 2, 1000, tensor.Float16, 7, 3)                          // odd: the last word is half padding
	grads := []*tensor.Tensor{a, nil, b}
	require.NoError(t, ls.Unscale(grads, found, &tab))
	require.Zero(t, ampItem(t, found))
	for i, v := range opRead(t, a) {
		require.Equalf(t, math.Float32bits(av[i]*inv), math.Float32bits(v), "fp32 gradient [%d]", i)
	}
	for i, v := range opRead(t, b) {
		want := float16.Fromfloat32(bv[i] * inv).Float32()
		require.Equalf(t, math.Float32bits(want), math.Float32bits(v), "fp16 gradient [%d]", i)
	}

	// An inf anywhere is found; the same gradients reuse the tables.
	raw, err := b.Bytes()
	require.NoError(t, err)
	raw[len(raw)-1], raw[len(raw)-2] = 0x7C, 0x00 // the last fp16 element: +inf
	require.NoError(t, b.SetBytes(raw))
	require.NoError(t, d.Wait())
	live := d.Stats().LiveBuffers
	require.NoError(t, ls.Unscale(grads, found, &tab))
	require.Equal(t, live, d.Stats().LiveBuffers, "buffers made for the same gradients")
	require.Equal(t, float32(1), ampItem(t, found))

	// Check finds it too, and leaves every gradient as it was.
	before := [][]float32{opRead(t, a), opRead(t, b)}
	require.NoError(t, ls.Check(grads, found, &tab))
	require.Equal(t, float32(1), ampItem(t, found))
	require.Equal(t, before, [][]float32{opRead(t, a), opRead(t, b)}, "gradients after Check")

	// Other gradients get tables of their own.
	c, cv := opRand(t, d, 3, 1, tensor.Float32, 5)
	require.NoError(t, ls.Unscale([]*tensor.Tensor{c}, found, &tab))
	require.Zero(t, ampItem(t, found))
	for i, v := range opRead(t, c) {
		require.Equal(t, math.Float32bits(cv[i]*inv), math.Float32bits(v))
	}
}

// TestLossScaleUpdate: PyTorch's rule, the floor and cap, the overflow
// count, and the setters that bypass the rule.
func TestLossScaleUpdate(t *testing.T) {
	d := devtest.Open(t)
	ls := tensor.NewLossScale(1024, 0)
	defer ls.Close()
	opPanics[*tensor.UsageError](t, "Update before Scale", func() { ls.Update(tensor.ScaleUpdate{}) }, "LossScale.Update", "no tensor scaled")
	one, _ := opInput(t, d, []float32{1}, tensor.Float32, 1)
	ls.Scale(one).Release()
	g, _ := opInput(t, d, []float32{1, 2}, tensor.Float32, 2)
	inf, _ := opInput(t, d, []float32{float32(math.Inf(1))}, tensor.Float32, 1)
	found := tensor.New(d, tensor.Float32, 1)
	defer found.Release()
	var tab tensor.BlockTable
	defer tab.Close()
	rule := tensor.ScaleUpdate{Growth: 2, Backoff: 0.5, Interval: 2, MinScale: 256, MaxScale: 4096}
	step := func(grad *tensor.Tensor) {
		t.Helper()
		require.NoError(t, ls.Unscale([]*tensor.Tensor{grad}, found, &tab))
		require.NoError(t, ls.Update(rule))
	}
	for i, c := range []struct {
		grad    *tensor.Tensor
		scale   float64
		tracker int
	}{
		{g, 1024, 1}, {g, 2048, 0}, {g, 2048, 1}, {g, 4096, 0}, {g, 4096, 1}, {g, 4096, 0}, // capped
		{inf, 2048, 0}, {inf, 1024, 0}, {inf, 512, 0}, {inf, 256, 0}, {inf, 256, 0}, // floored
	} {
		step(c.grad)
		s, tr := ampState(t, ls)
		require.Equalf(t, c.scale, s, "step %d: scale", i)
		require.Equalf(t, c.tracker, tr, "step %d: tracker", i)
	}
	n, err := ls.Overflows()
	require.NoError(t, err)
	require.Equal(t, 5, n)

	step(g) // tracker 1
	require.NoError(t, ls.SetScale(100))
	s, tr := ampState(t, ls)
	require.Equal(t, 100.0, s)
	require.Equal(t, 1, tr, "SetScale keeps the tracker")
	n, _ = ls.Overflows()
	require.Equal(t, 5, n, "SetScale keeps the overflow count")
	require.NoError(t, ls.Load(300, 7))
	s, tr = ampState(t, ls)
	require.Equal(t, 300.0, s)
	require.Equal(t, 7, tr)

	// Closed, the state is made again from the loaded values.
	require.NoError(t, ls.Close())
	require.NoError(t, ls.Close())
	require.Nil(t, ls.Device())
	out := ls.Scale(one)
	defer out.Release()
	require.Equal(t, float32(300), ampItem(t, out))
	n, _ = ls.Overflows()
	require.Zero(t, n)
}

// TestLossScaleUnscaleResult: the unscale flags a non-finite result, not
// only a non-finite input, in both dtypes: with inv_scale +inf (a scale
// below about 2.9e-39, or a loaded 0) a zero gradient becomes NaN, and with
// a finite inv_scale above 1 a finite gradient can overflow. Check flags
// the same and leaves the gradient as it was.
func TestLossScaleUnscaleResult(t *testing.T) {
	d := devtest.Open(t)
	ls := tensor.NewLossScale(1024, 0)
	defer ls.Close()
	one, _ := opInput(t, d, []float32{1}, tensor.Float32, 1)
	ls.Scale(one).Release()
	found := tensor.New(d, tensor.Float32, 1)
	defer found.Release()
	var tab tensor.BlockTable
	defer tab.Close()
	f32, f16 := tensor.Float32, tensor.Float16
	for i, c := range []struct {
		scale float64
		dt    tensor.DType
		vals  []float32
		found float32
	}{
		{1e-39, f32, []float32{0, 0, 0}, 1},
		{1e-39, f16, []float32{0, 0, 0}, 1},
		{0, f32, []float32{0, 0, 0}, 1},
		{0, f16, []float32{0, 1, 0}, 1},
		{1e-30, f32, []float32{0, 1e10, 0}, 1},  // 1e40 overflows
		{1e-30, f32, []float32{0, 1e-35, 0}, 0}, // 1e-5: finite
		{1e-30, f16, []float32{0, 60000, 0}, 1}, // 6e34 overflows
		{1e-2, f32, []float32{0, 700, 0}, 0},    // 70000: finite in fp32
		{1e-2, f16, []float32{0, 700, 0}, 1},    // and over fp16's 65504
		{1e-2, f16, []float32{0, 600, 0}, 0},
	} {
		require.NoError(t, ls.Load(c.scale, 0))
		// Three elements take the kernel's word-by-word path; 1001 put
		// the middle one, negated, in its vector loop, zeros around it.
		long := make([]float32, 1001)
		long[517] = -c.vals[1]
		for _, vals := range [][]float32{c.vals, long} {
			for _, check := range []bool{false, true} {
				g, _ := opInput(t, d, vals, c.dt, len(vals))
				run := ls.Unscale
				if check {
					run = ls.Check
				}
				require.NoError(t, run([]*tensor.Tensor{g}, found, &tab))
				require.Equalf(t, c.found, ampItem(t, found), "case %d: scale %g, %s gradient of %d, check only %v",
					i, c.scale, c.dt, len(vals), check)
				if check {
					require.Equalf(t, vals, opRead(t, g), "case %d: Check changed the gradient", i)
				}
			}
		}
	}
}
