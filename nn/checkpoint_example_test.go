package nn_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/vk"
)

// Two models with their own optimizers and one scaler in one checkpoint,
// as PyTorch saves a dict of state dicts; the scaler's state is an extra
// section. Each save is a new version; the last two are kept.
func ExampleSaveCheckpoint() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	dir, _ := os.MkdirTemp("", "ckpt")
	defer os.RemoveAll(dir)

	rng := rand.New(rand.NewPCG(1, 2))
	enc, dec := nn.NewLinear(d, "enc", 8, 4, rng), nn.NewLinear(d, "dec", 4, 8, rng)
	defer nn.Close(enc)
	defer nn.Close(dec)
	encOpt, _ := nn.NewAdam(enc.Parameters(), nn.AdamOptions{LR: 1e-3})
	defer encOpt.Close()
	decOpt, _ := nn.NewSGD(dec.Parameters(), nn.SGDOptions{LR: 0.1, Momentum: 0.9})
	defer decOpt.Close()
	sc, _ := scaler.New(scaler.Options{})
	defer sc.Close()

	params := append(enc.Parameters(), dec.Parameters()...)
	for range 3 {
		sd, _ := sc.StateDict()
		extra := map[string]json.RawMessage{"scaler": sd}
		if err := nn.SaveCheckpoint(dir, params, extra, encOpt, decOpt); err != nil {
			fmt.Println(err)
			return
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fmt.Println(e.Name())
	}

	extra, err := nn.LoadCheckpoint(dir, params, encOpt, decOpt)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sc.LoadStateDict(extra["scaler"]))
	// A checkpoint of two optimizers needs both, in order.
	_, err = nn.LoadCheckpoint(dir, params, encOpt)
	fmt.Println(err != nil)
	// Output:
	// LATEST
	// step-2
	// step-3
	// <nil>
	// true
}
