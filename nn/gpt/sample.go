package gpt

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// Sample draws a token from logits (one row, [vocab]) as nanoGPT's
// generate does: logits / temperature, those below the topK-th largest set
// to -inf (ties with it kept; topK 0 or at least the vocabulary keeps
// all), softmax, then one multinomial draw from rng. Temperature 0 is the
// argmax (greedy decoding). A negative temperature or topK, NaN logits or
// an empty row panic with a *tensor.UsageError.
func Sample(logits []float32, temperature float64, topK int, rng *rand.Rand) int {
	if len(logits) == 0 || temperature < 0 || math.IsNaN(temperature) || topK < 0 || rng == nil {
		panic(&tensor.UsageError{Op: "gpt.Sample", Msg: fmt.Sprintf("%d logits, temperature %g, top-k %d: want logits, temperature >= 0, top-k >= 0 and an rng",
			len(logits), temperature, topK)})
	}
	best := 0
	for i, v := range logits {
		if v != v {
			panic(&tensor.UsageError{Op: "gpt.Sample", Msg: fmt.Sprintf("logit %d is NaN", i)})
		}
		if v > logits[best] {
			best = i
		}
	}
	if temperature == 0 {
		return best
	}
	cut := math.Inf(-1)
	if topK > 0 && topK < len(logits) {
		sorted := slices.Clone(logits)
		slices.Sort(sorted)
		cut = float64(sorted[len(sorted)-topK]) / temperature
	}
	// Softmax in float64, from the largest logit down.
	top := float64(logits[best]) / temperature
	p := make([]float64, len(logits))
	total := 0.0
	for i, v := range logits {
		if x := float64(v) / temperature; x >= cut {
			p[i] = math.Exp(x - top)
			total += p[i]
		}
	}
	u := rng.Float64() * total
	last := best
	for i, w := range p {
		if w == 0 {
			continue
		}
		if u < w {
			return i
		}
		u -= w
		last = i
	}
	return last // u rounded past the end
}

// GenerateOptions configure Generate, as nanoGPT's sample.py.
type GenerateOptions struct {
	Temperature float64 // logits / Temperature; 0 is greedy [sample.py: 0.8]
	TopK        int     // keep the TopK most likely tokens; 0 keeps all [sample.py: 200]
	// Autocast runs the forward passes under autocast in this dtype
	// (nn.Options.Autocast): Float16 or BFloat16; Float32 (zero) is off.
	Autocast tensor.DType
	// Context, if set, stops the generation between tokens once it is
	// done: Generate returns the tokens so far and the context's error.
	Context context.Context
}

// Generate appends n tokens to prompt (at least one token), one forward
// pass each: the context is cropped to the last BlockSize tokens, the
// last position's logits are read back and a token drawn by Sample from
// rng. It returns the new tokens. Dropout is off while it runs, and the
// model's training mode is restored after. Errors are the device's.
func (m *Model) Generate(prompt []int32, n int, o GenerateOptions, rng *rand.Rand) ([]int32, error) {
	if len(prompt) == 0 || n < 0 {
		panic(&tensor.UsageError{Op: "gpt.Generate", Msg: fmt.Sprintf("prompt of %d tokens, n %d: want a prompt and n >= 0", len(prompt), n)})
	}
	training := m.dropout.Training
	m.SetTraining(false)
	defer m.SetTraining(training)
	ctx := slices.Clone(prompt)
	out := make([]int32, 0, n)
	for range n {
		if o.Context != nil && o.Context.Err() != nil {
			return out, o.Context.Err()
		}
		c := ctx[max(0, len(ctx)-m.Config.BlockSize):]
		row, err := m.lastLogits(c, nn.Options{NoGrad: true, Autocast: o.Autocast})
		if err != nil {
			return out, err
		}
		tok := int32(Sample(row, o.Temperature, o.TopK, rng))
		ctx = append(ctx, tok)
		out = append(out, tok)
	}
	return out, nil
}

// lastLogits returns the logits of the last position of one sequence.
func (m *Model) lastLogits(ids []int32, opts nn.Options) ([]float32, error) {
	idx := tensor.FromInt32(m.dev, ids, len(ids))
	defer idx.Release()
	g := nn.NewGraph(m.dev, opts)
	defer g.Release()
	all, err := m.Forward(g, idx, 1).Value().Float32s()
	if err != nil {
		return nil, err
	}
	return all[len(all)-m.Config.Vocab:], nil
}
