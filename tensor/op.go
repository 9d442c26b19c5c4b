package tensor

import "fmt"

// Op names a differentiable op of the graph (package nn). Autocast's policy
// table (package amp) and nn's backward-rule table are both keyed by it, so
// an entry for an op that does not exist does not compile, and a test can
// walk Ops to find an op that one of the tables forgot.
type Op uint16

// The ops of the graph. The zero Op is none of them, so a forgotten field
// does not read as a cast.
const (
	opNone Op = iota

	OpCast         // dtype conversion; its gradient is the cast back
	OpMatMul       // matrix product, optionally transposed
	OpLinear       // x w^T + b
	OpAdd          // a + b
	OpSub          // a - b
	OpMul          // a * b, elementwise
	OpAddBias      // x + bias over the last axis
	OpScale        // s * x
	OpReLU         // max(x, 0)
	OpGELU         // GELU, exact or tanh form (one op, as PyTorch's gelu with approximate)
	OpSum          // sum of all elements
	OpMean         // mean of all elements
	OpSoftmax      // softmax over an axis
	OpLogSoftmax   // log-softmax over an axis
	OpDropout      // dropout
	OpMSELoss      // mean squared error
	OpCrossEntropy // log-softmax and negative log-likelihood, fused
	OpLayerNorm    // layer normalisation over the last axis
	OpExp          // e^x
	OpDiv          // a / b, broadcasting
	OpNeg          // -x
	OpLog          // natural logarithm
	OpSqrt         // square root
	OpRsqrt        // 1/sqrt(x)
	OpPow          // x^p, p a scalar
	OpTanh         // hyperbolic tangent
	OpSigmoid      // 1/(1 + e^-x)
	OpWhere        // cond ? a : b, broadcasting
	OpMaskedFill   // x with a value where a mask is set
	OpSumAxes      // sum over a set of axes
	OpMeanAxes     // mean over a set of axes
	OpMaxAxes      // max over a set of axes (amax)
	OpMinAxes      // min over a set of axes (amin)
	OpPermute      // axes reordered (Transpose too)
	OpNarrow       // a slice along one axis
	OpConcat       // tensors joined along an axis
	OpStack        // tensors joined along a new axis
	OpGather       // elements picked along an axis by int32 indices
	OpEmbedding    // rows of a table picked by indices
	OpAttention    // fused causal self-attention
	OpBatchNorm    // batch normalisation over the channel axis
	OpNLLLoss      // negative log-likelihood of log-probabilities

	// Convolutional networks.
	OpConv2d            // 2-D convolution, NCHW
	OpMaxPool2d         // 2-D max pooling
	OpAvgPool2d         // 2-D average pooling
	OpAdaptiveAvgPool2d // 2-D adaptive average pooling
	OpReshape           // the same elements in another shape (view, flatten)

	OpCustom // a user's op with its own forward and backward (nn.Function)

	OpCumSum // inclusive prefix sums along an axis (after OpCustom: the earlier values stay)
	OpSiLU   // x * sigmoid(x)
	OpMish   // x * tanh(softplus(x))

	numOps // keep last: Ops and String cover every op before it
)

// opNames are PyTorch's names, as errors print them. Indexed by Op, sized by
// numOps, so an op added without a name is an empty string that the tests
// catch.
var opNames = [numOps]string{
	OpCast:         "cast",
	OpMatMul:       "matmul",
	OpLinear:       "linear",
	OpAdd:          "add",
	OpSub:          "sub",
	OpMul:          "mul",
	OpAddBias:      "add_bias",
	OpScale:        "scale",
	OpReLU:         "relu",
	OpGELU:         "gelu",
	OpSum:          "sum",
	OpMean:         "mean",
	OpSoftmax:      "softmax",
	OpLogSoftmax:   "log_softmax",
	OpDropout:      "dropout",
	OpMSELoss:      "mse_loss",
	OpCrossEntropy: "cross_entropy",
	OpLayerNorm:    "layer_norm",
	OpExp:          "exp",
	OpDiv:          "div",
	OpNeg:          "neg",
	OpLog:          "log",
	OpSqrt:         "sqrt",
	OpRsqrt:        "rsqrt",
	OpPow:          "pow",
	OpTanh:         "tanh",
	OpSigmoid:      "sigmoid",
	OpSiLU:         "silu",
	OpMish:         "mish",
	OpWhere:        "where",
	OpMaskedFill:   "masked_fill",
	OpSumAxes:      "sum_dim",
	OpMeanAxes:     "mean_dim",
	OpMaxAxes:      "amax",
	OpMinAxes:      "amin",
	OpPermute:      "permute",
	OpNarrow:       "narrow",
	OpConcat:       "cat",
	OpStack:        "stack",
	OpGather:       "gather",
	OpEmbedding:    "embedding",
	OpBatchNorm:    "batch_norm",
	OpNLLLoss:      "nll_loss",

	OpConv2d:            "conv2d",
	OpMaxPool2d:         "max_pool2d",
	OpAvgPool2d:         "avg_pool2d",
	OpAdaptiveAvgPool2d: "adaptive_avg_pool2d",
	OpReshape:           "reshape",

	OpCustom:    "custom",
	OpCumSum:    "cumsum",
	OpAttention: "scaled_dot_product_attention",
}

// String returns the op's snake-case name ("matmul", "layer_norm"), or
// Op(n) for a value that is no op.
func (op Op) String() string {
	if op > opNone && op < numOps {
		return opNames[op]
	}
	return fmt.Sprintf("Op(%d)", uint16(op))
}

// Ops returns every op, in declaration order, for tests that walk them.
func Ops() []Op {
	ops := make([]Op, 0, numOps-1)
	for op := opNone + 1; op < numOps; op++ {
		ops = append(ops, op)
	}
	return ops
}
