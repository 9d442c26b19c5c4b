// Package scaler is dynamic loss scaling for fp16 training, with the
// semantics of PyTorch's torch.amp.GradScaler, run on the device so that no
// training step waits for the host.
//
// fp16 gradients underflow to zero unless the loss is scaled up before the
// backward pass and the gradients scaled back down before the optimizer
// step. A step whose gradients overflowed is skipped and the scale lowered;
// after GrowthInterval clean steps the scale grows again. Beyond PyTorch,
// the check also looks at the unscaled values: a gradient that the unscale
// itself makes inf or NaN (once the scale has collapsed below about
// 2.9e-39, or to 0, the reciprocal is +inf and a zero gradient becomes NaN)
// skips the step, so a collapsed scale stops training instead of writing
// NaN weights. The loop reads:
//
//	scaled := s.Scale(loss)      // loss * scale
//	... backward from scaled ...
//	skipped, err := s.Step(opt)  // unscale, check, step or skip
//	err = s.Update()             // back off or grow the scale
//
// The overflow check and unscale of all gradients is one fused dispatch per
// memory block; the scale update is one more. An optimizer that implements
// DeviceSkipper reads the overflow flag on the device and skips itself, so a
// step records no host wait; any other Optimizer costs one wait, to read the
// flag. A FusedUnscaler (nn.Adam or nn.SGD with Fused options) takes the
// unscale into its own step, as PyTorch's fused optimizers do: Step then
// only checks, reading the gradients and writing none. Skipped is read
// lazily, so logs and schedulers can stay honest without a wait on every
// step.
//
// Misuse in PyTorch's sense (unscaling twice, stepping twice, updating
// without a check, using the scaler before Scale) returns an error. A
// Scaler is safe for concurrent use, though a training step is sequential.
package scaler
