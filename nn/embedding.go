package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Embedding returns the rows of w [V, C] picked by idx, Int32 class
// indices of any shape [...]: a var [..., C] in w's dtype (PyTorch's
// embedding is on no autocast list and runs in the weight's dtype). An
// index outside [0, V), negative ones included, gives a row of NaN rather
// than reading another row and raises the device's assert: the step is
// skipped and the next read returns a *tensor.AssertError matching
// tensor.ErrBadIndex, as a bad label does in CrossEntropyLoss. The
// gradient of w is the rows of the upstream gradient summed by index,
// deterministically (tensor.EmbeddingBackward).
// A floating idx panics with a *tensor.DTypeError, a w that is not 2-D
// with a *tensor.ShapeError.
func (g *Graph) Embedding(w *Var, idx *tensor.Tensor) *Var {
	defer g.use("Embedding").done()
	if idx == nil {
		panic(&tensor.UsageError{Op: "Embedding", Msg: "nil indices"})
	}
	w = g.cast(w, g.dtypeFor(tensor.OpEmbedding, w))
	out := tensor.Embedding(w.t, idx)
	return g.record(tensor.OpEmbedding, out, attrs{}, []*tensor.Tensor{idx}, w)
}

// The gradient of the weight sums dy's rows by index, in fp32, then takes
// the weight's dtype.
func embeddingBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	w := n.inputs[0]
	dw := tensor.EmbeddingBackward(n.saved[0], dy, w.Shape()[0])
	if w.DType() != tensor.Float32 {
		dw = tensor.Cast(g.keep(dw), w.DType())
	}
	return []*tensor.Tensor{dw}
}

// Embedding is a lookup table of Vocab vectors of Dim elements, as
// torch.nn.Embedding: W [vocab, dim].
type Embedding struct {
	W *Param
}

// NewEmbedding returns an Embedding of vocab rows of dim elements,
// initialised from the normal distribution N(0, 1) as PyTorch does. Sizes
// below 1 or a nil rng panic with a *tensor.UsageError naming the layer.
func NewEmbedding(d *vk.Device, name string, vocab, dim int, rng *rand.Rand) *Embedding {
	n := checkSizes("NewEmbedding", name, fmt.Sprintf("vocab %d, dim %d", vocab, dim), vocab, dim)
	if rng == nil {
		panic(&tensor.UsageError{Op: "NewEmbedding", Msg: fmt.Sprintf("layer %q: nil rng", name)})
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return &Embedding{W: NewParam(d, name+".weight", v, vocab, dim)}
}

// Forward looks up the rows of idx, Int32 indices of any shape [...], and
// returns them as [..., dim].
func (m *Embedding) Forward(g *Graph, idx *tensor.Tensor) *Var {
	return g.Embedding(g.Param(m.W), idx)
}

// Parameters returns the table.
func (m *Embedding) Parameters() []*Param { return []*Param{m.W} }
