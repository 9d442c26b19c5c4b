package trainer

import (
	"math/rand/v2"

	"github.com/vkamp/vkamp/nn"
)

// newCNN is PyTorch's examples/mnist network: conv(1->32, 3x3), ReLU,
// conv(32->64, 3x3), ReLU, 2x2 max-pool, dropout 0.25, flatten,
// linear(9216->128), ReLU, dropout 0.5, linear(128->10), log-softmax.
func newCNN(o Options, rng *rand.Rand) nn.Sequential {
	panic("trainer: the cnn model needs the cnn branch")
}
