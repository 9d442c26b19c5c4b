package gpt_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/nn/gpt"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// A GPT learns the sequence "abcabc..." in 40 AMP steps, then continues a
// prompt greedily.
func Example() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	m := gpt.New(d, gpt.Config{Vocab: 3, BlockSize: 8, Layers: 1, Heads: 2, Dim: 16}, rng)
	defer m.Close()
	opt, _ := nn.NewAdamGroups(nn.DecayGroups(m.Parameters(), 0.1), nn.AdamOptions{LR: 1e-2, Decoupled: true})
	defer opt.Close()
	sc, _ := scaler.New(scaler.Options{})
	defer sc.Close()
	const batch, seq = 4, 8
	x, y := make([]int32, batch*seq), make([]int32, batch*seq)
	for range 40 {
		for i := range x { // windows of abcabc... at random offsets
			if i%seq == 0 {
				x[i] = int32(rng.IntN(3))
			} else {
				x[i] = (x[i-1] + 1) % 3
			}
			y[i] = (x[i] + 1) % 3
		}
		xb, yb := tensor.FromInt32(d, x, len(x)), tensor.FromInt32(d, y, len(y))
		g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
		loss, _ := m.Loss(g, xb, yb, batch)
		opt.ZeroGrad()
		g.Backward(loss, sc.Seed(loss.Value()))
		sc.Unscale(opt)
		if norm, err := nn.ClipGradNorm(m.Parameters(), 1); err == nil {
			norm.Release() // the norm before clipping, for logs
		}
		sc.Step(opt)
		sc.Update()
		g.Release()
		xb.Release()
		yb.Release()
	}
	out, err := m.Generate([]int32{1}, 9, gpt.GenerateOptions{Temperature: 0, Autocast: tensor.Float16}, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := "b"
	for _, id := range out {
		s += string(rune('a' + id))
	}
	fmt.Println(s)
	// Output:
	// bcabcabcab
}
