package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vkamp/vkamp/tensor"
)

// Initialisers, as torch.nn.init: each fills a parameter's value in place
// (Param.Set: the optimizer keeps updating the same memory), drawing on the
// host from rng, in row-major order, so the same rng state gives the same
// weights on every device. A nil rng panics with a *tensor.UsageError; a
// bad argument, or a parameter carrying an error, is returned as an error
// naming the parameter.

// FanMode chooses the fan a Kaiming initialiser keeps the variance of.
type FanMode int

const (
	// FanIn keeps the variance of the forward pass (PyTorch's default).
	FanIn FanMode = iota
	// FanOut keeps the variance of the backward pass.
	FanOut
)

// Fans returns the fan-in and fan-out of a weight of shape, as PyTorch's
// _calculate_fan_in_and_fan_out: for [out, in, k...], fan-in is in*prod(k)
// and fan-out out*prod(k). A shape of fewer than 2 dimensions is an error.
func Fans(shape []int) (fanIn, fanOut int, err error) {
	if len(shape) < 2 {
		return 0, 0, fmt.Errorf("nn: fan in and fan out need 2 dimensions or more, shape %v has %d", shape, len(shape))
	}
	receptive := 1
	for _, s := range shape[2:] {
		receptive *= s
	}
	return shape[1] * receptive, shape[0] * receptive, nil
}

// Gain is PyTorch's calculate_gain: the recommended gain for a
// nonlinearity: 1 for "linear", "conv1d", "conv2d", "conv3d",
// "conv_transpose1d", "conv_transpose2d", "conv_transpose3d" and
// "sigmoid"; 5/3 for "tanh"; sqrt(2) for "relu"; sqrt(2/(1+param^2)) for
// "leaky_relu", param being the negative slope (PyTorch's 0.01 when None:
// pass it); 3/4 for "selu". param is ignored but for "leaky_relu".
func Gain(nonlinearity string, param float64) (float64, error) {
	switch nonlinearity {
	case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid":
		return 1, nil
	case "tanh":
		return 5.0 / 3, nil
	case "relu":
		return math.Sqrt2, nil
	case "leaky_relu":
		if math.IsNaN(param) || math.IsInf(param, 0) {
			return 0, fmt.Errorf("nn: negative slope %g is not valid", param)
		}
		return math.Sqrt(2 / (1 + param*param)), nil
	case "selu":
		return 3.0 / 4, nil
	}
	return 0, fmt.Errorf("nn: unsupported nonlinearity %q", nonlinearity)
}

// InitNormal fills p with draws from the normal distribution of mean and
// standard deviation std (GPT-2's weights: mean 0, std 0.02).
func InitNormal(p *Param, mean, std float64, rng *rand.Rand) error {
	if err := finiteArgs("InitNormal", p, mean, std); err != nil {
		return err
	}
	if std < 0 {
		return fmt.Errorf("nn: InitNormal %s: std %g is negative", p.Name, std)
	}
	return fill("InitNormal", p, rng, func(r *rand.Rand) float64 { return mean + std*r.NormFloat64() })
}

// InitUniform fills p with draws from the uniform distribution on [a, b).
func InitUniform(p *Param, a, b float64, rng *rand.Rand) error {
	if err := finiteArgs("InitUniform", p, a, b); err != nil {
		return err
	}
	if b < a {
		return fmt.Errorf("nn: InitUniform %s: bounds [%g, %g) are reversed", p.Name, a, b)
	}
	return fill("InitUniform", p, rng, func(r *rand.Rand) float64 { return a + (b-a)*r.Float64() })
}

// InitConstant sets every element of p to v.
func InitConstant(p *Param, v float64) error {
	if err := finiteArgs("InitConstant", p, v); err != nil {
		return err
	}
	return fillValue(p, v)
}

// InitZeros sets every element of p to 0 (biases).
func InitZeros(p *Param) error { return InitConstant(p, 0) }

// InitOnes sets every element of p to 1 (norm scales).
func InitOnes(p *Param) error { return InitConstant(p, 1) }

// InitKaimingUniform is kaiming_uniform_: uniform on [-bound, bound) with
// bound = gain * sqrt(3/fan), gain = Gain(nonlinearity, a), fan the fan-in
// or fan-out as mode says. PyTorch's defaults are a = 0, FanIn,
// "leaky_relu"; nn.Linear's own init is a = sqrt(5).
func InitKaimingUniform(p *Param, a float64, mode FanMode, nonlinearity string, rng *rand.Rand) error {
	std, err := kaimingStd("InitKaimingUniform", p, a, mode, nonlinearity)
	if err != nil {
		return err
	}
	bound := math.Sqrt(3) * std
	return fill("InitKaimingUniform", p, rng, func(r *rand.Rand) float64 { return (2*r.Float64() - 1) * bound })
}

// InitKaimingNormal is kaiming_normal_: normal with mean 0 and standard
// deviation gain / sqrt(fan), as InitKaimingUniform chooses them.
func InitKaimingNormal(p *Param, a float64, mode FanMode, nonlinearity string, rng *rand.Rand) error {
	std, err := kaimingStd("InitKaimingNormal", p, a, mode, nonlinearity)
	if err != nil {
		return err
	}
	return fill("InitKaimingNormal", p, rng, func(r *rand.Rand) float64 { return std * r.NormFloat64() })
}

// InitXavierUniform is xavier_uniform_: uniform on [-bound, bound) with
// bound = gain * sqrt(6/(fanIn+fanOut)).
func InitXavierUniform(p *Param, gain float64, rng *rand.Rand) error {
	std, err := xavierStd("InitXavierUniform", p, gain)
	if err != nil {
		return err
	}
	bound := math.Sqrt(3) * std
	return fill("InitXavierUniform", p, rng, func(r *rand.Rand) float64 { return (2*r.Float64() - 1) * bound })
}

// InitXavierNormal is xavier_normal_: normal with mean 0 and standard
// deviation gain * sqrt(2/(fanIn+fanOut)).
func InitXavierNormal(p *Param, gain float64, rng *rand.Rand) error {
	std, err := xavierStd("InitXavierNormal", p, gain)
	if err != nil {
		return err
	}
	return fill("InitXavierNormal", p, rng, func(r *rand.Rand) float64 { return std * r.NormFloat64() })
}

func kaimingStd(op string, p *Param, a float64, mode FanMode, nonlinearity string) (float64, error) {
	if err := finiteArgs(op, p, a); err != nil {
		return 0, err
	}
	fanIn, fanOut, err := Fans(p.Value.Shape())
	if err != nil {
		return 0, fmt.Errorf("nn: %s %s: %w", op, p.Name, err)
	}
	fan := fanIn
	switch mode {
	case FanIn:
	case FanOut:
		fan = fanOut
	default:
		return 0, fmt.Errorf("nn: %s %s: unknown fan mode %d", op, p.Name, mode)
	}
	gain, err := Gain(nonlinearity, a)
	if err != nil {
		return 0, fmt.Errorf("nn: %s %s: %w", op, p.Name, err)
	}
	return gain / math.Sqrt(float64(fan)), nil
}

func xavierStd(op string, p *Param, gain float64) (float64, error) {
	if err := finiteArgs(op, p, gain); err != nil {
		return 0, err
	}
	fanIn, fanOut, err := Fans(p.Value.Shape())
	if err != nil {
		return 0, fmt.Errorf("nn: %s %s: %w", op, p.Name, err)
	}
	return gain * math.Sqrt(2/float64(fanIn+fanOut)), nil
}

// finiteArgs checks p and the arguments of an initialiser.
func finiteArgs(op string, p *Param, args ...float64) error {
	if p == nil || p.Value == nil {
		panic(&tensor.UsageError{Op: op, Msg: "nil parameter"})
	}
	for _, a := range args {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return fmt.Errorf("nn: %s %s: argument %g is not finite", op, p.Name, a)
		}
	}
	if err := p.Value.Err(); err != nil {
		return fmt.Errorf("nn: %s %s: %w", op, p.Name, err)
	}
	return nil
}

// fill sets p's value to draw(rng) per element, in row-major order.
func fill(op string, p *Param, rng *rand.Rand, draw func(*rand.Rand) float64) error {
	if rng == nil {
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("parameter %s: nil rng", p.Name)})
	}
	v := make([]float32, p.Value.Len())
	for i := range v {
		v[i] = float32(draw(rng))
	}
	t := tensor.FromFloat32(p.Value.Device(), v, p.Value.Shape()...)
	defer t.Release()
	return p.Set(t)
}

// fillValue sets every element of p's value to v.
func fillValue(p *Param, v float64) error {
	t := tensor.Full(p.Value.Device(), tensor.Float32, float32(v), p.Value.Shape()...)
	defer t.Release()
	return p.Set(t)
}
