package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Clipping the gradients to norm 1 under AMP, as in PyTorch: unscale,
// clip, then step. The norm stays on the device until it is read for a log.
func ExampleClipGradNorm() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	model := nn.NewLinear(d, "fc", 4, 2, rng)
	defer nn.Close(model)
	opt, _ := nn.NewAdam(model.Parameters(), nn.AdamOptions{LR: 1e-3, Decoupled: true})
	defer opt.Close()
	sc, _ := scaler.New(scaler.Options{InitScale: 1024})
	defer sc.Close()
	x := tensor.FromFloat32(d, []float32{1, 2, 3, 4, -4, -3, -2, -1}, 2, 4)
	y := tensor.FromFloat32(d, []float32{10, -10, -10, 10}, 2, 2)
	defer x.Release()
	defer y.Release()

	g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
	defer g.Release()
	loss := g.MSELoss(model.Forward(g, g.Input(x)), g.Input(y), nn.Mean)
	opt.ZeroGrad()
	g.Backward(loss, sc.Seed(loss.Value()))
	sc.Unscale(opt)                                   // as scaler.unscale_(optimizer)
	norm, _ := nn.ClipGradNorm(model.Parameters(), 1) // the norm before the clip
	skipped, _ := sc.Step(opt)                        // skipped if Unscale found an inf
	sc.Update()
	if s, _ := skipped.Value(); s {
		fmt.Println("skipped")
	}

	v, _ := norm.Item()
	norm.Release()
	after, _ := nn.ClipGradNorm(model.Parameters(), math.Inf(1)) // +inf: measure only
	w, _ := after.Item()
	after.Release()
	fmt.Printf("gradient norm %.1f, clipped to %.3f\n", v, w)
	// Output:
	// gradient norm 73.2, clipped to 1.000
}

// AdamW as nanoGPT configures it: weight decay on the matrices only, and
// the LR from a warm-up and cosine schedule set before each step.
func ExampleNewAdamGroups() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	model := nn.Sequential{nn.NewLinear(d, "fc1", 4, 8, rng), nn.NewLayerNorm(d, "ln", 8), nn.NewLinear(d, "fc2", 8, 1, rng)}
	defer nn.Close(model)
	groups := nn.DecayGroups(model.Parameters(), 0.1)
	for _, gr := range groups {
		var names []string
		for _, p := range gr.Params {
			names = append(names, p.Name)
		}
		fmt.Printf("weight decay %.1f: %v\n", gr.WeightDecay, names)
	}
	opt, err := nn.NewAdamGroups(groups, nn.AdamOptions{LR: 6e-4, Beta1: 0.9, Beta2: 0.95, Decoupled: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer opt.Close()
	lr := nn.CosineWithWarmup(6e-4, 6e-5, 2, 10)
	x := tensor.FromFloat32(d, []float32{1, 2, 3, 4}, 1, 4)
	defer x.Release()
	for it := range 4 {
		opt.SetLR(lr(it))
		g := nn.NewGraph(d, nn.Options{})
		loss := g.Sum(model.Forward(g, g.Input(x)))
		opt.ZeroGrad()
		g.Backward(loss, nil)
		nn.ClipGradNorm(model.Parameters(), 1.0) // the norm is not needed: ignore it
		opt.Step()
		g.Release()
		fmt.Printf("iteration %d: lr %.2e\n", it, opt.LR())
	}
	steps, _ := opt.Steps()
	fmt.Println("steps:", steps)
	// Output:
	// weight decay 0.1: [fc1.weight fc2.weight]
	// weight decay 0.0: [fc1.bias ln.weight ln.bias fc2.bias]
	// iteration 0: lr 2.00e-04
	// iteration 1: lr 4.00e-04
	// iteration 2: lr 6.00e-04
	// iteration 3: lr 5.79e-04
	// steps: 4
}
