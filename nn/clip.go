package nn

import (
	"fmt"
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// Gradient clipping on the device, as torch.nn.utils.clip_grad_norm_ and
// clip_grad_value_: nothing waits for the host. Under AMP, clip after
// scaler.Unscale(opt) and before scaler.Step(opt): the step is skipped on
// the flag Unscale raised, whatever the clip makes of the gradients, and
// the clip never makes a non-finite gradient finite.

// clipEps is PyTorch's: coef = maxNorm / (norm + 1e-6).
const clipEps = 1e-6

// ClipGradNorm scales the gradients of params in place so that their total
// L2 norm is at most maxNorm, as PyTorch's clip_grad_norm_ (norm type 2):
// every gradient is multiplied by min(1, maxNorm/(norm+1e-6)). It returns
// the total norm before clipping as a Float32 [1] tensor on the device,
// which the caller releases, for logs (reading it waits). A NaN or infinite
// norm leaves the gradients non-finite, as in PyTorch. maxNorm must be
// positive (+inf clips nothing). Frozen parameters are left out (all
// frozen: a norm of 0). The
// gradients must be float32, none shared (the optimizers' rule).
//
// Inside a captured step (tensor.Replayer) use a NormClipper instead:
// ClipGradNorm uploads its block tables from the host on every call, which
// a capture refuses (an error wrapping vk.ErrCapturing); a NormClipper
// keeps them on the device between steps.
func ClipGradNorm(params []*Param, maxNorm float64) (*tensor.Tensor, error) {
	var tab tensor.BlockTable
	defer tab.Close() // the device keeps the tables until the clip has run
	return clipGradNorm(params, maxNorm, &tab)
}

// NormClipper is ClipGradNorm with its block tables kept between calls: a
// training loop that clips the same gradients every step uploads them once,
// and a step captured by a tensor.Replayer can clip (ClipGradNorm uploads
// its tables each call, a host write that a capture refuses). The zero
// value is ready; Close frees the tables. It is not safe for concurrent
// use.
type NormClipper struct{ tab tensor.BlockTable }

// Clip is ClipGradNorm(params, maxNorm).
func (c *NormClipper) Clip(params []*Param, maxNorm float64) (*tensor.Tensor, error) {
	return clipGradNorm(params, maxNorm, &c.tab)
}

// Close frees the tables; the clipper can be used again.
func (c *NormClipper) Close() error { return c.tab.Close() }

func clipGradNorm(params []*Param, maxNorm float64, tab *tensor.BlockTable) (*tensor.Tensor, error) {
	if math.IsNaN(maxNorm) || maxNorm <= 0 || maxNorm < math.SmallestNonzeroFloat32 {
		return nil, fmt.Errorf("nn: ClipGradNorm: invalid max norm %g: want a positive one", maxNorm)
	}
	grads, err := clipGrads("ClipGradNorm", params)
	if err != nil {
		return nil, err
	}
	if len(grads) == 0 { // all frozen: PyTorch's norm of no gradients
		return tensor.Zeros(params[0].Value.Device(), tensor.Float32, 1), nil
	}
	norm, err := tensor.ClipNorm(grads, float32(maxNorm), clipEps, tab)
	if err != nil {
		norm.Release()
		return nil, fmt.Errorf("nn: ClipGradNorm: %w", err)
	}
	return norm, nil
}

// ClipGradValue clamps every gradient element of params to [-clip, clip]
// in place, as PyTorch's clip_grad_value_, except that a NaN or an infinity
// stays as it is: clamping an overflow would hide it. clip must be >= 0.
// Frozen parameters are left out.
func ClipGradValue(params []*Param, clip float64) error {
	if math.IsNaN(clip) || clip < 0 {
		return fmt.Errorf("nn: ClipGradValue: invalid clip %g: want a value >= 0", clip)
	}
	grads, err := clipGrads("ClipGradValue", params)
	if err != nil || len(grads) == 0 {
		return err
	}
	var tab tensor.BlockTable
	defer tab.Close()
	if err := tensor.ClampValues(grads, float32(clip), &tab); err != nil {
		return fmt.Errorf("nn: ClipGradValue: %w", err)
	}
	return nil
}

// clipGrads checks params as an optimizer would and returns the gradients
// of those not frozen.
func clipGrads(op string, params []*Param) ([]*tensor.Tensor, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("nn: %s: no parameters", op)
	}
	if err := checkParams(op, params, nil); err != nil {
		return nil, err
	}
	var grads []*tensor.Tensor
	for _, p := range params {
		if p.Frozen {
			continue
		}
		if err := p.Grad.Err(); err != nil {
			return nil, fmt.Errorf("nn: %s: gradient of %s: %w", op, p.Name, err)
		}
		grads = append(grads, p.Grad)
	}
	return grads, nil
}
