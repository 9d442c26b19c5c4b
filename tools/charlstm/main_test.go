package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// tiny is a run short enough for a test: a small LSTM for 40 iterations.
func tiny(precision string) config {
	c, err := parse([]string{"-data", "../../testdata/tinyshakespeare/input.txt", "-precision", precision,
		"-iters", "40", "-batch", "8", "-seq", "16", "-embed", "16", "-hidden", "32", "-eval-every", "20", "-eval-iters", "4", "-json"})
	if err != nil {
		panic(err)
	}
	return c
}

// TestTrain trains the tiny LSTM in fp32, fp16 (with a scaler) and bf16:
// each run reports twice, its losses fall from the uniform guess's ln 65
// = 4.17, and the fp16 and bf16 runs end near the fp32 one.
func TestTrain(t *testing.T) {
	devtest.Open(t) // fails under CI=true without a device
	final := map[string]float64{}
	for _, p := range []string{"f32", "f16", "bf16"} {
		var out bytes.Buffer
		last, err := run(context.Background(), tiny(p), &out)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("%s: %d reports, want 2: %q", p, len(lines), out.String())
		}
		var first report
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
			t.Fatal(err)
		}
		if !(last.ValLoss < first.ValLoss && first.ValLoss < math.Log(65)) || last.Iter != 40 || !(last.TokensSec > 0) {
			t.Errorf("%s: reports %+v then %+v: want the validation loss falling below ln 65 by iteration 40", p, first, last)
		}
		if (p == "f16") != (last.Scale > 0) {
			t.Errorf("%s: loss scale %g reported", p, last.Scale)
		}
		final[p] = last.ValLoss
	}
	for _, p := range []string{"f16", "bf16"} {
		if math.Abs(final[p]-final["f32"]) > 0.1 {
			t.Errorf("validation loss %s %.4f, f32 %.4f: more than 0.1 apart", p, final[p], final["f32"])
		}
	}
}

func TestParse(t *testing.T) {
	for _, args := range [][]string{{"-precision", "f8"}, {"-iters", "0"}, {"-lr", "0"}, {"-dropout", "1"}, {"-hidden", "-1"},
		{"-sample", "-1"}, {"-temperature", "0"}, {"-sample", "5", "-prompt", ""}} {
		if _, err := parse(args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	if _, err := run(context.Background(), config{data: "no such file", precision: "f32"}, &bytes.Buffer{}); err == nil {
		t.Error("a missing corpus: no error")
	}
}

// TestGenerate draws from an untrained model: every id is in the
// vocabulary, the same seed draws the same text, another seed other text;
// a prompt of several characters runs too.
func TestGenerate(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const vocab = 11
	m := &model{
		emb:  nn.NewEmbedding(d, "embedding", vocab, 8, rng),
		lstm: nn.NewLSTM(d, "lstm", nn.RNNOptions{Input: 8, Hidden: 16, BatchFirst: true}, rng),
		head: nn.NewLinear(d, "head", 16, vocab, rng),
	}
	defer func() {
		for _, p := range m.params() {
			p.Close()
		}
	}()
	draw := func(prompt []int32, seed uint32) []int32 {
		ids, err := generate(d, m, prompt, 40, 1, seed, tensor.Float16)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if id < 0 || id >= vocab {
				t.Fatalf("drew %d, outside the vocabulary of %d", id, vocab)
			}
		}
		return ids
	}
	a := draw([]int32{3}, 5)
	if !slices.Equal(a, draw([]int32{3}, 5)) {
		t.Error("the same seed drew other text")
	}
	if slices.Equal(a, draw([]int32{3}, 6)) {
		t.Error("another seed drew the same text")
	}
	draw([]int32{7, 1, 3}, 5) // a prompt of several characters
}
