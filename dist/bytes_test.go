package dist_test

import (
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn/gpt"
)

// TestGPTGradientBytes: the GPT of nanoGPT's shakespeare_char GPU recipe
// (6 layers, 384 dimensions, vocabulary 65, context 256, no biases, head
// tied to the token embedding) all-reduces 10,745,088 fp32 gradients a
// step: 42,980,352 bytes. By hand: wte 65*384 + wpe 256*384 + 6 blocks of
// (12*384^2 + 2*384) + ln_f 384.
func TestGPTGradientBytes(t *testing.T) {
	d := devtest.Open(t)
	m := gpt.New(d, gpt.Config{Vocab: 65, BlockSize: 256, Layers: 6, Heads: 6, Dim: 384}, rand.New(rand.NewPCG(1, 2)))
	defer m.Close()
	dp, err := dist.NewDataParallel(dist.Single{}, m.Parameters(), dist.DataParallelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const want = 4 * (65*384 + 256*384 + 6*(12*384*384+2*384) + 384)
	if got := dp.GradientBytes(); got != want || want != 42980352 {
		t.Errorf("GPU recipe's gradients: %d bytes, want %d", got, want)
	}
}
