package nn

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor"
)

// PyTorch's one-line idioms on a loss var: loss.Backward(),
// loss.Scaled(sc).Backward() for scaler.scale(loss).backward(), and
// loss.Item(). Graph.Backward with an explicit seed stays the general form.

// Backward computes the gradient of the one-element var v with respect to
// every parameter it depends on, as loss.backward() in PyTorch: it is
// v's graph's Backward(v, nil), seed 1.
func (v *Var) Backward() error {
	if v == nil {
		panic(&tensor.UsageError{Op: "Backward", Msg: "nil loss"})
	}
	return v.g.Backward(v, nil)
}

// Item waits for the device and returns the value of the one-element var
// v, as loss.item() in PyTorch: the host wait of a step, to be taken only
// when the value is logged.
func (v *Var) Item() (float64, error) {
	if v == nil {
		panic(&tensor.UsageError{Op: "Item", Msg: "nil var"})
	}
	x, err := v.t.Item()
	if err != nil {
		return 0, fmt.Errorf("nn: item: %w", err)
	}
	return float64(x), nil
}

// Seeder gives the seed of a scaled backward pass: the current loss scale
// as a one-element tensor of like's dtype, which the caller owns.
// *scaler.Scaler is one.
type Seeder interface {
	Seed(like *tensor.Tensor) *tensor.Tensor
}

// ScaledLoss is a loss whose backward pass gives the gradients of the loss
// times a scale, without computing the scaled loss itself.
type ScaledLoss struct {
	loss *Var
	s    Seeder
}

// Scaled returns v scaled by s for the backward pass, as PyTorch's
// scaler.scale(loss): loss.Scaled(sc).Backward() is
// scaler.scale(loss).backward(), and the same as
// g.Backward(loss, sc.Seed(loss.Value())).
func (v *Var) Scaled(s Seeder) ScaledLoss {
	if v == nil || s == nil {
		panic(&tensor.UsageError{Op: "Scaled", Msg: "nil loss or seeder"})
	}
	return ScaledLoss{loss: v, s: s}
}

// Backward runs the backward pass from the loss, seeded with the scale.
func (l ScaledLoss) Backward() error {
	if l.loss == nil {
		panic(&tensor.UsageError{Op: "Backward", Msg: "zero ScaledLoss: make it with Var.Scaled"})
	}
	return l.loss.g.Backward(l.loss, l.s.Seed(l.loss.t))
}
