package tensor_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Tests of the fused optimizer updates against float64 references.
// Helpers carry an "opt" prefix.

// optShapes are the parameters of the tests on d: one element, a matrix,
// and one longer than a chunk of d's tables.
func optShapes(d *vk.Device) [][]int { return [][]int{{1}, {7, 5}, {tensor.OptChunk(d) + 1808}} }

// optRig is parameters with their gradients and an OptimizerState.
type optRig struct {
	values, grads []*tensor.Tensor
	w             [][]float64 // the reference's weights
	st            *tensor.OptimizerState
}

func newOptRig(t *testing.T, d *vk.Device, moments int) *optRig {
	t.Helper()
	r := &optRig{}
	for i, shape := range optShapes(d) {
		v, held := opRand(t, d, uint64(20+i), 1, tensor.Float32, shape...)
		g := tensor.Zeros(d, tensor.Float32, shape...)
		t.Cleanup(g.Release)
		r.values, r.grads = append(r.values, v), append(r.grads, g)
		r.w = append(r.w, ref.Map(held, tensor.Float32, func(x float64) float64 { return x }))
	}
	st, err := tensor.NewOptimizerState(r.values, r.grads, moments)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	r.st = st
	return r
}

// setGrads uploads random gradients for step s and returns them.
func (r *optRig) setGrads(t *testing.T, s int) [][]float64 {
	t.Helper()
	var gs [][]float64
	for i, g := range r.grads {
		v := ref.Rand(g.Len(), uint64(100*s+i))
		require.NoError(t, g.SetBytes(optBytes(v)))
		gs = append(gs, ref.Map(v, tensor.Float32, func(x float64) float64 { return x }))
	}
	return gs
}

func optBytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// check compares the weights with the reference's.
func (r *optRig) check(t *testing.T, what string) {
	t.Helper()
	for i, v := range r.values {
		scale := make([]float64, len(r.w[i]))
		for j, w := range r.w[i] {
			scale[j] = math.Abs(w) + 0.1 // the steps are about lr
		}
		ref.Check(t, fmt.Sprintf("%s: parameter %d", what, i), opRead(t, v), r.w[i], scale, 1e-5)
	}
}

func TestSGDStep(t *testing.T) {
	for _, c := range []tensor.SGDConfig{
		{LR: 0.1},
		{LR: 0.1, WeightDecay: 0.01},
		{LR: 0.05, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01},
		{LR: 0.05, Momentum: 0.9, Nesterov: true},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			d := devtest.Open(t)
			moments := 0
			if c.Momentum != 0 {
				moments = 1
			}
			r := newOptRig(t, d, moments)
			buf := make([][]float64, len(r.w))
			for s := range 3 {
				gs := r.setGrads(t, s)
				require.NoError(t, r.st.SGDStep(c, nil))
				for i := range r.w {
					buf[i] = optSGD(c, s == 0, r.w[i], gs[i], buf[i])
				}
			}
			r.check(t, "SGD")
			n, err := r.st.Steps()
			require.NoError(t, err)
			require.Equal(t, 3, n)
		})
	}
}

// optSGD is PyTorch's SGD step on w, returning the momentum buffer.
func optSGD(c tensor.SGDConfig, first bool, w, g, buf []float64) []float64 {
	mom, damp := float64(c.Momentum), float64(c.Dampening)
	if buf == nil {
		buf = make([]float64, len(w))
	}
	for j := range w {
		gj := g[j] + float64(c.WeightDecay)*w[j]
		if mom != 0 {
			if first {
				buf[j] = gj
			} else {
				buf[j] = mom*buf[j] + (1-damp)*gj
			}
			if c.Nesterov {
				gj += mom * buf[j]
			} else {
				gj = buf[j]
			}
		}
		w[j] -= float64(c.LR) * gj
	}
	return buf
}

// TestAdamStep runs on a CPU driver with a tensor in chunks longer than a
// GPU's, the last one shorter (tensor's tableChunk).
func TestAdamStep(t *testing.T) {
	defer tensor.SetTableChunks(2, 1)()
	for _, c := range []tensor.AdamConfig{
		{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
		{LR: 0.01, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1},
		{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Decoupled: true},
	} {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			d := devtest.Open(t)
			r := newOptRig(t, d, 2)
			m, v := make([][]float64, len(r.w)), make([][]float64, len(r.w))
			for i := range r.w {
				m[i], v[i] = make([]float64, len(r.w[i])), make([]float64, len(r.w[i]))
			}
			for s := 1; s <= 3; s++ {
				gs := r.setGrads(t, s)
				require.NoError(t, r.st.AdamStep(c, nil))
				for i := range r.w {
					optAdam(c, s, r.w[i], gs[i], m[i], v[i])
				}
			}
			r.check(t, "Adam")
			for i, mt := range r.st.Moments(0) {
				scale := make([]float64, len(m[i])) // the moment sums gradients of both signs
				for j := range scale {
					scale[j] = math.Abs(m[i][j]) + 0.01
				}
				ref.Check(t, fmt.Sprintf("first moment %d", i), opRead(t, mt), m[i], scale, 1e-5)
			}
		})
	}
}

// TestLRTensor: a learning rate read from a tensor (each step the value
// written before it was recorded) gives the bits of the same rates pushed,
// for Adam (weight decay coupled and decoupled), SGD (with momentum and
// Nesterov) and Adadelta; a bad tensor panics. (nn's optimizers always
// step this way: nn's tests cover half copies and groups.)
func TestLRTensor(t *testing.T) {
	d := devtest.Open(t)
	type stepFn func(st *tensor.OptimizerState, lr float32, lrT *tensor.Tensor) error
	adam := func(decoupled bool) stepFn {
		return func(st *tensor.OptimizerState, lr float32, lrT *tensor.Tensor) error {
			return st.AdamStep(tensor.AdamConfig{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Decoupled: decoupled, LRTensor: lrT}, nil)
		}
	}
	sgd := func(st *tensor.OptimizerState, lr float32, lrT *tensor.Tensor) error {
		return st.SGDStep(tensor.SGDConfig{LR: lr, Momentum: 0.9, WeightDecay: 0.1, Nesterov: true, LRTensor: lrT}, nil)
	}
	adadelta := func(st *tensor.OptimizerState, lr float32, lrT *tensor.Tensor) error {
		return st.AdadeltaStep(tensor.AdadeltaConfig{LR: lr, Rho: 0.9, Eps: 1e-6, WeightDecay: 0.1, LRTensor: lrT}, nil)
	}
	lrs := []float32{0.01, 0.003, 0.02}
	for _, c := range []struct {
		name    string
		moments int
		step    stepFn
	}{{"Adam", 2, adam(false)}, {"AdamW", 2, adam(true)}, {"SGD", 1, sgd}, {"Adadelta", 2, adadelta}} {
		push, dev := newOptRig(t, d, c.moments), newOptRig(t, d, c.moments)
		lrT := tensor.New(d, tensor.Float32, 1)
		t.Cleanup(lrT.Release)
		for s, lr := range lrs {
			for _, r := range []*optRig{push, dev} {
				r.setGrads(t, s+1)
			}
			require.NoError(t, c.step(push.st, lr, nil))
			require.NoError(t, lrT.SetFloat32s([]float32{lr}))
			require.NoError(t, c.step(dev.st, 7, lrT)) // 7 is not read
		}
		start := newOptRig(t, d, 0) // the values before any step
		for i := range push.values {
			pushed, read := opBits(opRead(t, push.values[i])), opBits(opRead(t, dev.values[i]))
			require.Equal(t, pushed, read, "%s: parameter %d", c.name, i)
			require.NotEqual(t, opBits(opRead(t, start.values[i])), read, "%s: parameter %d did not move", c.name, i)
		}
		r := newOptRig(t, d, c.moments)
		for _, bad := range []*tensor.Tensor{tensor.New(d, tensor.Float32, 2), tensor.New(d, tensor.Float16, 1)} {
			t.Cleanup(bad.Release)
			opPanics[*tensor.DTypeError](t, c.name+" LRTensor "+bad.String(), func() { _ = c.step(r.st, 1, bad) }, "Step", "LRTensor")
		}
		gone := tensor.New(d, tensor.Float32, 1)
		gone.Release()
		opPanics[*tensor.UsageError](t, c.name+" released LRTensor", func() { _ = c.step(r.st, 1, gone) }, "Step", "released")
	}
}

// optAdam is PyTorch's Adam (or AdamW) step t on w.
func optAdam(c tensor.AdamConfig, t int, w, g, m, v []float64) {
	b1, b2, lr, wd := float64(c.Beta1), float64(c.Beta2), float64(c.LR), float64(c.WeightDecay)
	bc1, bc2 := 1-math.Pow(b1, float64(t)), math.Sqrt(1-math.Pow(b2, float64(t)))
	for j := range w {
		gj := g[j]
		if c.Decoupled {
			w[j] *= 1 - lr*wd
		} else {
			gj += wd * w[j]
		}
		m[j] = b1*m[j] + (1-b1)*gj
		v[j] = b2*v[j] + (1-b2)*gj*gj
		w[j] -= lr / bc1 * m[j] / (math.Sqrt(v[j])/bc2 + float64(c.Eps))
	}
}

// TestOptimizerSkipAndCosts: a step whose flag is set changes nothing, not
// even the count; a step is one dispatch per block group and one for the
// count, with no host wait and, after the first, no allocation.
func TestOptimizerSkipAndCosts(t *testing.T) {
	d := devtest.Open(t)
	r := newOptRig(t, d, 2)
	c := tensor.AdamConfig{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	r.setGrads(t, 1)
	set, _ := opInput(t, d, []float32{1}, tensor.Float32, 1)
	require.NoError(t, r.st.AdamStep(c, set))
	r.check(t, "skipped step")
	n, err := r.st.Steps()
	require.NoError(t, err)
	require.Equal(t, 0, n)

	clear, _ := opInput(t, d, []float32{0}, tensor.Float32, 1)
	require.NoError(t, r.st.AdamStep(c, clear)) // builds the tables
	require.NoError(t, d.Wait())
	before := d.Stats()
	require.NoError(t, r.st.AdamStep(c, clear))
	after := d.Stats()
	require.Equal(t, uint64(2), after.Dispatches-before.Dispatches, "dispatches of a step over one block")
	require.Equal(t, before.Waits, after.Waits, "host waits")
	require.Equal(t, before.LiveBuffers, after.LiveBuffers, "buffers")
	require.Equal(t, before.Pipelines, after.Pipelines, "pipelines")

	require.NoError(t, r.st.SetSteps(41))
	require.NoError(t, r.st.SGDStep(tensor.SGDConfig{LR: 0.1}, clear))
	n, err = r.st.Steps()
	require.NoError(t, err)
	require.Equal(t, 42, n)
}

// TestOptimizerAcrossBlocks: with small memory blocks the parameters spread
// over several, and each group of blocks is one dispatch with its table.
func TestOptimizerAcrossBlocks(t *testing.T) {
	d := devtest.Open(t, vk.Options{BlockSize: 64 << 10})
	c := tensor.SGDConfig{LR: 0.05, Momentum: 0.9, WeightDecay: 0.01}
	r := newOptRig(t, d, 1)
	buf := make([][]float64, len(r.w))
	for s := range 2 {
		gs := r.setGrads(t, s)
		require.NoError(t, r.st.SGDStep(c, nil))
		for i := range r.w {
			buf[i] = optSGD(c, s == 0, r.w[i], gs[i], buf[i])
		}
	}
	r.check(t, "SGD across blocks")
	require.GreaterOrEqual(t, d.Stats().MemoryBlocks, 3, "blocks the parameters spread over")
}

// TestOptimizerTableWriteFails: when the upload of a block table fails, the
// table's buffer is freed (it leaked once), the error comes back, and the
// next step builds the table.
func TestOptimizerTableWriteFails(t *testing.T) {
	// Every host write goes through the staging ring, made on the first
	// write: the fault fails it, after the table's buffer is allocated.
	d := devtest.Open(t, vk.Options{ForceStaging: true})
	values := []*tensor.Tensor{tensor.Zeros(d, tensor.Float32, 3), tensor.Zeros(d, tensor.Float32, 5)}
	grads := []*tensor.Tensor{tensor.Zeros(d, tensor.Float32, 3), tensor.Zeros(d, tensor.Float32, 5)}
	for _, x := range append(values, grads...) {
		defer x.Release()
	}
	st, err := tensor.NewOptimizerState(values, grads, 1)
	require.NoError(t, err)
	defer st.Close()
	live := d.Stats().LiveBuffers
	d.InjectFaults(vk.Faults{AllocN: 1})
	err = st.SGDStep(tensor.SGDConfig{LR: 0.1, Momentum: 0.9}, nil)
	d.InjectFaults(vk.Faults{})
	require.ErrorIs(t, err, vk.ErrOutOfDeviceMemory)
	require.Equal(t, live, d.Stats().LiveBuffers, "live buffers after a failed table upload")
	require.NoError(t, st.SGDStep(tensor.SGDConfig{LR: 0.1, Momentum: 0.9}, nil))
	n, err := st.Steps()
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestOptimizerPanics(t *testing.T) {
	d := devtest.Open(t)
	z := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		x := tensor.Zeros(d, dt, shape...)
		t.Cleanup(x.Release)
		return x
	}
	f32 := tensor.Float32
	vs, gs := []*tensor.Tensor{z(f32, 3)}, []*tensor.Tensor{z(f32, 3)}
	opPanics[*tensor.UsageError](t, "no parameters", func() { tensor.NewOptimizerState(nil, nil, 0) }, "NewOptimizerState")
	opPanics[*tensor.UsageError](t, "3 moments", func() { tensor.NewOptimizerState(vs, gs, 3) }, "NewOptimizerState", "3 moments")
	opPanics[*tensor.ShapeError](t, "gradient shape", func() { tensor.NewOptimizerState(vs, []*tensor.Tensor{z(f32, 4)}, 0) },
		"NewOptimizerState", "[3]", "[4]")
	opPanics[*tensor.DTypeError](t, "fp16 gradient", func() { tensor.NewOptimizerState(vs, []*tensor.Tensor{z(tensor.Float16, 3)}, 0) },
		"NewOptimizerState", "float16")
	st, err := tensor.NewOptimizerState(vs, gs, 0)
	require.NoError(t, err)
	defer st.Close()
	opPanics[*tensor.UsageError](t, "momentum without a moment", func() { st.SGDStep(tensor.SGDConfig{LR: 1, Momentum: 0.5}, nil) },
		"SGDStep", "moment")
	opPanics[*tensor.UsageError](t, "Adam without moments", func() { st.AdamStep(tensor.AdamConfig{LR: 1}, nil) }, "AdamStep")
	opPanics[*tensor.ShapeError](t, "flag of two", func() { st.SGDStep(tensor.SGDConfig{LR: 1}, z(f32, 2)) }, "SGDStep", "[2]")

	// A tensor twice would be updated twice.
	two := []*tensor.Tensor{z(f32, 3), z(f32, 3)}
	opPanics[*tensor.UsageError](t, "a value twice", func() { tensor.NewOptimizerState([]*tensor.Tensor{vs[0], vs[0]}, two, 0) },
		"NewOptimizerState", "value 1 is also value 0")
	opPanics[*tensor.UsageError](t, "a gradient as a value", func() { tensor.NewOptimizerState(vs, vs, 0) },
		"NewOptimizerState", "gradient 0 is also value 0")
	opPanics[*tensor.ShapeError](t, "SetParam of another shape", func() { st.SetParam(0, z(f32, 4), z(f32, 4)) }, "SetParam", "[4]", "[3]")
	opPanics[*tensor.UsageError](t, "SetParam out of range", func() { st.SetParam(1, z(f32, 3), z(f32, 3)) }, "SetParam", "1 of 1")
}

// TestOptimizerSetParam: parameter tensors replaced after a step are
// updated from then on, through rebuilt tables, with the moments kept; the
// released ones' memory, taken by another tensor, is left alone.
func TestOptimizerSetParam(t *testing.T) {
	d := devtest.Open(t)
	r := newOptRig(t, d, 1)
	c := tensor.SGDConfig{LR: 0.5, Momentum: 0.5}
	gs := r.setGrads(t, 0)
	require.NoError(t, r.st.SGDStep(c, nil))
	buf := make([][]float64, len(r.w))
	for i := range r.w {
		buf[i] = optSGD(c, true, r.w[i], gs[i], nil)
	}
	// Parameter 1 moves to new tensors holding its values.
	v, _ := opInput(t, d, opRead(t, r.values[1]), tensor.Float32, optShapes(d)[1]...)
	g := tensor.New(d, tensor.Float32, optShapes(d)[1]...)
	t.Cleanup(g.Release)
	r.values[1].Release()
	r.grads[1].Release()
	other, held := opRand(t, d, 99, 1, tensor.Float32, optShapes(d)[1]...)
	r.values[1], r.grads[1] = v, g
	r.st.SetParam(1, v, g)
	gs = r.setGrads(t, 1)
	require.NoError(t, r.st.SGDStep(c, nil))
	for i := range r.w {
		optSGD(c, false, r.w[i], gs[i], buf[i])
	}
	r.check(t, "after SetParam")
	require.Equal(t, held, opRead(t, other), "the tensor in the released memory")
}
