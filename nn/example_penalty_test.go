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

	var first, last float64
	for step := range 30 {
		opt.ZeroGrad()
		g := nn.NewGraph(d, nn.Options{Autocast: true})
		params := make([]*nn.Var, 0, 4)
		for _, p := range model.Parameters() {
			params = append(params, g.Param(p))
		}
		output := model.Forward(g, g.Input(input))
		loss := g.MSELoss(output, g.Input(target), nn.Mean)
		// Gradients of the scaled loss, differentiable (create_graph=True).
		scaledGrads, _ := g.Grad(loss, sc.Seed(loss.Value()), params, true)
		scale, _ := sc.ScaleValue()
		var gradNorm *nn.Var
		for _, sg := range scaledGrads {
			gr := g.Scale(sg, float32(1/scale)) // unscaled
			s := g.Sum(g.Pow(gr, 2))
			if gradNorm == nil {
				gradNorm = s
			} else {
				gradNorm = g.Add(gradNorm, s)
			}
		}
		penalized := g.Add(loss, g.Sqrt(gradNorm))
		penalized.Scaled(sc).Backward()
		sc.Step(opt)
		sc.Update()
		v, _ := penalized.Item()
		if step == 0 {
			first = v
		}
		last = v
		g.Release()
	}
	fmt.Println("penalized loss fell:", last < 0.8*first)
	// Output: penalized loss fell: true
}
