package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// canonical trains Linear(10, 1) with MSE and SGD (lr 1e-3) on 16x10 random
// data for five epochs, with fp16 autocast and a GradScaler when amp is set,
// and returns the losses.
func canonical(d *vk.Device, amp bool) ([]float32, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	model := nn.NewLinear(d, "fc", 10, 1, rng)
	defer nn.Close(model)
	opt, err := nn.NewSGD(model.Parameters(), nn.SGDOptions{LR: 1e-3})
	if err != nil {
		return nil, err
	}
	defer opt.Close()
	sc, err := scaler.New(scaler.Options{Disabled: !amp})
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	x := tensor.FromFloat32(d, random(rng, 16*10), 16, 10)
	y := tensor.FromFloat32(d, random(rng, 16), 16, 1)
	defer x.Release()
	defer y.Release()
	var losses []float32
	for range 5 {
		g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(amp, tensor.Float16)})
		loss := g.MSELoss(model.Forward(g, g.Input(x)), g.Input(y), nn.Mean)
		if err := opt.ZeroGrad(); err != nil {
			return nil, err
		}
		if err := g.Backward(loss, sc.Seed(loss.Value())); err != nil {
			return nil, err
		}
		if _, err := sc.Step(opt); err != nil {
			return nil, err
		}
		if err := sc.Update(); err != nil {
			return nil, err
		}
		v, err := loss.Value().Item() // the only wait of the step
		g.Release()
		if err != nil {
			return nil, err
		}
		losses = append(losses, v)
	}
	return losses, nil
}

func random(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// The AMP training loop: forward under autocast, backward from the scaled
// loss, step through the scaler, update the scale.
func Example() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	model := nn.NewLinear(d, "fc", 10, 1, rng)
	defer nn.Close(model)
	opt, _ := nn.NewSGD(model.Parameters(), nn.SGDOptions{LR: 1e-3})
	defer opt.Close()
	sc, _ := scaler.New(scaler.Options{}) // scale 65536, growth 2 every 2000 clean steps
	defer sc.Close()
	x := tensor.FromFloat32(d, random(rng, 16*10), 16, 10)
	y := tensor.FromFloat32(d, random(rng, 16), 16, 1)
	for epoch := range 5 {
		g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16}) // fp16 matmuls, fp32 loss
		loss := g.MSELoss(model.Forward(g, g.Input(x)), g.Input(y), nn.Mean)
		opt.ZeroGrad()
		g.Backward(loss, sc.Seed(loss.Value())) // as scaler.scale(loss).backward()
		sc.Step(opt)                            // unscale, skip on inf, step
		sc.Update()
		v, _ := loss.Value().Item()
		fmt.Printf("epoch %d: loss %.4f\n", epoch, v)
		g.Release()
	}
	// Output:
	// epoch 0: loss 0.6569
	// epoch 1: loss 0.6557
	// epoch 2: loss 0.6548
	// epoch 3: loss 0.6537
	// epoch 4: loss 0.6526
}

// TestCanonical: the example's loss falls, and matches an fp32 run of the
// same seed within fp16 tolerance.
func TestCanonical(t *testing.T) {
	d := devtest.Open(t)
	mixed, err := canonical(d, true)
	if err != nil {
		t.Fatal(err)
	}
	full, err := canonical(d, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("amp %v\nfp32 %v", mixed, full)
	for i := range mixed {
		if i > 0 && mixed[i] >= mixed[i-1] {
			t.Errorf("epoch %d: loss %g did not fall from %g", i, mixed[i], mixed[i-1])
		}
		// fp16 inputs and outputs of the linear layer: a few units of 2^-11.
		if diff := math.Abs(float64(mixed[i] - full[i])); diff > 8*0x1p-11*float64(full[i]) {
			t.Errorf("epoch %d: amp loss %g vs fp32 %g", i, mixed[i], full[i])
		}
	}
}
