package trainer

import (
	"math/rand/v2"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// newCNN is PyTorch's examples/mnist network, initialised as PyTorch's
// layers are: conv(1->32, 3x3), ReLU, conv(32->64, 3x3), ReLU, 2x2
// max-pool, dropout 0.25, flatten, linear(9216->128), ReLU, dropout 0.5,
// linear(128->10), log-softmax.
func newCNN(o Options, rng *rand.Rand) nn.Sequential {
	d, one := o.Device, tensor.Conv2dOpts{} // stride 1, no padding
	flat := 64 * ((o.Train.Rows - 4) / 2) * ((o.Train.Cols - 4) / 2)
	return nn.Sequential{
		nn.NewConv2d(d, "conv1", 1, 32, 3, one, rng),
		nn.ReLU{},
		nn.NewConv2d(d, "conv2", 32, 64, 3, one, rng),
		nn.ReLU{},
		nn.NewMaxPool2d(2, 2),
		&nn.Dropout{P: 0.25, Training: true},
		nn.Flatten{},
		nn.NewLinear(d, "fc1", flat, 128, rng),
		nn.ReLU{},
		&nn.Dropout{P: 0.5, Training: true},
		nn.NewLinear(d, "fc2", 128, 10, rng),
		logSoftmax{},
	}
}
