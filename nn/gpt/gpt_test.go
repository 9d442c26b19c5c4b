package gpt_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/nn/gpt"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

var small = gpt.Config{Vocab: 11, BlockSize: 6, Layers: 2, Heads: 2, Dim: 8}

// ids are two sequences of 5 tokens, the second reaching the last id.
var ids = []int32{1, 4, 0, 9, 3, 10, 2, 2, 7, 5}

const batch = 2

func values(t *testing.T, p *nn.Param) []float64 {
	t.Helper()
	v, err := p.Value.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// hostForward is GPT-2's forward pass in float64, written out from
// nanoGPT's model.py, reading the model's weights.
func hostForward(t *testing.T, m *gpt.Model, ids []int32, batch int) []float64 {
	c := m.Config
	C, T, H := c.Dim, len(ids)/batch, c.Heads
	D := C / H
	N := len(ids)
	wte, wpe := values(t, m.WTE.W), values(t, m.WPE.W)
	x := make([]float64, N*C)
	for r, id := range ids {
		for j := range C {
			x[r*C+j] = wte[int(id)*C+j] + wpe[(r%T)*C+j]
		}
	}
	for _, b := range m.Blocks {
		h := hostLayerNorm(x, values(t, b.LN1.Gamma), C)
		qkv := hostLinear(h, values(t, b.Attn.QKV.W), N, C, 3*C)
		y := make([]float64, N*C)
		for s := range batch {
			for hd := range H {
				for i := range T {
					qi := (s*T+i)*3*C + hd*D
					sc := make([]float64, i+1)
					top := math.Inf(-1)
					for j := 0; j <= i; j++ {
						kj := (s*T+j)*3*C + C + hd*D
						for e := range D {
							sc[j] += qkv[qi+e] * qkv[kj+e]
						}
						sc[j] /= math.Sqrt(float64(D))
						top = max(top, sc[j])
					}
					z := 0.0
					for j := range sc {
						sc[j] = math.Exp(sc[j] - top)
						z += sc[j]
					}
					for j := range sc {
						vj := (s*T+j)*3*C + 2*C + hd*D
						for e := range D {
							y[(s*T+i)*C+hd*D+e] += sc[j] / z * qkv[vj+e]
						}
					}
				}
			}
		}
		add(x, hostLinear(y, values(t, b.Attn.Proj.W), N, C, C))
		f := hostLinear(hostLayerNorm(x, values(t, b.LN2.Gamma), C), values(t, b.MLP.FC.W), N, C, 4*C)
		for i, v := range f {
			f[i] = 0.5 * v * math.Erfc(-v/math.Sqrt2)
		}
		add(x, hostLinear(f, values(t, b.MLP.Proj.W), N, 4*C, C))
	}
	return hostLinear(hostLayerNorm(x, values(t, m.LNF.Gamma), C), wte, N, C, c.Vocab)
}

func add(x, y []float64) {
	for i := range x {
		x[i] += y[i]
	}
}

// hostLinear is x [n, in] times w^T, w [out, in].
func hostLinear(x, w []float64, n, in, out int) []float64 {
	y := make([]float64, n*out)
	for r := range n {
		for o := range out {
			s := 0.0
			for k := range in {
				s += x[r*in+k] * w[o*in+k]
			}
			y[r*out+o] = s
		}
	}
	return y
}

// hostLayerNorm normalises rows of c with scale gamma, no shift, eps 1e-5.
func hostLayerNorm(x, gamma []float64, c int) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x); r += c {
		mean, vr := 0.0, 0.0
		for _, v := range x[r : r+c] {
			mean += v
		}
		mean /= float64(c)
		for _, v := range x[r : r+c] {
			vr += (v - mean) * (v - mean)
		}
		vr /= float64(c)
		for j := range c {
			y[r+j] = (x[r+j] - mean) / math.Sqrt(vr+1e-5) * gamma[j]
		}
	}
	return y
}

func newModel(t *testing.T, d *vk.Device, c gpt.Config) *gpt.Model {
	t.Helper()
	m := gpt.New(d, c, rand.New(rand.NewPCG(1, 2)))
	t.Cleanup(func() { m.Close() })
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestForwardAgainstHost: the logits match a float64 forward pass written
// from nanoGPT's model.py: in fp32 to 1e-4 of the largest logit, under
// fp16 autocast to 2e-2 (fp16 matrix-product inputs, 2^-11 each).
func TestForwardAgainstHost(t *testing.T) {
	d := devtest.Open(t)
	m := newModel(t, d, small)
	// Larger weights than GPT-2's 0.02 make the attention and GELU matter.
	for _, p := range m.Parameters() {
		if len(p.Value.Shape()) == 2 {
			v := values(t, p)
			w := make([]float32, len(v))
			for i := range v {
				w[i] = float32(v[i] * 25)
			}
			set(t, p, w)
		}
	}
	want := hostForward(t, m, ids, batch)
	scale := 0.0
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	idx := tensor.FromInt32(d, ids, len(ids))
	defer idx.Release()
	for _, tc := range []struct {
		autocast bool
		tol      float64
	}{{false, 1e-4}, {true, 2e-2}} {
		g := nn.NewGraph(d, nn.Options{NoGrad: true, Autocast: nn.AutocastTo(tc.autocast, tensor.Float16)})
		got, err := m.Forward(g, idx, batch).Value().Float32s()
		g.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d logits, want %d", len(got), len(want))
		}
		worst := 0.0
		for i := range got {
			worst = max(worst, math.Abs(float64(got[i])-want[i]))
		}
		t.Logf("autocast %v: largest logit %.3f, largest error %.2e", tc.autocast, scale, worst)
		if worst > tc.tol*scale {
			t.Errorf("autocast %v: error %.3g over %.3g of the largest logit %.3g", tc.autocast, worst, tc.tol, scale)
		}
	}
}

// TestGradientFiniteDifferences: the gradient of the loss with respect to
// elements of every kind of parameter (both uses of the tied wte, wpe,
// attention, MLP, LayerNorm scales) matches central differences of the
// fp32 loss on the device.
func TestGradientFiniteDifferences(t *testing.T) {
	d := devtest.Open(t)
	m := newModel(t, d, small)
	idx := tensor.FromInt32(d, ids, len(ids))
	defer idx.Release()
	targets := tensor.FromInt32(d, []int32{4, 0, 9, 3, 10, 2, 2, 7, 5, 1}, len(ids))
	defer targets.Release()
	loss := func(train bool) float64 {
		g := nn.NewGraph(d, nn.Options{NoGrad: !train})
		defer g.Release()
		l, _ := m.Loss(g, idx, targets, batch)
		if train {
			for _, p := range m.Parameters() {
				p.ZeroGrad()
			}
			if err := g.Backward(l, nil); err != nil {
				t.Fatal(err)
			}
		}
		v, err := l.Value().Item()
		if err != nil {
			t.Fatal(err)
		}
		return float64(v)
	}
	loss(true)
	rng := rand.New(rand.NewPCG(5, 5))
	const h = 1e-3 // the embeddings are ~0.02 and LayerNorm divides by their spread
	worst := 0.0
	defer func() { t.Logf("largest difference %.2e", worst) }()
	for _, p := range m.Parameters() {
		grad, err := p.Grad.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		v := values(t, p)
		// The largest gradient element (surely not 0) and one at random.
		big := 0
		for i := range grad {
			if math.Abs(float64(grad[i])) > math.Abs(float64(grad[big])) {
				big = i
			}
		}
		for _, i := range []int{big, rng.IntN(len(v))} {
			diff := make([]float64, 2)
			for k, s := range []float64{h, -h} {
				w := make([]float32, len(v))
				for j := range v {
					w[j] = float32(v[j])
				}
				w[i] = float32(v[i] + s)
				set(t, p, w)
				diff[k] = loss(false)
			}
			fd := (diff[0] - diff[1]) / (2 * h)
			worst = max(worst, math.Abs(fd-float64(grad[i])))
			if g := float64(grad[i]); math.Abs(fd-g) > 1e-3+2e-2*math.Abs(g) {
				t.Errorf("%s[%d]: gradient %.6f, central difference %.6f", p.Name, i, g, fd)
			}
		}
		w := make([]float32, len(v))
		for j := range v {
			w[j] = float32(v[j])
		}
		set(t, p, w)
	}
}

// set copies w into p's value.
func set(t *testing.T, p *nn.Param, w []float32) {
	t.Helper()
	x := tensor.FromFloat32(p.Value.Device(), w, p.Value.Shape()...)
	defer x.Release()
	if err := p.Set(x); err != nil {
		t.Fatal(err)
	}
}

func TestParameters(t *testing.T) {
	d := devtest.Open(t)
	m := newModel(t, d, small)
	names := map[string][]int{}
	for _, p := range m.Parameters() {
		names[p.Name] = p.Value.Shape()
	}
	for name, shape := range map[string][]int{
		"wte.weight": {11, 8}, "wpe.weight": {6, 8}, "h.1.ln_1.weight": {8}, "h.1.attn.c_attn.weight": {24, 8},
		"h.1.attn.c_proj.weight": {8, 8}, "h.0.ln_2.weight": {8}, "h.0.mlp.c_fc.weight": {32, 8}, "h.0.mlp.c_proj.weight": {8, 32},
		"ln_f.weight": {8},
	} {
		if fmt.Sprint(names[name]) != fmt.Sprint(shape) {
			t.Errorf("%s: shape %v, want %v", name, names[name], shape)
		}
	}
	// wte 88 + wpe 48 + 2 blocks of 8+192+64+8+256+256 + ln_f 8.
	if n, want := m.NumParams(false), 88+48+2*784+8; n != want || len(names) != 2+2*6+1 {
		t.Errorf("%d parameters in %d tensors, want %d in 15", n, len(names), want)
	}
	if n := m.NumParams(true); n != m.NumParams(false)-48 {
		t.Errorf("non-embedding count %d", n)
	}
	// nanoGPT's initialisation: std 0.02, c_proj 0.02/sqrt(2*layers).
	for _, tc := range []struct {
		p   *nn.Param
		std float64
	}{{m.Blocks[0].MLP.FC.W, 0.02}, {m.Blocks[1].MLP.Proj.W, 0.02 / 2}} {
		v := values(t, tc.p)
		ss := 0.0
		for _, x := range v {
			ss += x * x
		}
		if std := math.Sqrt(ss / float64(len(v))); math.Abs(std-tc.std) > 0.2*tc.std {
			t.Errorf("%s: std %.4f, want %.4f", tc.p.Name, std, tc.std)
		}
	}
}

func TestMisuse(t *testing.T) {
	d := devtest.Open(t)
	m := newModel(t, d, small)
	idx := tensor.FromInt32(d, ids, len(ids))
	defer idx.Release()
	long := tensor.FromInt32(d, make([]int32, 14), 14)
	defer long.Release()
	f := tensor.Zeros(d, tensor.Float32, 10)
	defer f.Release()
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	for name, fn := range map[string]func(){
		"dim not a multiple of heads": func() {
			gpt.New(d, gpt.Config{Vocab: 5, BlockSize: 4, Layers: 1, Heads: 3, Dim: 8}, rand.New(rand.NewPCG(1, 1)))
		},
		"no layers":               func() { gpt.New(d, gpt.Config{Vocab: 5, BlockSize: 4, Heads: 2, Dim: 8}, rand.New(rand.NewPCG(1, 1))) },
		"seq over the block size": func() { m.Forward(g, long, 2) },
		"rows not a multiple":     func() { m.Forward(g, idx, 3) },
		"float ids":               func() { m.Forward(g, f, 2) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%s: no panic", name)
				} else if _, ok := r.(error); !ok {
					t.Errorf("%s: panicked with %v, not a typed error", name, r)
				}
			}()
			fn()
		}()
	}
}

// TestGenerateStops: a done Context stops Generate between tokens, with the
// tokens so far and the context's error (tools/gpt stops sampling on SIGINT
// and SIGTERM so).
func TestGenerateStops(t *testing.T) {
	d := devtest.Open(t)
	m := newModel(t, d, small)
	ctx, cancel := context.WithCancel(context.Background())
	o := gpt.GenerateOptions{Context: ctx}
	out, err := m.Generate([]int32{1}, 3, o, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(out) != 3 {
		t.Fatalf("a live context: %d tokens, %v", len(out), err)
	}
	cancel()
	out, err = m.Generate([]int32{1}, 1000000, o, rand.New(rand.NewPCG(1, 1)))
	if !errors.Is(err, context.Canceled) || len(out) != 0 {
		t.Errorf("a cancelled context: %d tokens, %v; want none and context.Canceled", len(out), err)
	}
}
