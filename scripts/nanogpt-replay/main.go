// Command nanogpt-replay writes what a run of `tools/gpt -recipe cpu -seed
// S` starts from: its initial weights and every batch window it will draw,
// in its order, so that nanoGPT's own code can train from the same state
// (replay.py, beside this file). It answers whether a gap between tools/gpt
// and nanoGPT's published loss comes from vkamp or from the run's seed:
//
//	go run ./scripts/nanogpt-replay -seed 1337 -out /tmp/s1337
//	python3 scripts/nanogpt-replay/replay.py -nanogpt DIR /tmp/s1337
//
// It writes PREFIX.json (parameter names and shapes), PREFIX.f32 (their
// values, little-endian, in that order) and PREFIX.offs (int64 window
// offsets: at each evaluation 20 batches of train then of validation
// windows, and a batch of train windows each iteration).
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/vkamp/vkamp/nn/gpt"
	"github.com/vkamp/vkamp/vk"
)

// The CPU recipe, as tools/gpt runs it.
const (
	layers, heads, dim, block, batch = 4, 4, 128, 64, 12
	iters, evalEvery, evalIters      = 2000, 250, 20
)

func main() {
	seed := flag.Uint64("seed", 1337, "tools/gpt's -seed")
	data := flag.String("data", "testdata/tinyshakespeare/input.txt", "the corpus")
	out := flag.String("out", "", "prefix of the files to write")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "nanogpt-replay: -out is required")
		os.Exit(2)
	}
	if err := run(*seed, *data, *out); err != nil {
		fmt.Fprintln(os.Stderr, "nanogpt-replay:", err)
		os.Exit(1)
	}
}

func run(seed uint64, data, out string) error {
	text, err := os.ReadFile(data)
	if err != nil {
		return err
	}
	runes := []rune(string(text))
	vocab := slices.Compact(slices.Sorted(slices.Values(runes)))
	ntrain := int(float64(len(runes)) * 0.9) // as tools/gpt and prepare.py split
	nval := len(runes) - ntrain

	d, err := vk.Open(vk.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	m := gpt.New(d, gpt.Config{Vocab: len(vocab), BlockSize: block, Layers: layers, Heads: heads, Dim: dim}, rand.New(rand.NewPCG(seed, 0)))
	if err := m.Err(); err != nil {
		return err
	}
	type entry struct {
		Name  string `json:"name"`
		Shape []int  `json:"shape"`
	}
	var names []entry
	var values []float32
	for _, p := range m.Parameters() {
		v, err := p.Value.Float32s()
		if err != nil {
			return err
		}
		names = append(names, entry{p.Name, p.Value.Shape()})
		values = append(values, v...)
	}
	rng := rand.New(rand.NewPCG(seed, 1)) // tools/gpt's batch sampler
	var offs []int64
	draw := func(n, size int) {
		for range n * batch {
			offs = append(offs, int64(rng.IntN(size-block)))
		}
	}
	for it := 0; it <= iters; it++ {
		if it%evalEvery == 0 || it == iters {
			draw(evalIters, ntrain)
			draw(evalIters, nval)
		}
		if it < iters {
			draw(1, ntrain)
		}
	}
	j, err := json.Marshal(names)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out+".json", j, 0o644); err != nil {
		return err
	}
	if err := writeLE(out+".f32", values); err != nil {
		return err
	}
	return writeLE(out+".offs", offs)
}

func writeLE(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := binary.Write(f, binary.LittleEndian, v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
