package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// The ops and modules of convolutional networks: Conv2d, the 2-D poolings,
// Reshape and Flatten. Tensors are NCHW, as PyTorch's.

// convAttrs are what the backward rules of conv2d, the poolings and
// reshape need from the forward.
type convAttrs struct {
	opts                    tensor.Conv2dOpts
	kernel, stride, padding [2]int
	inShape                 []int // the input's shape
}

// Conv2d returns the 2-D convolution of x [N, Cin, H, W] with w [Cout,
// Cin/groups, kH, kW], plus b [Cout] unless b is nil (see tensor.Conv2d).
// Under autocast it runs in fp16 with fp32 accumulation, as PyTorch's
// conv2d; the gradients of fp32 parameters reach them in fp32.
func (g *Graph) Conv2d(x, w, b *Var, o tensor.Conv2dOpts) *Var {
	defer g.use("Conv2d").done()
	vs := []*Var{x, w}
	if b != nil {
		vs = append(vs, b)
	}
	dt := g.dtypeFor(tensor.OpConv2d, vs...)
	for i := range vs {
		vs[i] = g.cast(vs[i], dt)
	}
	var bt *tensor.Tensor
	if b != nil {
		bt = vs[2].t
	}
	out := tensor.Conv2d(vs[0].t, vs[1].t, bt, o)
	return g.record(tensor.OpConv2d, out, attrs{conv: &convAttrs{opts: o, inShape: x.Shape()}}, nil, vs...)
}

// MaxPool2d returns the maximum over kernel x kernel windows of x [N, C, H,
// W] or [C, H, W], moved by stride (0 means kernel), without padding, as
// PyTorch's MaxPool2d(kernel, stride). It keeps x's dtype.
func (g *Graph) MaxPool2d(x *Var, kernel, stride int) *Var {
	return g.MaxPool2dWindow(x, [2]int{kernel, kernel}, [2]int{stride, stride}, [2]int{})
}

// MaxPool2dWindow is MaxPool2d with a kernel, stride and padding per axis
// (height, width); see tensor.MaxPool2d.
func (g *Graph) MaxPool2dWindow(x *Var, kernel, stride, padding [2]int) *Var {
	defer g.use("MaxPool2d").done()
	x = g.cast(x, g.dtypeFor(tensor.OpMaxPool2d, x))
	y, arg := tensor.MaxPool2d(x.t, kernel, stride, padding)
	g.keep(arg)
	a := &convAttrs{kernel: kernel, stride: stride, padding: padding, inShape: x.Shape()}
	return g.record(tensor.OpMaxPool2d, y, attrs{conv: a}, []*tensor.Tensor{arg}, x)
}

// AvgPool2d returns the mean over kernel x kernel windows of x, moved by
// stride (0 means kernel), without padding, as PyTorch's AvgPool2d(kernel,
// stride). It keeps x's dtype.
func (g *Graph) AvgPool2d(x *Var, kernel, stride int) *Var {
	return g.AvgPool2dWindow(x, [2]int{kernel, kernel}, [2]int{stride, stride}, [2]int{})
}

// AvgPool2dWindow is AvgPool2d with a kernel, stride and padding per axis;
// padding counts as zeros (count_include_pad), see tensor.AvgPool2d.
func (g *Graph) AvgPool2dWindow(x *Var, kernel, stride, padding [2]int) *Var {
	defer g.use("AvgPool2d").done()
	x = g.cast(x, g.dtypeFor(tensor.OpAvgPool2d, x))
	y := tensor.AvgPool2d(x.t, kernel, stride, padding)
	a := &convAttrs{kernel: kernel, stride: stride, padding: padding, inShape: x.Shape()}
	return g.record(tensor.OpAvgPool2d, y, attrs{conv: a}, nil, x)
}

// AdaptiveAvgPool2d averages x [..., H, W] to [..., outH, outW] over
// PyTorch's adaptive windows. It keeps x's dtype.
func (g *Graph) AdaptiveAvgPool2d(x *Var, outH, outW int) *Var {
	defer g.use("AdaptiveAvgPool2d").done()
	x = g.cast(x, g.dtypeFor(tensor.OpAdaptiveAvgPool2d, x))
	y := tensor.AdaptiveAvgPool2d(x.t, outH, outW)
	return g.record(tensor.OpAdaptiveAvgPool2d, y, attrs{conv: &convAttrs{inShape: x.Shape()}}, nil, x)
}

// Reshape returns x's elements in another shape, as PyTorch's view: one
// dimension may be -1, inferred from the others. Its gradient is the
// upstream gradient in x's shape. A shape of another number of elements,
// two -1, or a dimension below 1 otherwise panics with a
// *tensor.ShapeError naming both shapes.
func (g *Graph) Reshape(x *Var, shape ...int) *Var {
	defer g.use("Reshape").done()
	return g.reshape(x, shape)
}

func (g *Graph) reshape(x *Var, shape []int) *Var {
	xs := x.Shape()
	shape = inferShape("Reshape", xs, shape)
	if slices.Equal(shape, xs) {
		return x
	}
	x = g.cast(x, g.dtypeFor(tensor.OpReshape, x))
	return g.record(tensor.OpReshape, tensor.Reshape(x.t, shape...), attrs{conv: &convAttrs{inShape: xs}}, nil, x)
}

// inferShape resolves one -1 in shape against xs's element count, and
// panics unless the shapes hold as many elements.
func inferShape(op string, xs, shape []int) []int {
	shape = slices.Clone(shape)
	n, free := 1, -1
	for i, s := range shape {
		switch {
		case s == -1 && free < 0:
			free = i
		case s < 1:
			panic(&tensor.ShapeError{Op: op, A: xs, B: shape, Msg: "a dimension below 1 (one -1 is inferred)"})
		default:
			n *= s
		}
	}
	total := 1
	for _, s := range xs {
		total *= s
	}
	if free >= 0 && n > 0 && total%n == 0 {
		shape[free] = total / n
		n = total
	}
	if n != total {
		panic(&tensor.ShapeError{Op: op, A: xs, B: shape, Msg: fmt.Sprintf("%d elements cannot take the second shape", total)})
	}
	return shape
}

// Flatten returns x with dimensions startDim to the last merged into one,
// as PyTorch's flatten(x, start_dim); a negative startDim counts from the
// end. nn.Flatten{} uses startDim 1: [N, C, H, W] becomes [N, C*H*W].
func (g *Graph) Flatten(x *Var, startDim int) *Var {
	defer g.use("Flatten").done()
	xs := x.Shape()
	if startDim < 0 {
		startDim += len(xs)
	}
	if startDim < 0 || startDim >= len(xs) {
		panic(&tensor.UsageError{Op: "Flatten", Msg: fmt.Sprintf("start dimension %d of a %d-D input %v", startDim, len(xs), xs)})
	}
	return g.reshape(x, append(slices.Clone(xs[:startDim]), -1))
}

// Conv2d is PyTorch's nn.Conv2d: an fp32 master weight [out, in/groups, k,
// k] and bias [out] (B nil for none), convolved as tensor.Conv2d with Opts.
type Conv2d struct {
	W, B *Param
	Opts tensor.Conv2dOpts
}

// NewConv2d returns a Conv2d layer of in to out channels with a kernel x
// kernel window, initialised as PyTorch's: weights from
// kaiming_uniform(a=sqrt(5)), which is uniform(-1/sqrt(fan_in),
// 1/sqrt(fan_in)) with fan_in = in/groups*kernel*kernel, and the bias from
// the same range, drawn from rng. Sizes below 1, channels not divisible by
// the groups or a nil rng panic with a *tensor.UsageError naming the
// layer; a weight the device cannot hold is carried as NewLinear says.
func NewConv2d(d *vk.Device, name string, in, out, kernel int, o tensor.Conv2dOpts, rng *rand.Rand) *Conv2d {
	checkSizes("NewConv2d", name, fmt.Sprintf("in %d, out %d, kernel %d", in, out, kernel), in, out, kernel, kernel)
	if rng == nil {
		panic(&tensor.UsageError{Op: "NewConv2d", Msg: fmt.Sprintf("layer %q: nil rng", name)})
	}
	groups := max(o.Groups, 1)
	if o.Groups < 0 || in%groups != 0 || out%groups != 0 {
		panic(&tensor.UsageError{Op: "NewConv2d", Msg: fmt.Sprintf("layer %q: in %d and out %d channels are not divisible by groups = %d", name, in, out, o.Groups)})
	}
	fanIn := in / groups * kernel * kernel
	bound := 1 / math.Sqrt(float64(fanIn))
	return &Conv2d{
		W:    newUniform(d, name+".weight", bound, rng, out, in/groups, kernel, kernel),
		B:    newUniform(d, name+".bias", bound, rng, out),
		Opts: o,
	}
}

// Forward applies the layer.
func (l *Conv2d) Forward(g *Graph, x *Var) *Var {
	var b *Var
	if l.B != nil {
		b = g.Param(l.B)
	}
	return g.Conv2d(x, g.Param(l.W), b, l.Opts)
}

// Parameters returns the weight and the bias (if any).
func (l *Conv2d) Parameters() []*Param {
	if l.B == nil {
		return []*Param{l.W}
	}
	return []*Param{l.W, l.B}
}

// MaxPool2d is PyTorch's nn.MaxPool2d: Kernel, Stride (0 means Kernel) and
// Padding per axis (height, width). NewMaxPool2d makes square ones.
type MaxPool2d struct {
	Kernel, Stride, Padding [2]int
}

// NewMaxPool2d returns MaxPool2d(kernel, stride) without padding; stride 0
// means kernel.
func NewMaxPool2d(kernel, stride int) MaxPool2d {
	return MaxPool2d{Kernel: [2]int{kernel, kernel}, Stride: [2]int{stride, stride}}
}

// Forward applies the pooling.
func (m MaxPool2d) Forward(g *Graph, x *Var) *Var {
	return g.MaxPool2dWindow(x, m.Kernel, m.Stride, m.Padding)
}

// Parameters returns none.
func (MaxPool2d) Parameters() []*Param { return nil }

// AvgPool2d is PyTorch's nn.AvgPool2d (count_include_pad): Kernel, Stride
// (0 means Kernel) and Padding per axis.
type AvgPool2d struct {
	Kernel, Stride, Padding [2]int
}

// NewAvgPool2d returns AvgPool2d(kernel, stride) without padding; stride 0
// means kernel.
func NewAvgPool2d(kernel, stride int) AvgPool2d {
	return AvgPool2d{Kernel: [2]int{kernel, kernel}, Stride: [2]int{stride, stride}}
}

// Forward applies the pooling.
func (m AvgPool2d) Forward(g *Graph, x *Var) *Var {
	return g.AvgPool2dWindow(x, m.Kernel, m.Stride, m.Padding)
}

// Parameters returns none.
func (AvgPool2d) Parameters() []*Param { return nil }

// AdaptiveAvgPool2d is PyTorch's nn.AdaptiveAvgPool2d((H, W)).
type AdaptiveAvgPool2d struct {
	H, W int
}

// Forward applies the pooling.
func (m AdaptiveAvgPool2d) Forward(g *Graph, x *Var) *Var { return g.AdaptiveAvgPool2d(x, m.H, m.W) }

// Parameters returns none.
func (AdaptiveAvgPool2d) Parameters() []*Param { return nil }

// Flatten is PyTorch's nn.Flatten(start_dim): it merges dimensions StartDim
// to the last into one. The zero value means PyTorch's default start_dim=1,
// keeping the batch dimension; to flatten from dimension 0 call
// Graph.Flatten(x, 0).
type Flatten struct {
	StartDim int
}

// Forward flattens x.
func (m Flatten) Forward(g *Graph, x *Var) *Var {
	start := m.StartDim
	if start == 0 {
		start = 1
	}
	return g.Flatten(x, start)
}

// Parameters returns none.
func (Flatten) Parameters() []*Param { return nil }
