package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
)

// optimizer is what the trainer needs of Adam and Adadelta.
type optimizer interface {
	nn.Stateful
	scaler.DeviceSkipper
	ZeroGrad() error
	SetLR(lr float64) error
	Close() error
}

// defaults fills the zero fields of o for its model and checks the rest.
func (o *Options) defaults() error {
	if o.Device == nil || o.Train == nil || o.Test == nil {
		return fmt.Errorf("trainer: a device and train and test sets are needed")
	}
	if o.Model == "" {
		o.Model = "mlp"
	}
	if o.Model != "mlp" && o.Model != "cnn" {
		return fmt.Errorf("trainer: unknown model %q: mlp or cnn", o.Model)
	}
	if o.Group == nil {
		o.Group = dist.Single{}
	}
	cnn := o.Model == "cnn"
	if o.Hidden == 0 {
		o.Hidden = 256
	}
	if o.Batch == 0 {
		o.Batch = 64
	}
	if o.LR == 0 {
		o.LR = map[bool]float64{false: 1e-3, true: 1}[cnn]
	}
	if o.Gamma == 0 {
		o.Gamma = map[bool]float64{false: 1, true: 0.7}[cnn]
	}
	if o.Batch < 1 || o.Batch > o.Train.N || o.Hidden < 1 {
		return fmt.Errorf("trainer: batch %d (of %d samples) or hidden %d out of range", o.Batch, o.Train.N, o.Hidden)
	}
	if o.Batch%o.Group.Size() != 0 {
		return fmt.Errorf("trainer: batch %d is not a multiple of the %d ranks", o.Batch, o.Group.Size())
	}
	if !(o.Gamma > 0 && o.Gamma <= 1) {
		return fmt.Errorf("trainer: gamma %g must be in (0, 1]", o.Gamma)
	}
	if cnn && (o.Train.Rows != 28 || o.Train.Cols != 28) {
		return fmt.Errorf("trainer: the cnn model takes 28x28 digits, not %dx%d", o.Train.Rows, o.Train.Cols)
	}
	return nil
}

// build makes o's model and optimizer, or releases what it made.
func build(o Options) (nn.Sequential, optimizer, error) {
	rng := rand.New(rand.NewPCG(o.Seed, 1))
	var model nn.Sequential
	if o.Model == "cnn" {
		model = newCNN(o, rng)
	} else {
		model = nn.Sequential{
			nn.NewLinear(o.Device, "fc1", o.Train.Rows*o.Train.Cols, o.Hidden, rng),
			nn.ReLU{},
			nn.NewLinear(o.Device, "fc2", o.Hidden, 10, rng),
		}
	}
	var opt optimizer
	var err error
	if o.Model == "cnn" {
		opt, err = nn.NewAdadelta(model.Parameters(), nn.AdadeltaOptions{LR: o.LR})
	} else {
		var adam *nn.Adam
		// Fused: the scaler's Step leaves the unscaling to Adam, one pass
		// over the gradients fewer, the same weights (record calls
		// Unscale itself only to combine several ranks' checks).
		if adam, err = nn.NewAdam(model.Parameters(), nn.AdamOptions{LR: o.LR, Fused: true}); err == nil {
			adam.KeepHalfWeights(o.FP16 || o.BF16) // the step writes autocast's weight casts
			opt = adam
		}
	}
	if err != nil {
		nn.Close(model)
		return nil, nil, err
	}
	return model, opt, nil
}

// lr is the learning rate of the current epoch.
func (t *Trainer) lr() float64 { return t.o.LR * math.Pow(t.o.Gamma, float64(t.epoch)) }

// inputShape is the shape of a batch of n digits for the model.
func (t *Trainer) inputShape(n int) []int {
	if t.o.Model == "cnn" {
		return []int{n, 1, t.o.Train.Rows, t.o.Train.Cols}
	}
	return []int{n, t.o.Train.Rows * t.o.Train.Cols}
}

// loss is the model's training loss of its output against labels y:
// cross-entropy of the MLP's logits, NLL of the CNN's log-probabilities.
func (t *Trainer) loss(g *nn.Graph, out *nn.Var, y *tensor.Tensor) *nn.Var {
	if t.o.Model == "cnn" {
		return g.NLLLoss(out, y, nn.Mean)
	}
	return g.CrossEntropyLoss(out, y, nn.Mean)
}

// setTraining puts the model's dropout and batch-norm layers in training
// or evaluation mode (module.train() / module.eval()).
func setTraining(m nn.Sequential, on bool) {
	for _, l := range m {
		switch l := l.(type) {
		case *nn.Dropout:
			l.Training = on
		case interface{ SetTraining(bool) }:
			l.SetTraining(on)
		}
	}
}

// logSoftmax is the CNN's last layer, as examples/mnist's forward ends.
type logSoftmax struct{}

func (logSoftmax) Forward(g *nn.Graph, x *nn.Var) *nn.Var { return g.LogSoftmax(x, -1) }
func (logSoftmax) Parameters() []*nn.Param                { return nil }

// LR returns the learning rate of the current epoch.
func (t *Trainer) LR() float64 { return t.lr() }
