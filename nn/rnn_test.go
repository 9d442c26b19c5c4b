package nn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// rnnCase is one recurrent layer to check against rnnRef.
type rnnCase struct {
	kind string // "rnn", "rnn-relu", "lstm", "gru"
	opts nn.RNNOptions
}

func (c rnnCase) make(d *vk.Device) *nn.Recurrent {
	rng := rand.New(rand.NewPCG(5, 6))
	switch c.kind {
	case "lstm":
		return nn.NewLSTM(d, c.kind, c.opts, rng)
	case "gru":
		return nn.NewGRU(d, c.kind, c.opts, rng)
	}
	return nn.NewRNN(d, c.kind, c.opts, rng)
}

var rnnCases = []rnnCase{
	{"rnn", nn.RNNOptions{Input: 5, Hidden: 6, Layers: 2}},
	{"rnn-relu", nn.RNNOptions{Input: 5, Hidden: 6, ReLU: true}},
	{"lstm", nn.RNNOptions{Input: 5, Hidden: 6, Layers: 2}},
	{"lstm", nn.RNNOptions{Input: 5, Hidden: 6, BatchFirst: true, NoBias: true}},
	{"gru", nn.RNNOptions{Input: 5, Hidden: 6, Layers: 2}},
	{"gru", nn.RNNOptions{Input: 5, Hidden: 6, BatchFirst: true}},
}

// rnnRef runs the layer in float64 as PyTorch's equations say: x is
// [seq][batch][input] (seq first), ws per layer W_ih, W_hh, b_ih, b_hh
// (nil biases for none), h0 and c0 [layers][batch][hidden]. It returns
// the output [seq][batch][hidden], h_n and c_n.
func rnnRef(kind string, hidden int, ws [][4][]float64, x, h0, c0 [][][]float64) (out, hn, cn [][][]float64) {
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	for l, w := range ws {
		in := len(x[0][0])
		gates := len(w[0]) / (in * hidden)
		h, c := clone2(h0[l]), clone2(c0[l])
		var outs [][][]float64
		for _, xt := range x {
			next := make([][]float64, len(xt))
			for b := range xt {
				pre := func(k int) (xi, hh float64) { // row k of x W_ih^T + b_ih and of h W_hh^T + b_hh
					for j := range in {
						xi += xt[b][j] * w[0][k*in+j]
					}
					for j := range hidden {
						hh += h[b][j] * w[1][k*hidden+j]
					}
					if w[2] != nil {
						xi, hh = xi+w[2][k], hh+w[3][k]
					}
					return xi, hh
				}
				next[b] = make([]float64, hidden)
				for u := range hidden {
					a := make([]float64, 2*gates)
					for q := range gates {
						a[2*q], a[2*q+1] = pre(q*hidden + u)
					}
					switch kind {
					case "lstm":
						i, f, g, o := sig(a[0]+a[1]), sig(a[2]+a[3]), math.Tanh(a[4]+a[5]), sig(a[6]+a[7])
						c[b][u] = f*c[b][u] + i*g
						next[b][u] = o * math.Tanh(c[b][u])
					case "gru":
						r, z := sig(a[0]+a[1]), sig(a[2]+a[3])
						n := math.Tanh(a[4] + r*a[5])
						next[b][u] = (1-z)*n + z*h[b][u]
					case "rnn-relu":
						next[b][u] = math.Max(a[0]+a[1], 0)
					default:
						next[b][u] = math.Tanh(a[0] + a[1])
					}
				}
			}
			h = next
			outs = append(outs, clone2(h))
		}
		x = outs
		hn, cn = append(hn, h), append(cn, c)
	}
	return x, hn, cn
}

func clone2(v [][]float64) [][]float64 {
	out := make([][]float64, len(v))
	for i := range v {
		out[i] = slices.Clone(v[i])
	}
	return out
}

func flat3(v [][][]float64) []float64 {
	var out []float64
	for _, a := range v {
		for _, b := range a {
			out = append(out, b...)
		}
	}
	return out
}

// shape3 cuts flat into [n0][n1][n2].
func shape3(flat []float64, n0, n1, n2 int) [][][]float64 {
	out := make([][][]float64, n0)
	for i := range out {
		out[i] = make([][]float64, n1)
		for j := range out[i] {
			out[i][j] = flat[(i*n1+j)*n2 : (i*n1+j+1)*n2]
		}
	}
	return out
}

// swap01 swaps the first two axes of [n0][n1][...].
func swap01(v [][][]float64) [][][]float64 {
	out := make([][][]float64, len(v[0]))
	for j := range out {
		out[j] = make([][]float64, len(v))
		for i := range v {
			out[j][i] = v[i][j]
		}
	}
	return out
}

// TestRecurrentReference checks RNN, LSTM and GRU (two layers, batch
// first, without bias, relu) against rnnRef in fp32 and under fp16
// autocast: the output, h_n and c_n, and, in fp32, the gradients of a
// weighted sum of all three with respect to x, h0, c0 and every weight,
// against float64 central differences of rnnRef.
func TestRecurrentReference(t *testing.T) {
	d := devtest.Open(t)
	const seq, batch = 4, 3
	for _, c := range rnnCases {
		for _, dt := range []tensor.DType{f32, f16} {
			name := fmt.Sprintf("%s layers %d batch-first %v bias %v/%s", c.kind, max(c.opts.Layers, 1), c.opts.BatchFirst, !c.opts.NoBias, dt)
			t.Run(name, func(t *testing.T) { checkRecurrent(t, d, c, dt, seq, batch) })
		}
	}
}

func checkRecurrent(t *testing.T, d *vk.Device, c rnnCase, dt tensor.DType, seq, batch int) {
	r := c.make(d)
	defer nn.Close(r)
	o := r.Opts
	layers, hid := len(r.Layers), o.Hidden
	xShape := []int{seq, batch, o.Input}
	if o.BatchFirst {
		xShape = []int{batch, seq, o.Input}
	}
	sShape := []int{layers, batch, hid}
	xp := tParam(t, d, "x", tRand(tLen(xShape), 1, 1, f32), xShape...)
	hp := tParam(t, d, "h0", tRand(tLen(sShape), 2, 1, f32), sShape...)
	cp := tParam(t, d, "c0", tRand(tLen(sShape), 3, 1, f32), sShape...)
	for _, p := range []*nn.Param{xp, hp, cp} {
		defer p.Close()
	}
	lstm := c.kind == "lstm"

	// The float64 inputs: the device's values, rounded to fp16 under
	// autocast as the products read them.
	read := func(p *nn.Param) []float64 {
		if p == nil {
			return nil
		}
		return to64(ref.RoundAll(tRead(t, p.Value), dt))
	}
	inputs := [][]float64{read(xp), read(hp), read(cp)}
	var params []*nn.Param
	for _, l := range r.Layers {
		for _, p := range []*nn.Param{l.WeightIH, l.WeightHH, l.BiasIH, l.BiasHH} {
			if p != nil {
				params = append(params, p)
				inputs = append(inputs, read(p))
			}
		}
	}
	host := func(in [][]float64) (out, hn, cn []float64) {
		x := shape3(in[0], xShape[0], xShape[1], xShape[2])
		if o.BatchFirst {
			x = swap01(x)
		}
		ws := make([][4][]float64, layers)
		k := 3
		for l := range ws {
			ws[l][0], ws[l][1] = in[k], in[k+1]
			k += 2
			if !o.NoBias {
				ws[l][2], ws[l][3] = in[k], in[k+1]
				k += 2
			}
		}
		c0 := shape3(in[2], layers, batch, hid)
		if !lstm {
			c0 = shape3(make([]float64, len(in[2])), layers, batch, hid)
		}
		y, h, cc := rnnRef(c.kind, hid, ws, x, shape3(in[1], layers, batch, hid), c0)
		if o.BatchFirst {
			y = swap01(y)
		}
		return flat3(y), flat3(h), flat3(cc)
	}

	g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(dt == f16, tensor.Float16)})
	defer g.Release()
	var c0 *nn.Var
	if lstm {
		c0 = g.Param(cp)
	}
	out, hn, cn := r.Run(g, g.Param(xp), g.Param(hp), c0)
	wantOut, wantH, wantC := host(inputs)
	tol := ref.Tol(f32, 64)
	if dt == f16 {
		tol = 16 * ref.Unit(f16) // states rounded to fp16 at every step
	}
	ref.Check(t, "output", tRead(t, out.Value()), wantOut, tMaxScale(wantOut), tol)
	ref.Check(t, "h_n", tRead(t, hn.Value()), wantH, tMaxScale(wantH), tol)
	if wantShape := append(slices.Clone(xShape[:2]), hid); !slices.Equal(out.Shape(), wantShape) || !slices.Equal(hn.Shape(), sShape) {
		t.Errorf("output %v, h_n %v: want %v and %v", out.Shape(), hn.Shape(), wantShape, sShape)
	}
	if lstm {
		ref.Check(t, "c_n", tRead(t, cn.Value()), wantC, tMaxScale(wantC), tol)
	} else if cn != nil {
		t.Error("c_n of a layer without a cell state")
	}
	if dt != f32 {
		return
	}
	// Gradients of L = sum(out*w1) + sum(h_n*w2) (+ sum(c_n*w3)).
	w := [3][]float32{tRand(len(wantOut), 7, 1, f32), tRand(len(wantH), 8, 1, f32), tRand(len(wantH), 9, 1, f32)}
	loss := g.Add(g.Sum(g.Mul(out, g.Input(tInput(t, d, w[0], out.Shape()...)))), g.Sum(g.Mul(hn, g.Input(tInput(t, d, w[1], sShape...)))))
	if lstm {
		loss = g.Add(loss, g.Sum(g.Mul(cn, g.Input(tInput(t, d, w[2], sShape...)))))
	}
	if err := g.Backward(loss, nil); err != nil {
		t.Fatal(err)
	}
	lossFn := func(in [][]float64) float64 {
		y, h, cc := host(in)
		l := sum(zipWith(y, to64(w[0]), func(a, b float64) float64 { return a * b })) + sum(zipWith(h, to64(w[1]), func(a, b float64) float64 { return a * b }))
		if lstm {
			l += sum(zipWith(cc, to64(w[2]), func(a, b float64) float64 { return a * b }))
		}
		return l
	}
	all := append([]*nn.Param{xp, hp, cp}, params...)
	for i, p := range all {
		if i == 2 && !lstm {
			continue
		}
		want := finiteDiff(lossFn, inputs, i)
		ref.Check(t, "d"+p.Name, tRead(t, p.Grad), want, tMaxScale(want), ref.Tol(f32, 64))
	}
}

// TestRecurrentLayout checks PyTorch's parameter names and shapes, that
// Forward is Run's output from zero states, and the misuse panics.
func TestRecurrentLayout(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	l := nn.NewLSTM(d, "lstm", nn.RNNOptions{Input: 3, Hidden: 4, Layers: 2}, rng)
	defer nn.Close(l)
	var got []string
	for _, p := range l.Parameters() {
		got = append(got, fmt.Sprintf("%s%v", p.Name, p.Value.Shape()))
	}
	want := []string{"lstm.weight_ih_l0[16 3]", "lstm.weight_hh_l0[16 4]", "lstm.bias_ih_l0[16]", "lstm.bias_hh_l0[16]",
		"lstm.weight_ih_l1[16 4]", "lstm.weight_hh_l1[16 4]", "lstm.bias_ih_l1[16]", "lstm.bias_hh_l1[16]"}
	if !slices.Equal(got, want) {
		t.Errorf("parameters %v, want %v", got, want)
	}
	gru := nn.NewGRU(d, "gru", nn.RNNOptions{Input: 3, Hidden: 4, NoBias: true}, rng)
	defer nn.Close(gru)
	if ps := gru.Parameters(); len(ps) != 2 || !slices.Equal(ps[0].Value.Shape(), []int{12, 3}) {
		t.Errorf("GRU without bias: %d parameters, the first %v", len(ps), ps[0].Value.Shape())
	}

	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	x := g.Input(tInput(t, d, tRand(2*5*3, 4, 1, f32), 2, 5, 3))
	seqOut := nn.Sequential{l}.Forward(g, x)
	runOut, _, _ := l.Run(g, x, nil, nil)
	if a, b := tRead(t, seqOut.Value()), tRead(t, runOut.Value()); !slices.Equal(a, b) {
		t.Error("Forward in a Sequential differs from Run from zero states")
	}

	panics := func(what string, target any, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			err, ok := r.(error)
			if !ok || !errors.As(err, target) {
				t.Errorf("%s: panic %v, want %T", what, r, target)
			}
		}()
		f()
	}
	var shapeErr *tensor.ShapeError
	var usageErr *tensor.UsageError
	panics("2-D input", &shapeErr, func() { l.Run(g, g.Input(tInput(t, d, make([]float32, 6), 2, 3)), nil, nil) })
	panics("input size", &shapeErr, func() { l.Run(g, g.Input(tInput(t, d, make([]float32, 8), 2, 1, 4)), nil, nil) })
	panics("h0 shape", &shapeErr, func() { l.Run(g, x, g.Input(tInput(t, d, make([]float32, 4), 1, 1, 4)), nil) })
	h0 := g.Input(tInput(t, d, make([]float32, 20), 1, 5, 4))
	panics("c0 to a GRU", &usageErr, func() { gru.Run(g, x, h0, h0) })
	panics("relu LSTM", &usageErr, func() { nn.NewLSTM(d, "x", nn.RNNOptions{Input: 1, Hidden: 1, ReLU: true}, rng) })
	panics("dropout 1", &usageErr, func() { nn.NewGRU(d, "x", nn.RNNOptions{Input: 1, Hidden: 1, Dropout: 1}, rng) })
	panics("hidden 0", &usageErr, func() { nn.NewRNN(d, "x", nn.RNNOptions{Input: 1}, rng) })
}

// TestRecurrentDropout: with dropout between layers the output changes in
// training only; in evaluation it is the output without dropout.
func TestRecurrentDropout(t *testing.T) {
	d := devtest.Open(t)
	mk := func(p float32) *nn.Recurrent {
		return nn.NewLSTM(d, "lstm", nn.RNNOptions{Input: 3, Hidden: 8, Layers: 2, Dropout: p}, rand.New(rand.NewPCG(1, 2)))
	}
	with, without := mk(0.5), mk(0)
	defer nn.Close(with)
	defer nn.Close(without)
	run := func(r *nn.Recurrent) []float32 {
		g := nn.NewGraph(d, nn.Options{Seeds: nn.NewSeedSource(3)})
		defer g.Release()
		return tRead(t, r.Forward(g, g.Input(tInput(t, d, tRand(4*2*3, 4, 1, f32), 4, 2, 3))).Value())
	}
	base := run(without)
	nn.Train(with)
	if slices.Equal(run(with), base) {
		t.Error("dropout between layers changed nothing in training")
	}
	nn.Eval(with)
	if !slices.Equal(run(with), base) {
		t.Error("dropout between layers in evaluation")
	}
}
