package tensor

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// The fused optimizer updates: one dispatch per group of memory blocks
// updates every parameter, reached through a block table (blocktable.go).
// Each update reads a flag and skips itself on the device when it is set,
// so a gradient scaler never makes a step wait for the host.

// optChunk is the number of elements one workgroup of sgd or adam updates
// (tableChunk's base).
const optChunk = 8192

// optLayout is the table of sgd.comp and adam.comp (shaders/include/
// optim.glsl): per chunk, the word offsets of the parameter, its gradient
// and its two moments, then the element count.
var optLayout = tableLayout{
	name:  "optimizer",
	cols:  4,
	entry: 32,
	chunks: func(raw []byte, first [maxTableCols]int64, row []*Tensor) []byte {
		n, chunk := row[0].n, tableChunk(row[0].dev, row[0].n, optChunk)
		for done := 0; done < n; done += chunk {
			for _, off := range first[:4] {
				raw = binary.LittleEndian.AppendUint32(raw, uint32(off+int64(done)))
			}
			raw = binary.LittleEndian.AppendUint32(raw, uint32(min(chunk, n-done)))
			raw = append(raw, make([]byte, 12)...)
		}
		return raw
	},
}

// OptimizerState is what a fused optimizer keeps on the device for a fixed
// list of Float32 parameters: the moment tensors of each parameter, a count
// of the steps taken, and the block tables through which one dispatch per
// group of memory blocks updates every parameter. The parameters and their
// gradients stay the caller's. An OptimizerState is not safe for
// concurrent use.
type OptimizerState struct {
	values, grads []*Tensor
	moments       [2][]*Tensor // per parameter; nil slices past the state's moments
	cells         []*Tensor    // per parameter: value, gradient, moments (the table's rows)
	steps         *Tensor      // one uint32 word (as Float32 storage): the steps taken
	never         *Tensor      // an always-zero flag, for steps that are not skipped
	table         blockTable
	frozen        []bool    // per parameter: left out of the steps (SetFrozen)
	halves        []*Tensor // per parameter: its half copy or nil (SetHalfCopy); nil when none has one
	halfDT        DType     // the half copies' dtype
	// vec4 lets the kernels update aligned chunks four elements per access
	// (their VEC4 constant); SwiftShader runs those about 1.5x slower than
	// word by word.
	vec4 bool
}

// NewOptimizerState returns the state of an optimizer over the parameters
// values with gradients grads (Float32, pairwise of one shape, on one
// device, no tensor twice), with moments (0, 1 or 2) zero moment tensors
// per parameter and a step count of 0. Misuse panics; a failed allocation
// is returned, with everything made so far released.
func NewOptimizerState(values, grads []*Tensor, moments int) (*OptimizerState, error) {
	const op = "NewOptimizerState"
	if len(values) == 0 || len(values) != len(grads) || moments < 0 || moments > 2 {
		usagePanic(op, "%d values, %d gradients and %d moments: want as many gradients as values, at least one, and 0 to 2 moments",
			len(values), len(grads), moments)
	}
	sameDevice(op, append(append([]*Tensor{}, values...), grads...)...)
	for i, v := range values {
		checkFloat32(op, v, grads[i])
		if !slices.Equal(v.shape, grads[i].shape) {
			shapePanic(op, v.shape, grads[i].shape, "parameter %d and its gradient differ", i)
		}
	}
	checkDistinct(op, values, grads)
	d := values[0].dev
	s := &OptimizerState{values: values, grads: grads, frozen: make([]bool, len(values)), vec4: formsOf(d).optimVec4}
	var made []*Tensor
	keep := func(t *Tensor) *Tensor { made = append(made, t); return t }
	for m := range moments {
		for _, v := range values {
			s.moments[m] = append(s.moments[m], keep(Zeros(d, Float32, v.shape...)))
		}
	}
	s.steps, s.never = keep(Zeros(d, Float32, 1)), keep(Zeros(d, Float32, 1))
	if err := firstErr(made...); err != nil {
		for _, t := range made {
			t.Release()
		}
		return nil, fmt.Errorf("tensor: %s: %w", op, err)
	}
	for i := range values {
		s.cells = append(s.cells, values[i], grads[i], s.moment(0, i), s.moment(1, i))
	}
	return s, nil
}

// SetParam makes value, with gradient grad, parameter i of the state from
// the next step on, in place of the tensors it had: a caller whose
// parameter's tensors were replaced keeps the moments and the step count,
// and the tables are rebuilt for the new memory. value and grad must be
// live Float32 tensors of parameter i's shape on the state's device, else
// it panics.
func (s *OptimizerState) SetParam(i int, value, grad *Tensor) {
	const op = "SetParam"
	if s == nil || s.steps == nil {
		usagePanic(op, "closed or zero OptimizerState")
	}
	if i < 0 || i >= len(s.values) {
		usagePanic(op, "parameter %d of %d", i, len(s.values))
	}
	sameDevice(op, s.steps, value, grad)
	checkFloat32(op, value, grad)
	for _, x := range []*Tensor{value, grad} {
		if !slices.Equal(x.shape, s.values[i].shape) {
			shapePanic(op, x.shape, s.values[i].shape, "parameter %d's moments have the second shape", i)
		}
	}
	values, grads := slices.Clone(s.values), slices.Clone(s.grads)
	values[i], grads[i] = value, grad
	checkDistinct(op, values, grads)
	s.values[i], s.grads[i] = value, grad
	s.cells[4*i], s.cells[4*i+1] = value, grad
}

// checkDistinct panics if a tensor is two parameters' value or gradient,
// or both: a step would update it twice.
func checkDistinct(op string, values, grads []*Tensor) {
	seen := make(map[*Tensor]string, 2*len(values))
	for i := range values {
		for _, c := range []struct {
			x    *Tensor
			what string
		}{{values[i], fmt.Sprintf("value %d", i)}, {grads[i], fmt.Sprintf("gradient %d", i)}} {
			if prev, ok := seen[c.x]; ok {
				usagePanic(op, "%s is also %s: it would be updated twice", c.what, prev)
			}
			seen[c.x] = c.what
		}
	}
}

func (s *OptimizerState) moment(m, i int) *Tensor {
	if s.moments[m] == nil {
		return nil
	}
	return s.moments[m][i]
}

// Moments returns moment m (0 or 1) of every parameter: SGD's momentum
// buffers, or Adam's first and second moments. It is nil for a moment the
// state does not keep. The tensors belong to the state.
func (s *OptimizerState) Moments(m int) []*Tensor {
	if m < 0 || m >= len(s.moments) {
		usagePanic("Moments", "moment %d: want 0 or 1", m)
	}
	return s.moments[m]
}

// Steps returns the number of steps taken, skipped ones not counted,
// waiting for the device.
func (s *OptimizerState) Steps() (int, error) {
	raw, err := s.steps.raw("Steps")
	if err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint32(raw)), nil
}

// SetSteps sets the step count (from a checkpoint). n must fit in 32 bits.
func (s *OptimizerState) SetSteps(n int) error {
	if n < 0 || n > 1<<32-1 {
		usagePanic("SetSteps", "step count %d does not fit in 32 bits", n)
	}
	return s.steps.SetBytes(binary.LittleEndian.AppendUint32(nil, uint32(n)))
}

// SGDConfig is one SGD step with PyTorch's formulas: weight decay, then
// momentum with dampening (the first step starts the buffer at the
// gradient), optionally Nesterov.
type SGDConfig struct {
	LR, Momentum, Dampening, WeightDecay float32
	Nesterov                             bool
	// LRTensor, when set, is read in place of LR when the step runs, as
	// AdamConfig.LRTensor.
	LRTensor *Tensor
	// Unscale, when set, has the step unscale each gradient as it reads
	// it, as AdamConfig.Unscale (PyTorch's fused SGD).
	Unscale *LossScale
}

// SGDStep records an SGD step over every parameter unless skip, a
// one-element Float32 tensor, is non-zero when the step runs on the device.
// With a nil skip the step is skipped while the device's assert is raised
// (a loss was given a class index out of range and no read has reported it
// yet; see AssertError). A skipped step changes nothing, not even the step
// count. With a momentum the state must keep one moment or more. Like every
// in-place op it returns errors (a gradient's or skip's, or a failed
// recording) and never makes a parameter carry one.
func (s *OptimizerState) SGDStep(c SGDConfig, skip *Tensor) error {
	if c.Momentum != 0 && s.moments[0] == nil {
		usagePanic("SGDStep", "a momentum needs an OptimizerState with a moment")
	}
	p := kernels.SgdPush{Lr: c.LR, Momentum: c.Momentum, Dampening: c.Dampening, WeightDecay: c.WeightDecay, Nesterov: boolWord(c.Nesterov)}
	s.noHalves("SGDStep")
	lr, lrDev, err := s.lrBinding("SGDStep", c.LRTensor)
	if err != nil {
		return err
	}
	if lrDev {
		p.Lr = 0 // read on the device: a constant push, so that a traced step matches its graph
	}
	scale, err := s.scaleBinding("SGDStep", c.Unscale)
	if err != nil {
		return err
	}
	return s.step("SGDStep", skip, &optLayout, s.active(), func(g *blockGroup, flag *Tensor) error {
		p.Nchunks = uint32(g.chunks)
		spec := kernels.SgdSpec{Vec4: s.vec4, LrDev: lrDev, Unscale: c.Unscale != nil}
		b := kernels.SgdBind{P: g.bind[0], G: g.bind[1], M: g.bind[2], Table: g.table, Found: flag.buf, Steps: s.steps.buf, Lr: lr.buf, ScaleState: scale.buf}
		if s.texels(flag.dev, b.P, b.G, b.M) {
			return kernels.SgdTex(flag.dev, g.grid(), kernels.SgdTexSpec(spec), kernels.SgdTexPush(p), kernels.SgdTexBind{
				P: b.P, G: b.G, M: b.M, Table: b.Table, Found: b.Found, Steps: b.Steps, Lr: b.Lr, ScaleState: b.ScaleState,
				ParamTex: b.P, GradTex: b.G, M1Tex: b.M})
		}
		return kernels.Sgd(flag.dev, g.grid(), spec, p, b)
	})
}

// AdamConfig is one Adam step with PyTorch's formulas and bias correction;
// Decoupled makes it AdamW (weight decay applied to the weight).
type AdamConfig struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Decoupled                          bool
	// LRTensor, when set, is a one-element Float32 tensor the step reads
	// its learning rate from when it runs, in place of LR (PyTorch's Adam
	// with a tensor lr and capturable=True): a captured step replays with
	// the rate written into it before each replay.
	LRTensor *Tensor
	// Unscale, when set, has the step multiply each gradient by the loss
	// scale's inverse as it reads it, where LossScale.Unscale would have
	// multiplied it in memory before the step: the same products, so the
	// same update, with one pass over the gradients fewer (PyTorch's fused
	// Adam, which takes the scaler's grad_scale). The gradients stay scaled.
	// The scale is read when the step runs; LossScale.Check over the same
	// gradients must come first, into the step's skip flag, so that no
	// inf or NaN product reaches the update.
	Unscale *LossScale
}

// AdamStep records an Adam step over every parameter unless skip is
// non-zero when it runs, as SGDStep does. The state must keep two moments.
func (s *OptimizerState) AdamStep(c AdamConfig, skip *Tensor) error {
	if s.moments[1] == nil {
		usagePanic("AdamStep", "Adam needs an OptimizerState with two moments")
	}
	p := kernels.AdamPush{Lr: c.LR, Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.Eps, WeightDecay: c.WeightDecay, Decoupled: boolWord(c.Decoupled)}
	l, cells, spec, h := &optLayout, s.active(), kernels.AdamSpec{Vec4: s.vec4}, 0
	if s.halves != nil {
		l, cells, spec.HalfDT, h = &adamHalfLayout, s.halfRows(), s.halfDT.code(), 4
	}
	lr, lrDev, err := s.lrBinding("AdamStep", c.LRTensor)
	if err != nil {
		return err
	}
	spec.LrDev = lrDev
	if lrDev {
		p.Lr = 0 // read on the device: a constant push, so that a traced step matches its graph
	}
	scale, err := s.scaleBinding("AdamStep", c.Unscale)
	if err != nil {
		return err
	}
	spec.Unscale = c.Unscale != nil
	return s.step("AdamStep", skip, l, cells, func(g *blockGroup, flag *Tensor) error {
		p.Nchunks = uint32(g.chunks)
		b := kernels.AdamBind{P: g.bind[0], G: g.bind[1], M: g.bind[2], Table: g.table, Found: flag.buf, Steps: s.steps.buf, V: g.bind[3], H: g.bind[h], Lr: lr.buf,
			ScaleState: scale.buf}
		if s.texels(flag.dev, b.P, b.G, b.M, b.V) {
			return kernels.AdamTex(flag.dev, g.grid(), kernels.AdamTexSpec(spec), kernels.AdamTexPush(p), kernels.AdamTexBind{
				P: b.P, G: b.G, M: b.M, Table: b.Table, Found: b.Found, Steps: b.Steps, V: b.V, H: b.H, Lr: b.Lr, ScaleState: b.ScaleState,
				ParamTex: b.P, GradTex: b.G, M1Tex: b.M, M2Tex: b.V})
		}
		return kernels.Adam(flag.dev, g.grid(), spec, p, b)
	})
}

// texels reports whether the optimizer kernels' texel forms serve a group
// whose blocks are bufs: the same update, its vec4 path reading texels (the
// same bits; on lavapipe Adam moves about 1.45 times the bytes a second,
// tools/bench stream/adam-f32).
func (s *OptimizerState) texels(d *vk.Device, bufs ...*vk.Buffer) bool {
	return s.vec4 && texelsServe(d, bufs...)
}

// lrBinding checks a step's LRTensor (nil: the rate is pushed) and
// returns the tensor its kernel binds for the rate, whether the kernel
// reads it, and the error the tensor carries. Without one the step count is
// bound, not read.
func (s *OptimizerState) lrBinding(op string, t *Tensor) (*Tensor, bool, error) {
	if s == nil || s.steps == nil {
		usagePanic(op, "closed or zero OptimizerState")
	}
	if t == nil {
		return s.steps, false, nil
	}
	sameDevice(op, t, s.steps)
	if t.n != 1 || t.dtype != Float32 {
		panic(&DTypeError{Op: op, Got: t.dtype, Want: fmt.Sprintf("a one-element float32 LRTensor, not shape %v", t.shape)})
	}
	return t, true, firstErr(t)
}

// scaleBinding checks a step's loss scale to unscale by (nil: none) and
// returns the tensor its kernel binds for it, and the error that tensor
// carries. Without one the step count is bound, not read.
func (s *OptimizerState) scaleBinding(op string, ls *LossScale) (*Tensor, error) {
	if ls == nil {
		return s.steps, nil
	}
	ls.onDevice(op)
	sameDevice(op, ls.state, s.steps)
	return ls.state, firstErr(ls.state)
}

// step records update over every group of the table, then the step count.
// The table has layout l and rows cells (of the parameters not frozen).
func (s *OptimizerState) step(op string, skip *Tensor, l *tableLayout, cells []*Tensor, update func(g *blockGroup, flag *Tensor) error) error {
	if s == nil || s.steps == nil {
		usagePanic(op, "closed or zero OptimizerState")
	}
	if skip != nil {
		sameDevice(op, skip, s.steps)
		checkItem(op, skip)
	} else if skip = assertRecord(s.steps.dev); skip == nil {
		skip = s.never
	}
	for _, c := range slices.Concat(s.cells, s.halves) {
		if c != nil {
			c.live(op)
		}
	}
	if err := firstErr(skip); err != nil {
		return err
	}
	if err := firstErr(slices.Concat(s.cells, s.halves)...); err != nil {
		return err
	}
	if err := s.table.update(s.steps.dev, l, cells); err != nil {
		return err
	}
	for i := range s.table.groups {
		if err := update(&s.table.groups[i], skip); err != nil {
			return opErr(op, err)
		}
	}
	return opErr(op, kernels.StepCount(skip.dev, [3]uint32{1, 1, 1}, kernels.StepCountSpec{},
		kernels.StepCountBind{Found: skip.buf, Steps: s.steps.buf}))
}

// SetFrozen leaves parameter i out of the following steps (frozen), or
// puts it back: a frozen parameter's value and moments are not touched, as
// PyTorch's optimizers skip a parameter without a gradient. The step count
// is the state's, shared: it advances while a parameter is frozen, so a
// parameter unfrozen later has Adam's bias correction of the state's
// count, not of its own steps (PyTorch counts per parameter).
func (s *OptimizerState) SetFrozen(i int, frozen bool) {
	if s == nil || s.steps == nil {
		usagePanic("SetFrozen", "closed or zero OptimizerState")
	}
	if i < 0 || i >= len(s.values) {
		usagePanic("SetFrozen", "parameter %d of %d", i, len(s.values))
	}
	s.frozen[i] = frozen
}

// active returns the table's rows of the parameters not frozen.
func (s *OptimizerState) active() []*Tensor {
	if !slices.Contains(s.frozen, true) {
		return s.cells
	}
	var cells []*Tensor
	for i, f := range s.frozen {
		if !f {
			cells = append(cells, s.cells[4*i:4*i+4]...)
		}
	}
	return cells
}

// Close releases the moments, the step count and the tables (not the
// parameters or gradients). It is idempotent and safe on a nil state.
func (s *OptimizerState) Close() error {
	if s == nil {
		return nil
	}
	s.table.free()
	for m := range s.moments {
		for _, t := range s.moments[m] {
			t.Release()
		}
	}
	s.steps.Release()
	s.never.Release()
	return nil
}

// boolWord is a bool as a push-constant word.
func boolWord(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
