package scaler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/vkamp/vkamp/internal/kernels"
	"github.com/vkamp/vkamp/tensor"
)

func (s *Scaler) stateOf(opt Optimizer) (*optState, error) {
	if t := reflect.TypeOf(opt); t == nil || !t.Comparable() {
		return nil, fmt.Errorf("scaler: optimizer of type %v: pass a pointer, so the scaler can tell optimizers apart", t)
	}
	st := s.opts[opt]
	if st == nil {
		st = &optState{}
		s.opts[opt] = st
	}
	return st, nil
}

// Unscale divides opt's gradients by the scale in place, in one fused pass
// that also records whether any is inf or NaN. Call it before clipping
// gradients; Step calls it when it was not called.
func (s *Scaler) Unscale(opt Optimizer) error {
	if s.disabled {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unscale(opt, false)
}

func (s *Scaler) unscale(opt Optimizer, checkOnly bool) error {
	if s.state == nil {
		return ErrNotScaled
	}
	st, err := s.stateOf(opt)
	if err != nil {
		return err
	}
	switch st.stage {
	case unscaled:
		return ErrUnscaledTwice
	case stepped:
		return ErrAfterStep
	}
	grads := opt.Gradients()
	for i, g := range grads {
		if g == nil {
			continue
		}
		if g.DType() == tensor.Float16 && !checkOnly {
			return fmt.Errorf("%w (gradient %d)", ErrFP16Gradients, i)
		}
		if g.Device() != s.dev {
			return fmt.Errorf("scaler: gradient %d is on another device than the scaled loss", i)
		}
		if err := g.Err(); err != nil {
			return fmt.Errorf("scaler: gradient %d: %w", i, err)
		}
	}
	if st.found[0] == nil { // all at once, so memory is flat from the first step
		for i := range st.found {
			st.found[i] = tensor.New(s.dev, tensor.Float32, 1)
			if err := st.found[i].Err(); err != nil {
				return err
			}
		}
	}
	found := st.found[st.gen.Add(1)%foundRing]
	if err := s.dev.Fill(found.Buffer(), 0, 4, 0); err != nil {
		return fmt.Errorf("scaler: unscale: %w", err)
	}
	tab, err := s.tableFor(st, grads)
	if err != nil {
		return err
	}
	for _, g := range tab.groups {
		groups := [3]uint32{uint32(min(g.chunks, 65535)), uint32((g.chunks + 65534) / 65535), 1}
		err := dispatch(s.dev, "unscale_check", nil, groups, kernels.Push(uint32(g.chunks)), g.data, g.table, s.state, found.Buffer())
		if err != nil {
			return fmt.Errorf("scaler: unscale: %w", err)
		}
	}
	st.stage = unscaled
	st.checked = len(tab.groups) > 0
	return nil
}

// Step unscales opt's gradients if Unscale was not called, then steps opt
// unless they held an inf or NaN. A DeviceSkipper is always called and
// skips itself on the device; any other optimizer costs one host wait for
// the flag. The returned Skipped tells, when read, whether the step was
// skipped. A disabled scaler just steps.
func (s *Scaler) Step(opt Optimizer) (Skipped, error) {
	if s.disabled {
		return Skipped{}, opt.Step()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.stateOf(opt)
	if err != nil {
		return Skipped{}, err
	}
	if st.stage == stepped {
		return Skipped{}, ErrSteppedTwice
	}
	if st.stage == ready {
		if err := s.unscale(opt, false); err != nil {
			return Skipped{}, err
		}
	}
	if !st.checked {
		return Skipped{}, fmt.Errorf("%w for this optimizer (it has no gradients)", ErrNoInfChecks)
	}
	gen := st.gen.Load()
	found := st.found[gen%foundRing]
	skipped := Skipped{st: st, found: found, gen: gen}
	st.stage = stepped
	if ds, ok := opt.(DeviceSkipper); ok {
		return skipped, ds.StepUnless(found)
	}
	v, err := found.Item()
	if err != nil {
		return skipped, err
	}
	skipped.known, skipped.value = true, v != 0
	if v != 0 {
		return skipped, nil
	}
	return skipped, opt.Step()
}

// ErrStale is returned by Skipped.Value read more than 8 steps later.
var ErrStale = errors.New("scaler: Skipped read too late: its flag was reused")

// Skipped tells whether a Step was skipped for an inf or NaN gradient.
// Reading it waits for the device unless the step already had to.
type Skipped struct {
	st    *optState
	found *tensor.Tensor
	gen   uint64
	known bool
	value bool
}

// Value waits if needed and reports whether the step was skipped. It must
// be read within 8 steps of the optimizer; later it returns ErrStale. It
// may be called from another goroutine than the one that steps.
func (k Skipped) Value() (bool, error) {
	if k.known || k.found == nil {
		return k.value, nil
	}
	stale := func() bool { return k.st.gen.Load()-k.gen >= foundRing }
	if stale() {
		return false, ErrStale
	}
	v, err := k.found.Item()
	if err == nil && stale() { // reused while it was read: v may be a later step's
		return false, ErrStale
	}
	return v != 0, err
}

// Update backs off or grows the scale from the inf checks of every
// optimizer since the last Update, on the device. Any optimizer's overflow
// backs off the shared scale.
func (s *Scaler) Update() error {
	if s.disabled {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return ErrNotScaled
	}
	checked := false
	for _, st := range s.opts {
		checked = checked || (st.stage != ready && st.checked)
	}
	if !checked {
		return fmt.Errorf("%w prior to Update", ErrNoInfChecks)
	}
	push := make([]byte, 20)
	binary.LittleEndian.PutUint32(push[0:], math.Float32bits(float32(s.growth)))
	binary.LittleEndian.PutUint32(push[4:], math.Float32bits(float32(s.backoff)))
	binary.LittleEndian.PutUint32(push[8:], uint32(int32(s.interval)))
	binary.LittleEndian.PutUint32(push[12:], math.Float32bits(float32(s.minScale)))
	binary.LittleEndian.PutUint32(push[16:], math.Float32bits(float32(s.maxScale)))
	if err := dispatch(s.dev, "scale_update", nil, [3]uint32{1, 1, 1}, push, s.state); err != nil {
		return fmt.Errorf("scaler: update: %w", err)
	}
	s.resetStages()
	return nil
}

// UpdateTo sets the scale to v without the update rule; the growth tracker
// keeps its value, as in PyTorch's update(new_scale).
func (s *Scaler) UpdateTo(v float64) error {
	if s.disabled {
		return nil
	}
	if err := positive("scale", v); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return ErrNotScaled
	}
	w := stateWords(v, 0, 0)
	if err := s.state.Write(0, w[:8]); err != nil {
		return fmt.Errorf("scaler: update to %g: %w", v, err)
	}
	if err := s.state.Write(12, w[12:]); err != nil {
		return fmt.Errorf("scaler: update to %g: %w", v, err)
	}
	s.resetStages()
	return nil
}

func (s *Scaler) resetStages() {
	for _, st := range s.opts {
		st.stage, st.checked = ready, false
	}
}

// readState waits for the device and returns the scale and tracker.
func (s *Scaler) readState() (float64, int, error) {
	if s.state == nil {
		return s.initScale, s.initTracker, nil
	}
	b := make([]byte, 12)
	if err := s.state.Read(0, b); err != nil {
		return 0, 0, fmt.Errorf("scaler: read state: %w", err)
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), int(int32(binary.LittleEndian.Uint32(b[8:]))), nil
}

// Overflows returns how many Updates found an inf or NaN (and so backed off
// the scale, and skipped the steps) since the first Scale, waiting for the
// device: a count for logs that costs one wait when read, not one per step.
func (s *Scaler) Overflows() (int, error) {
	if s.disabled {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return 0, nil
	}
	var b [4]byte
	if err := s.state.Read(16, b[:]); err != nil {
		return 0, fmt.Errorf("scaler: read state: %w", err)
	}
	return int(binary.LittleEndian.Uint32(b[:])), nil
}

// Close releases the scaler's device memory. It is idempotent.
func (s *Scaler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.opts {
		for i, f := range st.found {
			f.Release()
			st.found[i] = nil
		}
		st.table.free()
		st.table = nil
	}
	s.opts = map[Optimizer]*optState{}
	if s.state != nil {
		s.state.Free()
		s.state = nil
	}
	return nil
}
