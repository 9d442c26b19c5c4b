package nn_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/vkamp/vkamp/amp"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// The recipes of PyTorch's "Automatic Mixed Precision examples"
// (https://pytorch.org/docs/stable/notes/amp_examples.html), ported line by
// line; the gradient penalty is not among them yet. Each recipe is a
// function of useAMP, as the page's use_amp, so that the Example runs it
// with fp16 autocast and a GradScaler, and TestAMPRecipes (amp_recipes_test.go)
// checks it against the same code in fp32. The loop bodies follow
// PyTorch's, and leave errors unchecked as the page leaves exceptions: a
// device error is carried by the tensors, and the final loss read reports
// it. docs/amp-examples.md compares their lengths with PyTorch's.

// initScale is the recipes' first loss scale. At PyTorch's 65536 the
// gradients of these tiny models overflow fp16 and the scaler skips the
// first steps while it backs off, as PyTorch's does; at 1024 no step is
// skipped, so that an AMP run and an fp32 run take the same steps.
const initScale = 1024

// ampBatch is one batch of the recipes' data.
type ampBatch struct{ input, target *tensor.Tensor }

// recipeResult is what a recipe's run proves: the fp32 loss of the trained
// model(s) on the data before and after, the steps the scaler skipped, and
// the parameters after.
type recipeResult struct {
	before, after float64
	skipped       int
	params        [][]float32
	dtypes        []tensor.DType // the custom functions' output dtypes
	lastNorm      float64        // the clipping recipe: the last step's gradient norm after the clip
	steps         int            // optimizer steps taken
}

// ampSetup returns the recipes' data, fixed: n batches of 8 rows, 4
// features in and 2 targets, and a seeded rng for the models.
func ampSetup(d *vk.Device, n int) ([]ampBatch, *rand.Rand) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]ampBatch, n)
	for i := range data {
		data[i] = ampBatch{
			input:  tensor.FromFloat32(d, random(rng, 8*4), 8, 4),
			target: tensor.FromFloat32(d, random(rng, 8*2), 8, 2),
		}
	}
	return data, rng
}

func releaseData(data []ampBatch) {
	for _, b := range data {
		b.input.Release()
		b.target.Release()
	}
}

// ampMLP is the recipes' model: Linear(4, 16), ReLU, Linear(16, 2).
func ampMLP(d *vk.Device, name string, rng *rand.Rand) nn.Sequential {
	return nn.Sequential{nn.NewLinear(d, name+".fc1", 4, 16, rng), nn.ReLU{}, nn.NewLinear(d, name+".fc2", 16, 2, rng)}
}

// evalLoss is the mean over the data of loss, in fp32 without gradients.
func evalLoss(d *vk.Device, data []ampBatch, loss func(g *nn.Graph, b ampBatch) *nn.Var) (float64, error) {
	var total float64
	for _, b := range data {
		g := nn.NewGraph(d, nn.Options{NoGrad: true})
		v, err := loss(g, b).Item()
		g.Release()
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total / float64(len(data)), nil
}

// finish fills r's loss after training, its skipped steps and parameters.
func finish(d *vk.Device, r *recipeResult, sc *scaler.Scaler, data []ampBatch, params []*nn.Param, loss func(g *nn.Graph, b ampBatch) *nn.Var) (*recipeResult, error) {
	var err error
	if r.after, err = evalLoss(d, data, loss); err != nil {
		return nil, err
	}
	if r.skipped, err = sc.Overflows(); err != nil {
		return nil, err
	}
	for _, p := range params {
		v, err := p.Value.Float32s()
		if err != nil {
			return nil, err
		}
		r.params = append(r.params, v)
	}
	return r, nil
}

func mseOf(model nn.Module) func(g *nn.Graph, b ampBatch) *nn.Var {
	return func(g *nn.Graph, b ampBatch) *nn.Var {
		return g.MSELoss(model.Forward(g, g.Input(b.input)), g.Input(b.target), nn.Mean)
	}
}

// Typical mixed precision training.
func recipeTypical(d *vk.Device, useAMP bool) (*recipeResult, error) {
	data, rng := ampSetup(d, 2)
	defer releaseData(data)
	model := ampMLP(d, "net", rng)
	defer nn.Close(model)
	opt, _ := nn.NewSGD(model.Parameters(), nn.SGDOptions{LR: 0.05})
	defer opt.Close()
	sc, _ := scaler.New(scaler.Options{InitScale: initScale, Disabled: !useAMP})
	defer sc.Close()
	r := &recipeResult{}
	r.before, _ = evalLoss(d, data, mseOf(model))
	epochs := 5

	for range epochs {
		for _, b := range data {
			opt.ZeroGrad()
			g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(useAMP, tensor.Float16)}) // with autocast(...):
			output := model.Forward(g, g.Input(b.input))
			loss := g.MSELoss(output, g.Input(b.target), nn.Mean)
			loss.Scaled(sc).Backward() // scaler.scale(loss).backward()
			sc.Step(opt)               // unscales; skips the step on an inf or NaN
			sc.Update()
			g.Release() // the end of the with block: the step's tensors
		}
	}

	return finish(d, r, sc, data, model.Parameters(), mseOf(model))
}

// Typical mixed precision training: fp16 autocast and a GradScaler.
func Example_ampTypical() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	r, err := recipeTypical(d, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("loss fell:", r.after < r.before)
	fmt.Println("skipped steps:", r.skipped)
	// Output:
	// loss fell: true
	// skipped steps: 0
}

// Working with unscaled gradients: gradient clipping.
func recipeClipping(d *vk.Device, useAMP bool) (*recipeResult, error) {
	data, rng := ampSetup(d, 2)
	defer releaseData(data)
	model := ampMLP(d, "net", rng)
	defer nn.Close(model)
	opt, _ := nn.NewSGD(model.Parameters(), nn.SGDOptions{LR: 0.05})
	defer opt.Close()
	sc, _ := scaler.New(scaler.Options{InitScale: initScale, Disabled: !useAMP})
	defer sc.Close()
	r := &recipeResult{}
	r.before, _ = evalLoss(d, data, mseOf(model))
	epochs, maxNorm := 5, 0.5

	for range epochs {
		for _, b := range data {
			opt.ZeroGrad()
			g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(useAMP, tensor.Float16)})
			output := model.Forward(g, g.Input(b.input))
			loss := g.MSELoss(output, g.Input(b.target), nn.Mean)
			loss.Scaled(sc).Backward()
			sc.Unscale(opt)                                         // unscales the gradients in place
			norm, _ := nn.ClipGradNorm(model.Parameters(), maxNorm) // clips as usual
			norm.Release()                                          // the norm, a device tensor, is not needed
			sc.Step(opt)                                            // does not unscale again; still skips on an inf or NaN
			sc.Update()
			g.Release()
		}
	}

	after, err := nn.ClipGradNorm(model.Parameters(), 1e30) // measures only
	if err != nil {
		return nil, err
	}
	defer after.Release()
	v, err := after.Item()
	if err != nil {
		return nil, err
	}
	r.lastNorm = float64(v)
	return finish(d, r, sc, data, model.Parameters(), mseOf(model))
}

// Gradient clipping under AMP: unscale, clip, step.
func Example_ampGradientClipping() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	r, err := recipeClipping(d, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("loss fell:", r.after < r.before)
	fmt.Println("last gradient norm <= 0.5:", r.lastNorm <= 0.5*(1+1e-5))
	fmt.Println("skipped steps:", r.skipped)
	// Output:
	// loss fell: true
	// last gradient norm <= 0.5: true
	// skipped steps: 0
}

// Working with scaled gradients: gradient accumulation.
func recipeAccumulation(d *vk.Device, useAMP bool) (*recipeResult, error) {
	data, rng := ampSetup(d, 4)
	defer releaseData(data)
	model := ampMLP(d, "net", rng)
	defer nn.Close(model)
	opt, _ := nn.NewSGD(model.Parameters(), nn.SGDOptions{LR: 0.05})
	defer opt.Close()
	sc, _ := scaler.New(scaler.Options{InitScale: initScale, Disabled: !useAMP})
	defer sc.Close()
	r := &recipeResult{}
	r.before, _ = evalLoss(d, data, mseOf(model))
	epochs, itersToAccumulate := 5, 2

	for range epochs {
		for i, b := range data {
			g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(useAMP, tensor.Float16)})
			output := model.Forward(g, g.Input(b.input))
			loss := g.MSELoss(output, g.Input(b.target), nn.Mean)
			loss = g.Scale(loss, 1/float32(itersToAccumulate))
			loss.Scaled(sc).Backward() // accumulates scaled gradients
			g.Release()
			if (i+1)%itersToAccumulate == 0 {
				sc.Step(opt) // may Unscale before, to clip the unscaled gradients
				sc.Update()
				opt.ZeroGrad()
			}
		}
	}

	var err error
	if r.steps, err = opt.Steps(); err != nil {
		return nil, err
	}
	return finish(d, r, sc, data, model.Parameters(), mseOf(model))
}

// Gradient accumulation under AMP: a step every two batches, with the
// scale unchanged between steps.
func Example_ampGradientAccumulation() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	r, err := recipeAccumulation(d, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("loss fell:", r.after < r.before)
	fmt.Println("optimizer steps:", r.steps)
	fmt.Println("skipped steps:", r.skipped)
	// Output:
	// loss fell: true
	// optimizer steps: 10
	// skipped steps: 0
}

// Working with multiple models, losses, and optimizers.
func recipeMultiple(d *vk.Device, useAMP bool) (*recipeResult, error) {
	data, rng := ampSetup(d, 2)
	defer releaseData(data)
	model0, model1 := ampMLP(d, "net0", rng), ampMLP(d, "net1", rng)
	defer nn.Close(model0)
	defer nn.Close(model1)
	optimizer0, _ := nn.NewSGD(model0.Parameters(), nn.SGDOptions{LR: 0.01})
	defer optimizer0.Close()
	optimizer1, _ := nn.NewAdam(model1.Parameters(), nn.AdamOptions{LR: 1e-2})
	defer optimizer1.Close()
	sc, _ := scaler.New(scaler.Options{InitScale: initScale, Disabled: !useAMP})
	defer sc.Close()
	// The sum of the two losses, for the before and after.
	losses := func(g *nn.Graph, b ampBatch) *nn.Var {
		output0, output1 := model0.Forward(g, g.Input(b.input)), model1.Forward(g, g.Input(b.input))
		loss0 := g.MSELoss(g.Add(g.Scale(output0, 2), g.Scale(output1, 3)), g.Input(b.target), nn.Mean)
		loss1 := g.MSELoss(g.Sub(g.Scale(output0, 3), g.Scale(output1, 5)), g.Input(b.target), nn.Mean)
		return g.Add(loss0, loss1)
	}
	r := &recipeResult{}
	r.before, _ = evalLoss(d, data, losses)
	epochs := 5

	for range epochs {
		for _, b := range data {
			optimizer0.ZeroGrad()
			optimizer1.ZeroGrad()
			g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(useAMP, tensor.Float16), RetainGraph: true}) // both backwards share the graph
			output0 := model0.Forward(g, g.Input(b.input))
			output1 := model1.Forward(g, g.Input(b.input))
			loss0 := g.MSELoss(g.Add(g.Scale(output0, 2), g.Scale(output1, 3)), g.Input(b.target), nn.Mean)
			loss1 := g.MSELoss(g.Sub(g.Scale(output0, 3), g.Scale(output1, 5)), g.Input(b.target), nn.Mean)
			loss0.Scaled(sc).Backward() // retain_graph=True: Options.RetainGraph
			loss1.Scaled(sc).Backward()
			sc.Unscale(optimizer0) // to inspect or modify the gradients of optimizer0's params
			sc.Step(optimizer0)
			sc.Step(optimizer1)
			sc.Update()
			g.Release()
		}
	}

	return finish(d, r, sc, data, append(model0.Parameters(), model1.Parameters()...), losses)
}

// Two models, two losses and two optimizers (SGD and Adam) under one
// scaler: a step of either is skipped when any gradient overflowed.
func Example_ampMultipleModels() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	r, err := recipeMultiple(d, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("loss fell:", r.after < r.before)
	fmt.Println("skipped steps:", r.skipped)
	// Output:
	// loss fell: true
	// skipped steps: 0
}

// Custom autograd functions: PyTorch's MyMM (custom_fwd, custom_bwd) and
// a function that needs float32 (custom_fwd(cast_inputs=torch.float32)),
// here an MSE loss written by hand.
func recipeCustom(d *vk.Device, useAMP bool) (*recipeResult, error) {
	mymm := &nn.Function{
		Name:       "MyMM",
		CastInputs: amp.PolicyOf(tensor.OpMatMul), // custom_fwd: a.mm(b) in the dtype autocast gives mm
		Forward: func(in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
			a, b := in[0], in[1]
			return tensor.MatMul(a, b, tensor.MatMulOpts{Out: a.DType()}), in // saved: a, b
		},
		Backward: func(saved, _ []*tensor.Tensor, grad *tensor.Tensor) []*tensor.Tensor {
			a, b := saved[0], saved[1]
			return []*tensor.Tensor{
				tensor.MatMul(grad, b, tensor.MatMulOpts{TransB: true, Out: a.DType()}),
				tensor.MatMul(a, grad, tensor.MatMulOpts{TransA: true, Out: b.DType()}),
			}
		},
	}
	myFloat32Func := &nn.Function{
		Name:       "MyFloat32Func",
		CastInputs: amp.FP32, // custom_fwd(cast_inputs=torch.float32)
		Forward: func(in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
			diff := tensor.Sub(in[0], in[1], tensor.Float32)
			sq := tensor.Mul(diff, diff, tensor.Float32)
			defer sq.Release()
			return tensor.Mean(sq), []*tensor.Tensor{diff}
		},
		Backward: func(saved, _ []*tensor.Tensor, grad *tensor.Tensor) []*tensor.Tensor {
			diff := saved[0]
			return []*tensor.Tensor{tensor.ScaleByItem(diff, grad, 2/float32(diff.Len()), tensor.Float32), nil}
		},
	}

	data, rng := ampSetup(d, 2)
	defer releaseData(data)
	w := nn.NewParam(d, "w", random(rng, 4*2), 4, 2)
	defer w.Close()
	opt, _ := nn.NewSGD([]*nn.Param{w}, nn.SGDOptions{LR: 0.05})
	defer opt.Close()
	sc, _ := scaler.New(scaler.Options{InitScale: initScale, Disabled: !useAMP})
	defer sc.Close()
	lossOf := func(g *nn.Graph, b ampBatch) *nn.Var {
		return g.Apply(myFloat32Func, g.Apply(mymm, g.Input(b.input), g.Param(w)), g.Input(b.target))
	}
	r := &recipeResult{}
	r.before, _ = evalLoss(d, data, lossOf)
	epochs := 5

	for range epochs {
		for _, b := range data {
			opt.ZeroGrad()
			g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(useAMP, tensor.Float16)})
			output := g.Apply(mymm, g.Input(b.input), g.Param(w)) // mymm(input1, input2)
			loss := g.Apply(myFloat32Func, output, g.Input(b.target))
			loss.Scaled(sc).Backward()
			sc.Step(opt)
			sc.Update()
			g.Release()
		}
	}

	g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(useAMP, tensor.Float16), NoGrad: true}) // the dtypes autocast gives
	output := g.Apply(mymm, g.Input(data[0].input), g.Param(w))
	r.dtypes = []tensor.DType{output.DType(), g.Apply(myFloat32Func, output, g.Input(data[0].target)).DType()}
	g.Release()
	return finish(d, r, sc, data, []*nn.Param{w}, lossOf)
}

// Custom autograd functions under autocast: MyMM runs in fp16 as a
// matmul would, MyFloat32Func in fp32 whatever the region.
func ExampleGraph_Apply() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	r, err := recipeCustom(d, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("MyMM output:", r.dtypes[0])
	fmt.Println("MyFloat32Func output:", r.dtypes[1])
	fmt.Println("loss fell:", r.after < r.before)
	fmt.Println("skipped steps:", r.skipped)
	// Output:
	// MyMM output: float16
	// MyFloat32Func output: float32
	// loss fell: true
	// skipped steps: 0
}
