package main

import "github.com/vkamp/vkamp/nn"

// newAdamW is nanoGPT's configure_optimizers: AdamW with weight decay on
// the 2-D weights (embeddings and Linear weights) and none on the 1-D
// LayerNorm scales (and biases, in a model with biases).
func newAdamW(params []*nn.Param, r recipe) (*nn.Adam, error) {
	return nn.NewAdamGroups(nn.DecayGroups(params, r.wd), nn.AdamOptions{LR: r.lr, Beta1: r.beta1, Beta2: r.beta2, Decoupled: true})
}
