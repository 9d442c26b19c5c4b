package scaler

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/vkamp/vkamp/tensor"
)

// Optimizer is what the scaler needs of an optimizer: the fp32 gradients it
// steps with, and the step itself.
type Optimizer interface {
	Gradients() []*tensor.Tensor
	Step() error
}

// DeviceSkipper is an Optimizer that can skip itself on the device:
// StepUnless records its step so that it has no effect (its state counters
// do not advance either) when found, a one-element Float32 tensor, is
// non-zero at the time the step runs.
type DeviceSkipper interface {
	Optimizer
	StepUnless(found *tensor.Tensor) error
}

// FusedUnscaler is a DeviceSkipper that can unscale its gradients as it
// steps, as PyTorch's fused Adam and SGD take the scaler's grad_scale: when
// FusesUnscale reports true and Unscale was not called, Step only checks
// the gradients (tensor.LossScale.Check) and calls StepUnscaling, which
// records a step that multiplies each gradient by the inverse of scale as
// it reads it, skipped when found is non-zero. The update is the one
// Unscale and StepUnless would give, with one pass over the gradients
// fewer; the gradients stay scaled after the step.
type FusedUnscaler interface {
	DeviceSkipper
	FusesUnscale() bool
	StepUnscaling(found *tensor.Tensor, scale *tensor.LossScale) error
}

// Options configure a Scaler. Zero fields take PyTorch's defaults.
type Options struct {
	InitScale      float64 // initial scale; default 65536
	GrowthFactor   float64 // scale multiplier after GrowthInterval clean steps; default 2, must be > 1
	BackoffFactor  float64 // scale multiplier on overflow; default 0.5, must be in [2^-800, 1)
	GrowthInterval int     // clean steps between growths; default 2000
	// Disabled makes the scaler pass everything through: scale 1, the
	// optimizer stepped directly.
	Disabled bool
	// MinScale is a floor for the scale after backoff (PyTorch has none, and
	// its scale can collapse to 0); 0 means none.
	MinScale float64
	// MaxScale caps growth; 0 means none.
	MaxScale float64
}

// Errors for misuse, matched with errors.Is.
var (
	ErrNotScaled     = errors.New("scaler: no Scale call yet: scale the loss before unscaling or stepping")
	ErrUnscaledTwice = errors.New("scaler: Unscale already called on this optimizer since the last Update")
	ErrAfterStep     = errors.New("scaler: Unscale called after Step")
	ErrSteppedTwice  = errors.New("scaler: Step already called on this optimizer since the last Update")
	ErrNoInfChecks   = errors.New("scaler: no inf checks were recorded")
	ErrFP16Gradients = errors.New("scaler: fp16 gradients: unscale needs fp32 master gradients")
	ErrBadState      = errors.New("scaler: bad state dict")
	ErrOptions       = errors.New("scaler: invalid option")
)

type stage int

const (
	ready stage = iota
	unscaled
	stepped
)

// foundRing is how many past steps' Skipped values stay readable.
const foundRing = 8

// A step's kernels write and read one flag, found, whose tensor never
// changes (a replayed step's graph binds it; tensor.Replayer matches a
// step's bindings); after the optimizer's step a copy shifts it into
// past, where Skipped.Value finds it by the count of shifts since.
type optState struct {
	stage   stage
	found   *tensor.Tensor    // [1]: this step's flag
	past    *tensor.Tensor    // [foundRing]: the flags of the last steps, newest first
	shifts  atomic.Uint64     // shifts recorded; Skipped.Value reads it unlocked
	checked bool              // an inf check ran since the last Update
	table   tensor.BlockTable // how the unscale reaches the optimizer's gradients
}

// Scaler scales losses and unscales gradients. Create it with New.
type Scaler struct {
	mu       sync.Mutex
	disabled bool
	// upd is the one description of the scale's update, checked by
	// checkUpdate wherever it changes (New, LoadStateDict, the setters)
	// and handed to the device as it is at each Update.
	upd tensor.ScaleUpdate

	ls   *tensor.LossScale // scale, tracker, inf flag and overflow count; on the device from the first Scale
	opts map[Optimizer]*optState
}

// New returns a scaler, or an error for invalid options.
func New(o Options) (*Scaler, error) {
	init := cmp.Or(o.InitScale, 65536)
	if err := positive("InitScale", init); err != nil {
		return nil, err
	}
	if !finite(o.MinScale) || o.MinScale < 0 || !finite(o.MaxScale) || o.MaxScale < 0 ||
		(o.MaxScale > 0 && o.MaxScale < o.MinScale) || o.MinScale > math.MaxFloat32 || o.MaxScale > math.MaxFloat32 {
		return nil, fmt.Errorf("%w: MinScale %g and MaxScale %g must be finite, >= 0, and Max >= Min", ErrOptions, o.MinScale, o.MaxScale)
	}
	s := &Scaler{disabled: o.Disabled, opts: map[Optimizer]*optState{}, upd: tensor.ScaleUpdate{
		Growth: cmp.Or(o.GrowthFactor, 2), Backoff: cmp.Or(o.BackoffFactor, 0.5), Interval: cmp.Or(o.GrowthInterval, 2000),
		MinScale: float32(o.MinScale), MaxScale: float32(o.MaxScale)}}
	if err := checkUpdate(s.upd); err != nil {
		return nil, err
	}
	if !s.disabled {
		s.ls = tensor.NewLossScale(init, 0)
	}
	return s, nil
}

// checkUpdate checks an update description's growth factor, backoff factor
// and interval (New checks the floor and cap, which never change after).
func checkUpdate(u tensor.ScaleUpdate) error {
	return errors.Join(checkGrowth(u.Growth), checkBackoff(u.Backoff), checkInterval(u.Interval))
}

// minNormalScale is fp32's smallest normal: a loaded scale below it has
// collapsed (its inverse is inf below 2^-128, and no skipped step lets it
// grow). New takes any positive scale: tools/train's run stops on its own
// when skipped steps follow one another (its collapse check).
const minNormalScale = 0x1p-126

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func positive(name string, v float64) error {
	if !finite(v) || v <= 0 || v > math.MaxFloat32 {
		return fmt.Errorf("%w: %s %g must be positive and finite in float32", ErrOptions, name, v)
	}
	return nil
}

func checkGrowth(f float64) error {
	if !finite(f) || f <= 1 || f > math.MaxFloat32 {
		return fmt.Errorf("%w: growth factor %g must be > 1 and finite", ErrOptions, f)
	}
	return nil
}

func checkBackoff(f float64) error {
	// Below 2^-800 the kernel's exact product is not modelled; any factor
	// under 2^-277 already takes every float scale to 0.
	if !finite(f) || f < 0x1p-800 || f >= 1 {
		return fmt.Errorf("%w: backoff factor %g must be in [2^-800, 1)", ErrOptions, f)
	}
	return nil
}

func checkInterval(n int) error {
	if n <= 0 || n > math.MaxInt32 {
		return fmt.Errorf("%w: growth interval %d must be in [1, 2^31)", ErrOptions, n)
	}
	return nil
}

// Enabled reports whether the scaler scales; a disabled one passes through.
func (s *Scaler) Enabled() bool { return !s.disabled }

// Scale returns loss multiplied by the current scale, for the backward pass.
// A disabled scaler returns loss itself. The result has loss's dtype; on
// failure it carries the error, like any tensor.
func (s *Scaler) Scale(loss *tensor.Tensor) *tensor.Tensor {
	if loss == nil {
		panic(&tensor.UsageError{Op: "scaler.Scale", Msg: "nil tensor"})
	}
	if s.disabled {
		return loss
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ls.Scale(loss)
}

// Seed returns the current scale as a one-element tensor of like's dtype:
// the seed of a backward pass from the loss that gives the gradients of
// Scale(loss), without computing the scaled loss. A disabled scaler gives 1.
// The caller owns the result (nn's Graph.Backward takes it).
func (s *Scaler) Seed(like *tensor.Tensor) *tensor.Tensor {
	if like == nil {
		panic(&tensor.UsageError{Op: "scaler.Seed", Msg: "nil tensor"})
	}
	if !s.disabled && like.DType() == tensor.Float32 {
		// 1 times the scale is the scale: a copy, no kernel.
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.ls.ScaleItem(like.Device())
	}
	one := tensor.Full(like.Device(), like.DType(), 1, 1)
	if s.disabled {
		return one
	}
	defer one.Release()
	return s.Scale(one)
}
