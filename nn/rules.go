package nn

import (
	"github.com/vkamp/vkamp/tensor"
)

// rule computes the gradients of a node's inputs from the gradient dy of its
// output: one per input, nil where an input needs none. The engine checks
// the count, shapes and dtypes (Graph.checkGrads).
type rule func(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor

// rules is the one table of backward rules, keyed by op. Every op of
// tensor.Ops has a rule or is in noBackward (TestRulesTable walks them).
var rules map[tensor.Op]rule

// noBackward are the ops without a backward rule yet: they record no node,
// so they cannot be trained through.
var noBackward = map[tensor.Op]bool{}

func init() {
	rules = map[tensor.Op]rule{
		tensor.OpCast:         castBack,
		tensor.OpMatMul:       matmulBack,
		tensor.OpLinear:       linearBack,
		tensor.OpAdd:          addBack,
		tensor.OpSub:          subBack,
		tensor.OpMul:          mulBack,
		tensor.OpAddBias:      addBiasBack,
		tensor.OpScale:        scaleBack,
		tensor.OpReLU:         reluBack,
		tensor.OpGELU:         geluBack,
		tensor.OpExp:          expBack,
		tensor.OpSum:          reduceBack,
		tensor.OpMean:         reduceBack,
		tensor.OpDropout:      dropoutBack,
		tensor.OpMSELoss:      mseBack,
		tensor.OpCrossEntropy: crossEntropyBack,
		tensor.OpLayerNorm:    layerNormBack,
		tensor.OpDiv:          divBack,
		tensor.OpNeg:          negBack,
		tensor.OpLog:          logBack,
		tensor.OpSqrt:         sqrtBack,
		tensor.OpRsqrt:        rsqrtBack,
		tensor.OpPow:          powBack,
		tensor.OpTanh:         tanhBack,
		tensor.OpSigmoid:      sigmoidBack,
		tensor.OpSiLU:         siluBack,
		tensor.OpMish:         mishBack,
		tensor.OpWhere:        whereBack,
		tensor.OpMaskedFill:   maskedFillBack,
		tensor.OpSumAxes:      sumAxesBack,
		tensor.OpMeanAxes:     sumAxesBack,
		tensor.OpMaxAxes:      extremeBack,
		tensor.OpMinAxes:      extremeBack,
		tensor.OpSoftmax:      softmaxBack,
		tensor.OpLogSoftmax:   logSoftmaxBack,
		tensor.OpPermute:      permuteBack,
		tensor.OpNarrow:       narrowBack,
		tensor.OpConcat:       concatBack,
		tensor.OpStack:        stackBack,
		tensor.OpGather:       gatherBack,
		tensor.OpEmbedding:    embeddingBack,
		tensor.OpBatchNorm:    batchNormBack,
		tensor.OpNLLLoss:      nllBack,

		tensor.OpConv2d:            conv2dBack, // nn/rules_conv.go
		tensor.OpMaxPool2d:         maxPool2dBack,
		tensor.OpAvgPool2d:         avgPool2dBack,
		tensor.OpAdaptiveAvgPool2d: adaptiveAvgPool2dBack,
		tensor.OpReshape:           reshapeBack,

		tensor.OpCustom:    customBack, // nn/function.go
		tensor.OpCumSum:    cumSumBack, // nn/rules_math.go
		tensor.OpAttention: attentionBack,
	}
}

// need returns whether input i of n needs a gradient.
func need(n *node, i int) bool { return n.inputs[i].needsGrad }

// The gradient of a cast is the cast back.
func castBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.Cast(dy, n.inputs[0].DType())}
}

// For C = op(A) op(B):
// dA = dC op(B)^T, or op(B) dC^T when A was transposed;
// dB = op(A)^T dC, or dC^T op(A) when B was transposed;
// each over the broadcast batch, then summed over the batch dimensions
// that the operand broadcast along (sumTo).
func matmulBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	a, b := n.inputs[0].t, n.inputs[1].t
	tA, tB := n.attr.transA, n.attr.transB
	var da, db *tensor.Tensor
	if need(n, 0) {
		if !tA {
			da = tensor.MatMul(dy, b, tensor.MatMulOpts{TransB: !tB, Out: a.DType()})
		} else {
			da = tensor.MatMul(b, dy, tensor.MatMulOpts{TransA: tB, TransB: true, Out: a.DType()})
		}
		da = sumTo(g, da, a)
	}
	if need(n, 1) {
		if !tB {
			db = tensor.MatMul(a, dy, tensor.MatMulOpts{TransA: !tA, Out: b.DType()})
		} else {
			db = tensor.MatMul(dy, a, tensor.MatMulOpts{TransA: true, TransB: tA, Out: b.DType()})
		}
		db = sumTo(g, db, b)
	}
	return []*tensor.Tensor{da, db}
}

// y = x w^T + b: dx = dy w, dw = dy^T x, db = column sums of dy.
func linearBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x, w := n.inputs[0].t, n.inputs[1].t
	grads := make([]*tensor.Tensor, len(n.inputs))
	if need(n, 0) {
		grads[0] = tensor.MatMul(dy, w, tensor.MatMulOpts{Out: x.DType()})
	}
	if need(n, 1) {
		grads[1] = tensor.MatMul(dy, x, tensor.MatMulOpts{TransA: true, Out: w.DType()})
	}
	if len(n.inputs) == 3 && need(n, 2) {
		grads[2] = tensor.SumAxisAs(dy, 0, n.inputs[2].DType())
	}
	return grads
}

func addBiasBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	var db *tensor.Tensor
	if need(n, 1) {
		rows, cols := lastDim(dy)
		flat := dy
		if len(dy.Shape()) != 2 {
			flat = g.keep(reshaped(dy, rows, cols))
		}
		db = tensor.SumAxisAs(flat, 0, n.inputs[1].DType())
	}
	return []*tensor.Tensor{dy, db}
}

func scaleBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.Scale(dy, n.attr.f, n.inputs[0].DType())}
}

func reluBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.ReLUBackward(dy, n.inputs[0].t, n.inputs[0].DType())}
}

func geluBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	back := tensor.GELUBackward
	if n.attr.tanh {
		back = tensor.GELUTanhBackward
	}
	return []*tensor.Tensor{back(dy, n.inputs[0].t, n.inputs[0].DType())}
}

// d/dx e^x = e^x: the op's own output.
func expBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.Mul(dy, n.out.t, n.inputs[0].DType())}
}

// Sum and mean spread the upstream scalar gradient over the input.
func reduceBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	alpha := float32(1)
	if n.op == tensor.OpMean {
		alpha = 1 / float32(n.attr.n)
	}
	x := n.inputs[0].t
	return []*tensor.Tensor{tensor.BroadcastItem(dy, alpha, x.DType(), x.Shape()...)}
}

func dropoutBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{dropoutMask(dy, n.attr)}
}

// reshaped copies t into a tensor of another shape with the same elements.
func reshaped(t *tensor.Tensor, shape ...int) *tensor.Tensor {
	return tensor.Reshape(t, shape...)
}
