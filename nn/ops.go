package nn

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// The graph's ops. Each picks its dtype from the autocast policy in amp,
// casts its inputs (recording the casts), computes, and records itself.
// Ops on no list (scale, relu, gelu, dropout) ask too, so the table alone
// decides: for them the cast is a no-op.
// Each op begins with g.use, which panics on a released graph and on a
// call that overlaps another call of the same graph.

func (g *Graph) dtypeFor(op tensor.Op, vs ...*Var) tensor.DType {
	in := make([]tensor.DType, len(vs))
	for i, v := range vs {
		in[i] = v.DType()
	}
	return g.amp.OpDType(op, in...)
}

// MatMul returns op(a) op(b), with op a transpose of the last two axes when
// the flag is set: a [..., M, K] and b [..., K, N] whose batch dimensions
// broadcast as torch.matmul's ([B, H, T, D] @ [B, H, D, T], [B, T, D] @
// [D, E]); the gradient of a broadcast operand is summed back to its shape.
// It runs in fp16 under autocast (fp32 accumulation).
func (g *Graph) MatMul(a, b *Var, transA, transB bool) *Var {
	defer g.use("MatMul").done()
	dt := g.dtypeFor(tensor.OpMatMul, a, b)
	a, b = g.cast(a, dt), g.cast(b, dt)
	out := tensor.MatMul(a.t, b.t, tensor.MatMulOpts{TransA: transA, TransB: transB, Out: dt})
	return g.record(tensor.OpMatMul, out, attrs{transA: transA, transB: transB}, nil, a, b)
}

// Linear returns x w^T + b for x [batch, in], w [out, in] and b [out] (b may
// be nil), with the bias add fused into the product. An x of more
// dimensions, [..., in], gives [..., out], as PyTorch's: its leading
// dimensions are rows.
func (g *Graph) Linear(x, w, b *Var) *Var {
	if s := x.Shape(); len(s) > 2 { // [..., in]: PyTorch's leading dimensions, as rows
		rows := 1
		for _, n := range s[:len(s)-1] {
			rows *= n
		}
		y := g.Linear(g.Reshape(x, rows, s[len(s)-1]), w, b)
		return g.Reshape(y, append(slices.Clone(s[:len(s)-1]), y.Shape()[1])...)
	}
	defer g.use("Linear").done()
	vs := []*Var{x, w}
	if b != nil {
		vs = append(vs, b)
	}
	dt := g.dtypeFor(tensor.OpLinear, vs...)
	for i := range vs {
		vs[i] = g.cast(vs[i], dt)
	}
	o := tensor.MatMulOpts{TransB: true, Out: dt}
	if b != nil {
		o.Bias = vs[2].t
	}
	out := tensor.MatMul(vs[0].t, vs[1].t, o)
	return g.record(tensor.OpLinear, out, attrs{}, nil, vs...)
}

func (g *Graph) binary(op tensor.Op, a, b *Var, f func(a, b *tensor.Tensor, dt tensor.DType) *tensor.Tensor) *Var {
	dt := g.dtypeFor(op, a, b)
	a, b = g.cast(a, dt), g.cast(b, dt)
	return g.record(op, f(a.t, b.t, dt), attrs{}, nil, a, b)
}

// Add returns a + b, broadcasting as PyTorch (tensor.BroadcastShape), in
// the wider dtype. Gradients are summed back to each input's shape.
func (g *Graph) Add(a, b *Var) *Var {
	defer g.use("Add").done()
	if dt := g.dtypeFor(tensor.OpAdd, a, b); widensExactly(dt, a, b) {
		// The kernel widens a 16-bit operand as it reads it, exactly as the
		// cast would, so none is recorded: AMP's residual adds of fp16
		// branches into the fp32 stream were 8 cast kernels in a GPT
		// forward. The gradient is cast back to each input's dtype all the
		// same (addBack).
		return g.record(tensor.OpAdd, tensor.Add(a.t, b.t, dt), attrs{}, nil, a, b)
	}
	return g.binary(tensor.OpAdd, a, b, tensor.Add)
}

// widensExactly reports whether a and b have one shape and each is dt or
// widens to it exactly: dt is fp32 and they are floating.
func widensExactly(dt tensor.DType, a, b *Var) bool {
	if dt != tensor.Float32 || !tensor.SameShape(a.t, b.t) {
		return false
	}
	for _, v := range []*Var{a, b} {
		if d := v.DType(); d != tensor.Float32 && d != tensor.Float16 && d != tensor.BFloat16 {
			return false
		}
	}
	return true
}

// Sub returns a - b, broadcasting as Add.
func (g *Graph) Sub(a, b *Var) *Var {
	defer g.use("Sub").done()
	return g.binary(tensor.OpSub, a, b, tensor.Sub)
}

// Mul returns a * b elementwise, broadcasting as Add.
func (g *Graph) Mul(a, b *Var) *Var {
	defer g.use("Mul").done()
	return g.binary(tensor.OpMul, a, b, tensor.Mul)
}

// AddBias returns x + bias, bias [N] broadcast over x [..., N].
func (g *Graph) AddBias(x, bias *Var) *Var {
	defer g.use("AddBias").done()
	return g.binary(tensor.OpAddBias, x, bias, tensor.AddBias)
}

// Scale returns s * x.
func (g *Graph) Scale(x *Var, s float32) *Var {
	defer g.use("Scale").done()
	x = g.cast(x, g.dtypeFor(tensor.OpScale, x))
	return g.record(tensor.OpScale, tensor.Scale(x.t, s, x.DType()), attrs{f: s}, nil, x)
}

// ReLU returns max(x, 0).
func (g *Graph) ReLU(x *Var) *Var {
	defer g.use("ReLU").done()
	x = g.cast(x, g.dtypeFor(tensor.OpReLU, x))
	return g.record(tensor.OpReLU, tensor.ReLU(x.t, x.DType()), attrs{}, nil, x)
}

// GELU returns the exact GELU, x*Phi(x) (PyTorch's gelu(x)), in x's dtype.
func (g *Graph) GELU(x *Var) *Var {
	defer g.use("GELU").done()
	x = g.cast(x, g.dtypeFor(tensor.OpGELU, x))
	return g.record(tensor.OpGELU, tensor.GELU(x.t, x.DType()), attrs{}, nil, x)
}

// GELUTanh returns GELU's tanh approximation (PyTorch's gelu(x,
// approximate='tanh')), in x's dtype.
func (g *Graph) GELUTanh(x *Var) *Var {
	defer g.use("GELUTanh").done()
	x = g.cast(x, g.dtypeFor(tensor.OpGELU, x))
	return g.record(tensor.OpGELU, tensor.GELUTanh(x.t, x.DType()), attrs{tanh: true}, nil, x)
}

// Exp returns e^x, in fp32 under autocast.
func (g *Graph) Exp(x *Var) *Var {
	defer g.use("Exp").done()
	x = g.cast(x, g.dtypeFor(tensor.OpExp, x))
	return g.record(tensor.OpExp, tensor.Exp(x.t, x.DType()), attrs{}, nil, x)
}

// Sum returns the sum of all elements, in fp32.
func (g *Graph) Sum(x *Var) *Var {
	defer g.use("Sum").done()
	x = g.cast(x, g.dtypeFor(tensor.OpSum, x))
	return g.record(tensor.OpSum, tensor.Sum(x.t), attrs{n: x.t.Len()}, nil, x)
}

// Mean returns the mean of all elements, in fp32.
func (g *Graph) Mean(x *Var) *Var {
	defer g.use("Mean").done()
	x = g.cast(x, g.dtypeFor(tensor.OpMean, x))
	return g.record(tensor.OpMean, tensor.Mean(x.t), attrs{n: x.t.Len()}, nil, x)
}

// Softmax returns the softmax of x along axis (negative counts from the
// end), in fp32 (PyTorch's autocast runs softmax in fp32; without autocast
// the result is fp32 too, as the kernel accumulates and returns in fp32).
func (g *Graph) Softmax(x *Var, axis int) *Var {
	defer g.use("Softmax").done()
	x = g.cast(x, g.dtypeFor(tensor.OpSoftmax, x))
	return g.record(tensor.OpSoftmax, tensor.SoftmaxAxis(x.t, axis), attrs{n: axis}, nil, x)
}

// LogSoftmax returns the log-softmax of x along axis, in fp32 (see Softmax).
func (g *Graph) LogSoftmax(x *Var, axis int) *Var {
	defer g.use("LogSoftmax").done()
	x = g.cast(x, g.dtypeFor(tensor.OpLogSoftmax, x))
	return g.record(tensor.OpLogSoftmax, tensor.LogSoftmaxAxis(x.t, axis), attrs{n: axis}, nil, x)
}

// Dropout zeroes elements with probability p and scales the others by
// 1/(1-p); with p == 0 it returns x.
func (g *Graph) Dropout(x *Var, p float32) *Var {
	defer g.use("Dropout").done()
	if p < 0 || p >= 1 || p != p {
		panic(&tensor.UsageError{Op: "Dropout", Msg: "probability must be in [0, 1)"})
	}
	if p == 0 {
		return x
	}
	x = g.cast(x, g.dtypeFor(tensor.OpDropout, x))
	if g.devSeed != nil {
		if g.seedCopy == nil { // the graph's own copy, which later writes leave alone
			checkDeviceSeed(g.devSeed)
			g.seedCopy = tensor.Cast(g.devSeed, tensor.Int32) // outside temps: NoGrad would release it after this op
		}
		g.drops++
		a := attrs{f: p, seed: g.drops, seedT: g.seedCopy}
		return g.record(tensor.OpDropout, dropoutMask(x.t, a), a, nil, x)
	}
	if g.drops == 0 { // the graph's first dropout draws its seed
		if g.seeds == nil {
			g.seeds = defaultSeeds
		}
		// The seed becomes a push constant: a captured step would replay
		// this step's masks every time, so a capture fails instead (a
		// Replayer's trace sees the constant change and records).
		_ = g.dev.RefuseCapture(errHostSeed)
		g.seed = g.seeds.Next()
	}
	g.drops++
	a := attrs{f: p, seed: g.seed*0x9E3779B9 + g.drops}
	return g.record(tensor.OpDropout, dropoutMask(x.t, a), a, nil, x)
}

// errHostSeed fails a capture in which a graph draws its dropout seed on
// the host; made once, so that a step outside a capture allocates nothing.
var errHostSeed = fmt.Errorf("nn: Dropout: %w: the graph draws its dropout seed on the host, and every replay would repeat this step's masks: "+
	"give the graph Options.DeviceSeed and write the seed before each step (SeedSource.NextTo)", vk.ErrCapturing)

// checkDeviceSeed panics unless s can be Options.DeviceSeed.
func checkDeviceSeed(s *tensor.Tensor) {
	if s.Len() != 1 {
		panic(&tensor.ShapeError{Op: "Dropout", A: s.Shape(), B: []int{1}, Msg: "Options.DeviceSeed must have one element"})
	}
	if s.DType() != tensor.Int32 {
		panic(&tensor.DTypeError{Op: "Dropout", Got: s.DType(), Want: "an int32 Options.DeviceSeed"})
	}
}

// dropoutMask applies a Dropout op's mask (its attrs) to x: Dropout's
// forward, and its backward applied to the upstream gradient. A seed on
// the device gives the masks of the seed a draw would: its value times
// 0x9E3779B9 plus the op's count.
func dropoutMask(x *tensor.Tensor, a attrs) *tensor.Tensor {
	if a.seedT != nil {
		return tensor.DropoutSeeded(x, a.f, a.seedT, a.seed)
	}
	return tensor.Dropout(x, a.f, a.seed)
}

func lastDim(t *tensor.Tensor) (rows, cols int) {
	s := t.Shape()
	cols = s[len(s)-1]
	return t.Len() / cols, cols
}

func sameShape(op string, a, b *tensor.Tensor) {
	if !slices.Equal(a.Shape(), b.Shape()) {
		panic(&tensor.ShapeError{Op: op, A: a.Shape(), B: b.Shape(), Msg: "shapes must be equal"})
	}
}
