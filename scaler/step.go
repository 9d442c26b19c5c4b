package scaler

import (
	"errors"
	"fmt"
	"reflect"

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
	return s.unscale(opt)
}

func (s *Scaler) unscale(opt Optimizer) error {
	return s.check(opt, s.ls.Unscale)
}

// check runs record, the loss scale's Unscale or Check, over opt's
// gradients into the next of its found flags.
func (s *Scaler) check(opt Optimizer, record func([]*tensor.Tensor, *tensor.Tensor, *tensor.BlockTable) error) error {
	d := s.ls.Device()
	if d == nil {
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
	checked := false
	for i, g := range grads {
		if g == nil {
			continue
		}
		checked = true
		if g.DType() == tensor.Float16 {
			return fmt.Errorf("%w (gradient %d)", ErrFP16Gradients, i)
		}
		if g.Device() != d {
			return fmt.Errorf("scaler: gradient %d is on another device than the scaled loss", i)
		}
		if err := g.Err(); err != nil {
			return fmt.Errorf("scaler: gradient %d: %w", i, err)
		}
	}
	if st.found == nil { // both at once, so memory is flat from the first step
		st.found, st.past = tensor.New(d, tensor.Float32, 1), tensor.Zeros(d, tensor.Float32, foundRing)
		if err := errors.Join(st.found.Err(), st.past.Err()); err != nil {
			st.found.Release()
			st.past.Release()
			st.found, st.past = nil, nil
			return err
		}
	}
	found := st.found
	if err := record(grads, found, &st.table); err != nil {
		return fmt.Errorf("scaler: inf check: %w", err)
	}
	st.stage = unscaled
	st.checked = checked
	return nil
}

// Step unscales opt's gradients if Unscale was not called, then steps opt
// unless they held an inf or NaN. A DeviceSkipper is always called and
// skips itself on the device; any other optimizer costs one host wait for
// the flag. A FusedUnscaler whose FusesUnscale is true unscales them
// inside its step instead, when Unscale was not called: they stay scaled.
// The returned Skipped tells, when read, whether the step was skipped. A
// disabled scaler just steps.
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
	fused, _ := opt.(FusedUnscaler)
	fuse := st.stage == ready && fused != nil && fused.FusesUnscale()
	if st.stage == ready {
		record := s.ls.Unscale
		if fuse {
			record = s.ls.Check
		}
		if err := s.check(opt, record); err != nil {
			return Skipped{}, err
		}
	}
	if !st.checked {
		return Skipped{}, fmt.Errorf("%w for this optimizer (it has no gradients)", ErrNoInfChecks)
	}
	found := st.found
	skipped := Skipped{st: st, found: found}
	st.stage = stepped
	ds, isDS := opt.(DeviceSkipper)
	switch {
	case fuse:
		err = fused.StepUnscaling(found, s.ls)
	case isDS:
		err = ds.StepUnless(found)
	default:
		var v float32
		if v, err = found.Item(); err == nil {
			skipped.known, skipped.value = true, v != 0
			if v == 0 {
				err = opt.Step()
			}
		}
	}
	if err != nil {
		return skipped, err
	}
	skipped.seq, err = st.shift()
	return skipped, err
}

// shift records the copy of this step's flag to the front of past, and
// returns the count of shifts with it.
func (st *optState) shift() (uint64, error) {
	front := tensor.Narrow(st.past, 0, 0, foundRing-1)
	next := tensor.Concat(0, st.found, front)
	err := st.past.CopyFrom(next)
	front.Release()
	next.Release()
	if err != nil {
		return 0, fmt.Errorf("scaler: keep the skip flag: %w", err)
	}
	return st.shifts.Add(1), nil
}

// ErrStale is returned by Skipped.Value read more than 8 steps later.
var ErrStale = errors.New("scaler: Skipped read too late: its flag was reused")

// Skipped tells whether a Step was skipped for an inf or NaN gradient.
// Reading it waits for the device unless the step already had to.
type Skipped struct {
	st    *optState
	found *tensor.Tensor
	seq   uint64 // the optimizer's shift count once this step's flag was shifted in
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
	for {
		n := k.st.shifts.Load()
		if n-k.seq >= foundRing {
			return false, ErrStale
		}
		past, err := k.st.past.Float32s()
		if err != nil {
			return false, err
		}
		if k.st.shifts.Load() == n { // else shifted while read: look again
			return past[n-k.seq] != 0, nil
		}
	}
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
	if s.ls.Device() == nil {
		return ErrNotScaled
	}
	checked := false
	for _, st := range s.opts {
		checked = checked || (st.stage != ready && st.checked)
	}
	if !checked {
		return fmt.Errorf("%w prior to Update", ErrNoInfChecks)
	}
	err := s.ls.Update(s.upd)
	if err != nil {
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
	if s.ls.Device() == nil {
		return ErrNotScaled
	}
	if err := s.ls.SetScale(v); err != nil {
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
	scale, tracker, err := s.ls.State()
	if err != nil {
		return 0, 0, fmt.Errorf("scaler: read state: %w", err)
	}
	return scale, tracker, nil
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
	n, err := s.ls.Overflows()
	if err != nil {
		return 0, fmt.Errorf("scaler: read state: %w", err)
	}
	return n, nil
}

// Close releases the scaler's device memory. It is idempotent.
func (s *Scaler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.opts {
		st.found.Release()
		st.past.Release()
		st.found, st.past = nil, nil
		st.table.Close()
	}
	s.opts = map[Optimizer]*optState{}
	return s.ls.Close()
}
