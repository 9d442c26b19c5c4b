package scaler

import "github.com/vkamp/vkamp/tensor"

// Loss is a loss that can run its backward pass from a given seed: nn's
// *Var is one. The interface lives here, with its consumer, so that the
// scaler does not import nn.
type Loss interface {
	Value() *tensor.Tensor
	BackwardFrom(seed *tensor.Tensor) error
}

// ScaledLoss is a loss scaled for its backward pass (ScaleLoss).
type ScaledLoss struct {
	s    *Scaler
	loss Loss
}

// ScaleLoss returns loss scaled for the backward pass: PyTorch's
// scaler.scale(loss).backward() reads sc.ScaleLoss(loss).Backward(). It
// gives the gradients of the loss times the scale, seeding the backward
// pass with the scale rather than computing the scaled loss.
func (s *Scaler) ScaleLoss(loss Loss) ScaledLoss {
	if loss == nil {
		panic(&tensor.UsageError{Op: "scaler.ScaleLoss", Msg: "nil loss"})
	}
	return ScaledLoss{s: s, loss: loss}
}

// Backward runs the loss's backward pass from the current scale.
func (l ScaledLoss) Backward() error {
	if l.s == nil {
		panic(&tensor.UsageError{Op: "scaler.ScaledLoss.Backward", Msg: "zero ScaledLoss: make it with Scaler.ScaleLoss"})
	}
	return l.loss.BackwardFrom(l.s.Seed(l.loss.Value()))
}
