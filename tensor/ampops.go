package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// The state of dynamic loss scaling lives in five 32-bit words on the
// device, read and written only by kernels (scale_by.comp,
// unscale_check.comp, scale_update.comp), so that no training step waits
// for the host.
const (
	wordScale     = iota // float32: the scale
	wordInvScale         // float32: its reciprocal, as PyTorch rounds it
	wordTracker          // int32: clean steps since the last growth or backoff
	wordFound            // float32: non-zero if any unscale since the last update saw an inf or NaN
	wordOverflows        // uint32: updates that backed off
	scaleWords
)

// unscaleChunk is the number of words one workgroup of unscale_check
// covers (tableChunk's base): large enough to amortise the flag reduction,
// small enough to spread over many workgroups.
const unscaleChunk = 8192

// unscaleLayout is the table of unscale_check.comp: per chunk, the first
// word, the element count and the dtype code.
var unscaleLayout = tableLayout{
	name:  "unscale",
	cols:  1,
	entry: 16,
	chunks: func(raw []byte, first [maxTableCols]int64, row []*Tensor) []byte {
		x := row[0]
		perWord := 4 / x.dtype.Size()
		chunk := tableChunk(x.dev, ceilDiv(x.n, perWord), unscaleChunk)
		for done := 0; done < x.n; done += chunk * perWord {
			raw = binary.LittleEndian.AppendUint32(raw, uint32(first[0]+int64(done/perWord)))
			raw = binary.LittleEndian.AppendUint32(raw, uint32(min(x.n-done, chunk*perWord)))
			raw = binary.LittleEndian.AppendUint32(raw, uint32(x.dtype.code()))
			raw = binary.LittleEndian.AppendUint32(raw, 0)
		}
		return raw
	},
}

// LossScale is the state of dynamic loss scaling, PyTorch's GradScaler
// without the bookkeeping: the scale and its reciprocal, the growth
// tracker, the inf flag of the current iteration and a count of
// overflows. It moves to the device of the first tensor it scales; until
// then it holds its initial values on the host. A LossScale is not safe for
// concurrent use.
type LossScale struct {
	scale   float64 // the initial scale and tracker, used when the state is (re)made
	tracker int
	state   *Tensor // the words, as Float32 storage; nil until the first Scale
}

// NewLossScale returns a loss scale starting at scale (positive and finite
// in float32) with the growth tracker at tracker.
func NewLossScale(scale float64, tracker int) *LossScale {
	checkScale("NewLossScale", scale, tracker)
	return &LossScale{scale: scale, tracker: tracker}
}

func checkScale(op string, scale float64, tracker int) {
	if !(scale > 0 && scale <= math.MaxFloat32) || tracker < 0 || tracker > math.MaxInt32 {
		usagePanic(op, "scale %g must be positive and finite in float32, tracker %d in [0, 2^31)", scale, tracker)
	}
}

// checkLoaded is checkScale for a saved state, whose scale may also be 0:
// PyTorch's scale reaches 0 after enough overflows in a row.
func checkLoaded(op string, scale float64, tracker int) {
	if scale == 0 {
		scale = 1
	}
	checkScale(op, scale, tracker)
}

// Device returns the device the state is on, nil before the first Scale.
func (s *LossScale) Device() *vk.Device {
	if s.state == nil {
		return nil
	}
	return s.state.dev
}

// invScale is float32(1 / float64(scale)), as PyTorch computes inv_scale.
func invScale(scale float64) float32 { return float32(1 / float64(float32(scale))) }

// words returns the state words from the scale on, found and overflows 0.
func words(scale float64, tracker int) []byte {
	b := make([]byte, 4*scaleWords)
	binary.LittleEndian.PutUint32(b[4*wordScale:], math.Float32bits(float32(scale)))
	binary.LittleEndian.PutUint32(b[4*wordInvScale:], math.Float32bits(invScale(scale)))
	binary.LittleEndian.PutUint32(b[4*wordTracker:], uint32(int32(tracker)))
	return b
}

// Scale returns x multiplied by the current scale, in x's dtype: the scaled
// loss of a backward pass. The first Scale puts the state on x's device.
// Scale never panics on a non-nil x: an x that is released, that is on
// another device than the state, or that carries an error, and a state
// that cannot be made, give a result that carries the error (a state that
// could not be made is made again by the next Scale).
func (s *LossScale) Scale(x *Tensor) *Tensor {
	const op = "LossScale.Scale"
	if x == nil {
		usagePanic(op, "nil tensor")
	}
	checkFloating(op, x.dtype, x)
	x.mu.Lock()
	released := x.released
	x.mu.Unlock()
	var err error
	switch {
	case x.err != nil:
		err = x.err
	case released:
		err = fmt.Errorf("tensor: %s: tensor %s%v was released", op, x.dtype, x.shape)
	default:
		err = s.placeOn(x.dev)
	}
	if err != nil {
		return &Tensor{dev: x.dev, dtype: x.dtype, shape: slices.Clone(x.shape), n: x.n, err: err}
	}
	out := newOut(x.dev, x.dtype, x.shape, x, s.state)
	recordInto(op, func() error {
		return kernels.ScaleBy(x.dev, pairGroups(x.dev, x.n),
			kernels.ScaleBySpec{In0DT: x.dtype.code(), OutDT: x.dtype.code()}, kernels.ScaleByPush{N: uint32(x.n)},
			kernels.ScaleByBind{Src: x.buf, State: s.state.buf, Dst: out.buf})
	}, out)
	return out
}

// ScaleItem returns the current scale as a one-element Float32 tensor on d:
// Scale of a Float32 1 (the seed of a scaled backward pass), copied from
// the state on the device rather than computed by a fill and a kernel.
// Errors are carried as Scale carries them.
func (s *LossScale) ScaleItem(d *vk.Device) *Tensor {
	const op = "LossScale.ScaleItem"
	if d == nil {
		usagePanic(op, "nil device")
	}
	if err := s.placeOn(d); err != nil {
		return &Tensor{dev: d, dtype: Float32, shape: []int{1}, n: 1, err: err}
	}
	out := newOut(d, Float32, []int{1}, s.state)
	recordInto(op, func() error { return d.Copy(out.buf, 0, s.state.buf, 4*wordScale, 4) }, out)
	return out
}

// placeOn makes the state on d from the initial values unless it is there.
func (s *LossScale) placeOn(d *vk.Device) error {
	if s.state != nil {
		if s.state.dev != d {
			return fmt.Errorf("tensor: LossScale.Scale: tensor on another device than the first one scaled")
		}
		return nil
	}
	st := New(d, Float32, scaleWords)
	err := st.err
	if err == nil {
		err = st.SetBytes(words(s.scale, s.tracker))
	}
	if err != nil {
		st.Release()
		return fmt.Errorf("tensor: loss scale state: %w", err)
	}
	s.state = st
	return nil
}

// Unscale multiplies every tensor of grads (Float32 or Float16; nil ones
// are skipped) by the reciprocal of the scale in place, not at all while
// it is 1 so bits stay, and sets found, a one-element Float32 tensor, to 1
// if any element is inf or NaN, before or after the multiply, and to 0
// otherwise; an inf also raises the state's flag that the next Update
// reads. Every gradient is multiplied, non-finite or not, as PyTorch does.
// Unlike PyTorch, a finite gradient made non-finite by the multiply is
// found too: one that overflows (scale below 1), and a zero times an
// infinite reciprocal (scale below about 2.9e-39, or 0), which would
// otherwise give NaN weights in a step not skipped. It costs one dispatch per group of
// memory blocks through tab, which keeps its tables while the gradients
// keep their memory. It panics before the first Scale. Like every in-place
// op it returns errors (a gradient's or found's, or a failed recording).
func (s *LossScale) Unscale(grads []*Tensor, found *Tensor, tab *BlockTable) error {
	return s.unscale("LossScale.Unscale", grads, found, tab, false)
}

// Check records Unscale's inf check alone: found becomes 1 if any of grads
// is inf or NaN, or would be once multiplied by the inverse of the scale,
// and the gradients are left scaled. A step that unscales as it reads them
// (AdamConfig.Unscale, SGDConfig.Unscale) follows, skipped on found: together they give
// Unscale's flag and update with one pass over the gradients fewer.
func (s *LossScale) Check(grads []*Tensor, found *Tensor, tab *BlockTable) error {
	return s.unscale("LossScale.Check", grads, found, tab, true)
}

// unscale is Unscale, or Check if checkOnly.
func (s *LossScale) unscale(op string, grads []*Tensor, found *Tensor, tab *BlockTable, checkOnly bool) error {
	s.onDevice(op)
	sameDevice(op, s.state, found)
	checkItem(op, found)
	cells := make([]*Tensor, 0, len(grads)) // one allocation, not one per growth
	for _, g := range grads {
		if g == nil {
			continue
		}
		sameDevice(op, s.state, g)
		if g.dtype != Float32 && g.dtype != Float16 {
			panic(&DTypeError{Op: op, Got: g.dtype, Want: "float32 or float16 gradients"})
		}
		cells = append(cells, g)
	}
	if err := firstErr(found, s.state); err != nil {
		return err
	}
	if err := firstErr(cells...); err != nil {
		return err
	}
	d := s.state.dev
	if err := d.Fill(found.buf, 0, 4, 0); err != nil {
		return opErr(op, err)
	}
	if err := tab.t.update(d, &unscaleLayout, cells); err != nil {
		return err
	}
	spec := kernels.UnscaleCheckSpec{CheckOnly: checkOnly, Grads: gradDTypes(cells)}
	for _, g := range tab.t.groups {
		push := kernels.UnscaleCheckPush{Nchunks: uint32(g.chunks)}
		var err error
		if texelsServe(d, g.bind[0]) {
			err = kernels.UnscaleCheckTex(d, g.grid(), kernels.UnscaleCheckTexSpec(spec), kernels.UnscaleCheckTexPush(push), kernels.UnscaleCheckTexBind{
				Data: g.bind[0], Table: g.table, State: s.state.buf, Found: found.buf, DataTex: g.bind[0]})
		} else {
			err = kernels.UnscaleCheck(d, g.grid(), spec, push,
				kernels.UnscaleCheckBind{Data: g.bind[0], Table: g.table, State: s.state.buf, Found: found.buf})
		}
		if err != nil {
			return opErr(op, err)
		}
	}
	return nil
}

// gradDTypes is unscale_check's GRADS: 1 if every gradient is Float32, 2
// if every one is Float16, else 0 (each chunk's dtype decides).
func gradDTypes(grads []*Tensor) uint32 {
	f32, f16 := 0, 0
	for _, g := range grads {
		if g.dtype == Float32 {
			f32++
		} else {
			f16++
		}
	}
	switch {
	case f16 == 0:
		return 1
	case f32 == 0:
		return 2
	}
	return 0
}

// onDevice panics unless the state is on a device.
func (s *LossScale) onDevice(op string) {
	if s.state == nil {
		usagePanic(op, "no tensor scaled yet")
	}
}

// ScaleUpdate is the rule of LossScale.Update, PyTorch's
// _amp_update_scale_ with an optional floor and cap. The factors are
// doubles, as PyTorch's: the scale times a factor is computed as PyTorch
// computes it, in double rounded to float, bit for bit on every driver
// (subnormal scales included).
type ScaleUpdate struct {
	Growth   float64 // scale multiplier after Interval clean steps
	Backoff  float64 // scale multiplier on an inf
	Interval int     // clean steps between growths
	MinScale float32 // floor after backoff; 0: none
	MaxScale float32 // cap on growth; 0: none
}

// Factors outside [2^-minFactorExp, 2^maxFactorExp] could make the double
// product of a float scale overflow or go subnormal, which the kernel's
// integer code does not model; no useful factor is near them.
const (
	minFactorExp = 800
	maxFactorExp = 800
)

// factorWords splits a positive finite factor into its 53-bit significand
// (high and low words) and exponent: f = (hi*2^32 + lo) * 2^exp.
func factorWords(op, name string, f float64) (hi, lo uint32, exp int32) {
	if !(f >= math.Ldexp(1, -minFactorExp) && f <= math.Ldexp(1, maxFactorExp)) {
		usagePanic(op, "%s factor %g must be in [2^-%d, 2^%d]", name, f, minFactorExp, maxFactorExp)
	}
	frac, e := math.Frexp(f) // f = frac * 2^e, frac in [0.5, 1)
	m := uint64(math.Ldexp(frac, 53))
	return uint32(m >> 32), uint32(m), int32(e - 53)
}

// Update records the update of the scale on the device: after an inf seen
// by an Unscale since the last Update, the scale backs off (not below
// MinScale), the tracker resets and the overflow count grows; otherwise the
// tracker counts the clean step and, reaching Interval, resets as the
// scale grows (not above MaxScale, never to inf). It clears the inf flag.
// It panics before the first Scale, and on a factor that is not positive
// and finite (or beyond 2^±800).
func (s *LossScale) Update(u ScaleUpdate) error {
	const op = "LossScale.Update"
	s.onDevice(op)
	gh, gl, ge := factorWords(op, "growth", u.Growth)
	bh, bl, be := factorWords(op, "backoff", u.Backoff)
	if err := s.state.err; err != nil {
		return err
	}
	return opErr(op, kernels.ScaleUpdate(s.state.dev, [3]uint32{1, 1, 1}, kernels.ScaleUpdateSpec{},
		kernels.ScaleUpdatePush{GrowthHi: gh, GrowthLo: gl, GrowthExp: ge, BackoffHi: bh, BackoffLo: bl, BackoffExp: be,
			Interval: int32(u.Interval), MinScale: u.MinScale, MaxScale: u.MaxScale},
		kernels.ScaleUpdateBind{State: s.state.buf}))
}

// SetScale sets the scale, without the update rule, and clears the inf
// flag; the tracker and the overflow count keep their values. Before the
// first Scale it sets the initial scale.
func (s *LossScale) SetScale(scale float64) error {
	checkScale("LossScale.SetScale", scale, 0)
	if s.state == nil {
		s.scale = scale
		return nil
	}
	w := words(scale, 0)
	if err := s.write(wordScale, w[:4*wordTracker]); err != nil {
		return err
	}
	return s.write(wordFound, w[4*wordFound:4*wordOverflows])
}

// Load sets the scale and the tracker, as a saved state gives them, and
// clears the inf flag; the overflow count keeps its value. The values are
// also the initial ones if the state is made again (after Close). The scale
// may be 0, as PyTorch's collapses to after enough overflows: its
// reciprocal is then +inf, and every Unscale finds a non-finite result
// (as it does for any scale below about 2.9e-39).
func (s *LossScale) Load(scale float64, tracker int) error {
	checkLoaded("LossScale.Load", scale, tracker)
	if scale == 0 {
		scale = 0 // not -0, whose reciprocal is -inf
	}
	if s.state != nil {
		if err := s.write(wordScale, words(scale, tracker)[:4*wordOverflows]); err != nil {
			return err
		}
	}
	s.scale, s.tracker = scale, tracker
	return nil
}

// write writes raw into the state words from word on, in order with the
// recorded work.
func (s *LossScale) write(word int, raw []byte) error {
	if err := s.state.err; err != nil {
		return err
	}
	if err := s.state.buf.Write(int64(4*word), raw); err != nil {
		return fmt.Errorf("tensor: loss scale state: %w", err)
	}
	return nil
}

// State returns the scale and the growth tracker, waiting for the device:
// the initial values before the first Scale.
func (s *LossScale) State() (scale float64, tracker int, err error) {
	if s.state == nil {
		return s.scale, s.tracker, nil
	}
	raw, err := s.state.raw("LossScale.State")
	if err != nil {
		return 0, 0, err
	}
	scale = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*wordScale:])))
	return scale, int(int32(binary.LittleEndian.Uint32(raw[4*wordTracker:]))), nil
}

// Overflows returns how many Updates backed off the scale since the state
// was put on a device, waiting for the device; 0 before the first Scale.
func (s *LossScale) Overflows() (int, error) {
	if s.state == nil {
		return 0, nil
	}
	raw, err := s.state.raw("LossScale.Overflows")
	if err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint32(raw[4*wordOverflows:])), nil
}

// Close releases the device state; the next Scale makes it again from the
// initial values. It is idempotent and safe on a nil LossScale.
func (s *LossScale) Close() error {
	if s != nil && s.state != nil {
		s.state.Release()
		s.state = nil
	}
	return nil
}

// MarkFound records an inf found elsewhere (another process's gradients):
// it sets found, a one-element Float32 tensor, to 1 and raises the state's
// flag that the next Update reads, in order with the recorded work. It
// panics before the first Scale.
func (s *LossScale) MarkFound(found *Tensor) error {
	const op = "LossScale.MarkFound"
	s.onDevice(op)
	sameDevice(op, s.state, found)
	checkItem(op, found)
	one := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1))
	if err := found.SetBytes(one); err != nil {
		return err
	}
	return s.write(wordFound, one)
}
