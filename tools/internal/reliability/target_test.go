package reliability_test

import (
	"math/rand/v2"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// badTarget trains a Linear(8, 4) one SGD step on zero inputs with labels
// for four classes and returns the error of the next read.
func badTarget(e *env, labels ...int32) error {
	model := nn.NewLinear(e.d, "fc", 8, 4, rand.New(rand.NewPCG(4, 4)))
	defer nn.Close(model)
	opt, err := nn.NewSGD(model.Parameters(), nn.SGDOptions{LR: 0.1})
	if err != nil {
		return err
	}
	defer opt.Close()
	g := nn.NewGraph(e.d, nn.Options{})
	defer g.Release()
	loss := g.CrossEntropyLoss(model.Forward(g, g.Input(e.z(len(labels), 8))), e.keep(tensor.FromInt32(e.d, labels, len(labels))), nn.Mean)
	if err := g.Backward(loss, nil); err != nil {
		return err
	}
	if err := opt.Step(); err != nil {
		return err
	}
	return readErr(loss.Value())
}

// badIndex records a training step of an embedding of 5 rows of 4, then
// Linear(4, 3), over idx and labels 0, then reads its loss.
func badIndex(e *env, idx ...int32) error {
	rng := rand.New(rand.NewPCG(4, 5))
	emb, fc := nn.NewEmbedding(e.d, "emb", 5, 4, rng), nn.NewLinear(e.d, "fc", 4, 3, rng)
	defer nn.Close(emb)
	defer nn.Close(fc)
	opt, err := nn.NewSGD(append(emb.Parameters(), fc.Parameters()...), nn.SGDOptions{LR: 0.1})
	if err != nil {
		return err
	}
	defer opt.Close()
	g := nn.NewGraph(e.d, nn.Options{})
	defer g.Release()
	ix := e.keep(tensor.FromInt32(e.d, idx, len(idx)))
	loss := g.CrossEntropyLoss(fc.Forward(g, emb.Forward(g, ix)), e.keep(tensor.Zeros(e.d, tensor.Int32, len(idx))), nn.Mean)
	if err := g.Backward(loss, nil); err != nil {
		return err
	}
	if err := opt.Step(); err != nil {
		return err
	}
	return readErr(loss.Value())
}
