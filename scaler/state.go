package scaler

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// stateDict has PyTorch's GradScaler.state_dict keys, so a checkpoint's
// scaler state moves between PyTorch and vkamp.
type stateDict struct {
	Scale          *float64 `json:"scale"`
	GrowthFactor   *float64 `json:"growth_factor"`
	BackoffFactor  *float64 `json:"backoff_factor"`
	GrowthInterval *float64 `json:"growth_interval"`
	GrowthTracker  *float64 `json:"_growth_tracker"`
}

// StateDict returns the scaler's state as JSON with PyTorch's keys (scale,
// growth_factor, backoff_factor, growth_interval, _growth_tracker). It
// waits for the device. A disabled scaler gives {}.
func (s *Scaler) StateDict() ([]byte, error) {
	if s.disabled {
		return []byte("{}"), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	scale, tracker, err := s.readState()
	if err != nil {
		return nil, err
	}
	growth, backoff := s.upd.Growth, s.upd.Backoff
	interval, tr := float64(s.upd.Interval), float64(tracker)
	return json.Marshal(stateDict{Scale: &scale, GrowthFactor: &growth, BackoffFactor: &backoff,
		GrowthInterval: &interval, GrowthTracker: &tr})
}

// LoadStateDict restores a state from StateDict or from PyTorch's
// GradScaler.state_dict written as JSON. An empty, malformed or invalid
// state is an error and changes nothing. A disabled scaler ignores it. A
// collapsed scale is an error too: 0, which PyTorch's reaches after enough
// overflows in a row, or anything below fp32's smallest normal (2^-126),
// from which the scale cannot grow again, would skip every step after the
// load and train nothing; start such a run's scaler afresh.
func (s *Scaler) LoadStateDict(data []byte) error {
	if s.disabled {
		return nil
	}
	var sd stateDict
	if err := json.Unmarshal(data, &sd); err != nil { // trailing bytes too are an error
		return fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if sd == (stateDict{}) {
		return fmt.Errorf("%w: empty, possibly saved from a disabled scaler", ErrBadState)
	}
	for name, p := range map[string]*float64{"scale": sd.Scale, "growth_factor": sd.GrowthFactor,
		"backoff_factor": sd.BackoffFactor, "growth_interval": sd.GrowthInterval, "_growth_tracker": sd.GrowthTracker} {
		if p == nil {
			return fmt.Errorf("%w: missing %q", ErrBadState, name)
		}
	}
	if err := positive("scale", *sd.Scale); err != nil {
		return fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if *sd.Scale < minNormalScale {
		return fmt.Errorf("%w: scale %g has collapsed (below 2^-126, it cannot grow again): every step would be skipped; start the scaler afresh", ErrBadState, *sd.Scale)
	}
	interval, tracker := *sd.GrowthInterval, *sd.GrowthTracker
	if interval != math.Trunc(interval) || interval < 1 || interval > math.MaxInt32 {
		return fmt.Errorf("%w: growth_interval %g", ErrBadState, interval)
	}
	upd := s.upd
	upd.Growth, upd.Backoff, upd.Interval = *sd.GrowthFactor, *sd.BackoffFactor, int(interval)
	if err := checkUpdate(upd); err != nil {
		return fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if tracker != math.Trunc(tracker) || tracker < 0 || tracker > math.MaxInt32 {
		return fmt.Errorf("%w: _growth_tracker %g", ErrBadState, tracker)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ls.Load(*sd.Scale, int(tracker)); err != nil { // keeps the overflow count
		return fmt.Errorf("scaler: load state: %w", err)
	}
	s.upd = upd
	return nil
}

// ScaleValue returns the current scale, waiting for the device: the initial
// scale before the first Scale, 1 when disabled.
func (s *Scaler) ScaleValue() (float64, error) {
	if s.disabled {
		return 1, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, _, err := s.readState()
	return v, err
}

// GrowthTracker returns the number of clean steps since the last growth or
// backoff, waiting for the device; 0 when disabled.
func (s *Scaler) GrowthTracker() (int, error) {
	if s.disabled {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, t, err := s.readState()
	return t, err
}

// GrowthFactor returns the growth factor.
func (s *Scaler) GrowthFactor() float64 { s.mu.Lock(); defer s.mu.Unlock(); return s.upd.Growth }

// BackoffFactor returns the backoff factor.
func (s *Scaler) BackoffFactor() float64 { s.mu.Lock(); defer s.mu.Unlock(); return s.upd.Backoff }

// GrowthInterval returns the growth interval.
func (s *Scaler) GrowthInterval() int { s.mu.Lock(); defer s.mu.Unlock(); return s.upd.Interval }

// SetGrowthFactor sets the growth factor (> 1), used from the next Update.
func (s *Scaler) SetGrowthFactor(f float64) error {
	return s.setUpdate(func(u *tensor.ScaleUpdate) { u.Growth = f })
}

// SetBackoffFactor sets the backoff factor (in (0, 1)), used from the next Update.
func (s *Scaler) SetBackoffFactor(f float64) error {
	return s.setUpdate(func(u *tensor.ScaleUpdate) { u.Backoff = f })
}

// SetGrowthInterval sets the growth interval, used from the next Update.
// Lowering it below the current tracker stops growth, as in PyTorch, until
// an overflow resets the tracker.
func (s *Scaler) SetGrowthInterval(n int) error {
	return s.setUpdate(func(u *tensor.ScaleUpdate) { u.Interval = n })
}

// setUpdate applies edit to the update description if the result passes
// checkUpdate, and returns its error otherwise.
func (s *Scaler) setUpdate(edit func(*tensor.ScaleUpdate)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.upd
	edit(&u)
	if err := checkUpdate(u); err != nil {
		return err
	}
	s.upd = u
	return nil
}
