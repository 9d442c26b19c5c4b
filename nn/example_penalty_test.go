package nn_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// The gradient-penalty recipe of PyTorch's AMP examples: the gradients of
// the scaled loss with create_graph, unscaled by ordinary multiplication,
// their norm added to the loss, and the sum backpropagated through the
// scaler as usual.
func ExampleGraph_Grad_gradientPenalty() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	model := nn.Sequential{nn.NewLinear(d, "fc1", 8, 16, rng), nn.ReLU{}, nn.NewLinear(d, "fc2", 16, 1, rng)}
	defer nn.Close(model)
	opt, _ := nn.NewAdam(model.Parameters(), nn.AdamOptions{LR: 1e-2})
	defer opt.Close()
	sc, _ := scaler.New(scaler.Options{})
	defer sc.Close()
	input := tensor.FromFloat32(d, random(rng, 32*8), 32, 8)
	target := tensor.FromFloat32(d, random(rng, 32), 32, 1)
	defer input.Release()
	defer target.Release()

	var losses []float64
	for range 30 { // for input, target in data:
		opt.ZeroGrad()
		g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
		output := model.Forward(g, g.Input(input))
		loss := g.MSELoss(output, g.Input(target), nn.Mean)
		scaledGradParams, _ := g.Grad(loss, sc.Seed(loss.Value()), paramVars(g, model), true)
		scale, _ := sc.ScaleValue()
		var gradNorm *nn.Var
		for _, p := range scaledGradParams {
			gradNorm = addOrFirst(g, gradNorm, g.Sum(g.Pow(g.Scale(p, float32(1/scale)), 2)))
		}
		loss = g.Add(loss, g.Sqrt(gradNorm))
		sc.ScaleLoss(loss).Backward()
		sc.Step(opt)
		sc.Update()
		v, _ := loss.Item()
		losses = append(losses, v)
		g.Release()
	}
	first, last := losses[0], losses[len(losses)-1]
	fmt.Println("penalized loss fell:", last < 0.8*first)
	// Output: penalized loss fell: true
}

// paramVars returns the graph's vars of m's parameters, as
// model.parameters().
func paramVars(g *nn.Graph, m nn.Module) []*nn.Var {
	var vs []*nn.Var
	for _, p := range m.Parameters() {
		vs = append(vs, g.Param(p))
	}
	return vs
}

// addOrFirst returns sum + v, or v when sum is nil: grad_norm += ...
func addOrFirst(g *nn.Graph, sum, v *nn.Var) *nn.Var {
	if sum == nil {
		return v
	}
	return g.Add(sum, v)
}
