// Package amp is autocast: which dtype each op runs in under mixed
// precision, in regions that nest, with a cache of weights cast down.
//
// The state is a value, not a package global: a Region is created by the
// code that records a model's ops (nn's Graph) and passed along, so two
// goroutines can train two models at once.
//
// The policy table is keyed by tensor.Op and holds PyTorch's CUDA lists
// for the ops that exist here. Within a region, ops on the lower-precision
// list (matmul, linear, conv2d, attention) run in the region's dtype (fp16
// or bf16), ops on the fp32 list (sum, softmax, log_softmax, layer_norm,
// exp, log, rsqrt, pow and the losses) run in fp32, and ops on the promote
// list (none yet) run in the widest of their floating inputs. Every other op keeps its inputs' dtype, promoted
// to the widest when there are several, as without autocast: so add of
// fp16 and fp32 is fp32, as PyTorch's type promotion gives.
package amp

import (
	"fmt"
	"sync"

	"github.com/vkamp/vkamp/tensor"
)

// Policy is how an op chooses its dtype under autocast.
type Policy uint8

const (
	// Keep runs the op in its inputs' dtype (the widest of them): ops on no
	// list.
	Keep Policy = iota
	// Lower runs the op in the region's dtype (fp16).
	Lower
	// FP32 runs the op in float32.
	FP32
	// Widest runs the op in the widest dtype of its floating inputs:
	// PyTorch's promote list (addcmul, dot, ...), none of which exists yet.
	Widest
)

var policyNames = [...]string{"keep", "lower", "fp32", "widest"}

func (p Policy) String() string { return policyNames[p] }

// policies is the one table. Every op has an entry, Keep included, so a
// test can tell an op left out from an op kept (policy_test.go). The ops of
// PyTorch's lists that do not exist here (bmm, mm, addmm, log10,
// nll_loss, ...) get entries when they are added.
var policies = map[tensor.Op]Policy{
	// Lower precision: the matrix products.
	tensor.OpMatMul: Lower,
	tensor.OpLinear: Lower,

	// fp32: what loses accuracy or range in fp16. sum, softmax and
	// log_softmax are PyTorch's fp32_set_opt_dtype ops; casting the input
	// to fp32 gives the same values, as the kernels accumulate in fp32.
	tensor.OpSum:          FP32,
	tensor.OpSoftmax:      FP32,
	tensor.OpLogSoftmax:   FP32,
	tensor.OpLayerNorm:    FP32,
	tensor.OpExp:          FP32,
	tensor.OpMSELoss:      FP32,
	tensor.OpCrossEntropy: FP32,
	// batch_norm is on no CUDA list (cuDNN takes fp16 input with fp32
	// statistics); its one kernel here is fp32, so fp32 it is.
	tensor.OpBatchNorm: FP32,
	tensor.OpNLLLoss:   FP32,

	// On no list. add, sub and mul promote natively, which Keep does.
	// mean is on no CUDA list either: its kernel accumulates and returns in
	// fp32 whatever the input. A cast is autocast's own tool.
	tensor.OpCast:    Keep,
	tensor.OpAdd:     Keep,
	tensor.OpSub:     Keep,
	tensor.OpMul:     Keep,
	tensor.OpAddBias: Keep,
	tensor.OpScale:   Keep,
	tensor.OpReLU:    Keep,
	tensor.OpGELU:    Keep,
	tensor.OpMean:    Keep,
	tensor.OpDropout: Keep,

	// The math ops. log, rsqrt, pow and sum (sum_dim here) are on
	// PyTorch's CUDA fp32 list; div, neg, sqrt, tanh, sigmoid, where,
	// masked_fill, mean, amax and amin are on no list: they run in their
	// inputs' dtype, promoted (the reductions return fp32 all the same).
	tensor.OpLog:        FP32,
	tensor.OpRsqrt:      FP32,
	tensor.OpPow:        FP32,
	tensor.OpSumAxes:    FP32,
	tensor.OpDiv:        Keep,
	tensor.OpNeg:        Keep,
	tensor.OpSqrt:       Keep,
	tensor.OpTanh:       Keep,
	tensor.OpSigmoid:    Keep,
	tensor.OpSiLU:       Keep,
	tensor.OpMish:       Keep,
	tensor.OpWhere:      Keep,
	tensor.OpMaskedFill: Keep,
	tensor.OpMeanAxes:   Keep,
	tensor.OpMaxAxes:    Keep,
	tensor.OpMinAxes:    Keep,
	// Layout ops move elements without arithmetic: PyTorch's autocast
	// lists none of them, and they keep (promote) their inputs' dtype.
	tensor.OpPermute: Keep,
	tensor.OpNarrow:  Keep,
	tensor.OpConcat:  Keep,
	tensor.OpStack:   Keep,
	tensor.OpGather:  Keep,
	// embedding runs in the weight's dtype, as PyTorch's (on no list).
	tensor.OpEmbedding: Keep,
	// Convolutional networks: conv2d is on PyTorch's lower-precision list;
	// the poolings and reshape are on no list and keep their input's dtype.
	tensor.OpConv2d:            Lower,
	tensor.OpMaxPool2d:         Keep,
	tensor.OpAvgPool2d:         Keep,
	tensor.OpAdaptiveAvgPool2d: Keep,
	tensor.OpReshape:           Keep,
	// A custom function (nn.Function) is on no list: its inputs reach its
	// forward as they are, unless the function asks for a cast, as
	// PyTorch's custom_fwd(cast_inputs=...).
	tensor.OpCustom: Keep,
	// cumsum is on PyTorch's CUDA fp32 list.
	tensor.OpCumSum: FP32,
	// PyTorch's CUDA autocast runs scaled_dot_product_attention in lower
	// precision; the fused kernels accumulate in fp32.
	tensor.OpAttention: Lower,
}

// PolicyOf returns op's policy.
func PolicyOf(op tensor.Op) Policy { return policies[op] }

// Region is an autocast state. The zero value and nil are "autocast off".
// Enter returns a nested region; Exit returns to the enclosing one. The
// outermost region owns the weight-cast cache, which Exit of the outermost
// region releases.
type Region struct {
	enabled bool
	dtype   tensor.DType
	outer   *Region
	cache   *cache // shared by every region nested in the outermost
}

// New returns an outermost region: autocast on with dtype dt (Float16), or
// off when enabled is false.
func New(enabled bool, dt tensor.DType) *Region {
	checkDType(dt)
	// The region and its cache are one allocation; the map is made at the
	// first cast.
	rc := &struct {
		r Region
		c cache
	}{}
	rc.r = Region{enabled: enabled, dtype: dt, cache: &rc.c}
	return &rc.r
}

func checkDType(dt tensor.DType) {
	if dt != tensor.Float16 && dt != tensor.BFloat16 {
		panic(&tensor.DTypeError{Op: "amp.New", Got: dt, Want: "float16 or bfloat16"})
	}
}

// Enter returns a region nested in r that turns autocast on or off with
// dtype dt, as `with torch.autocast(enabled=..., dtype=...)` inside another.
func (r *Region) Enter(enabled bool, dt tensor.DType) *Region {
	checkDType(dt)
	if r == nil {
		return New(enabled, dt)
	}
	return &Region{enabled: enabled, dtype: dt, outer: r, cache: r.cache}
}

// Exit ends r and returns the enclosing region (nil for the outermost, whose
// cached weight casts are then released).
func (r *Region) Exit() *Region {
	if r == nil {
		return nil
	}
	if r.outer == nil {
		r.cache.clear()
	}
	return r.outer
}

// Enabled reports whether autocast is on in r.
func (r *Region) Enabled() bool { return r != nil && r.enabled }

// DType is the lower-precision dtype of r.
func (r *Region) DType() tensor.DType {
	if r == nil {
		return tensor.Float16
	}
	return r.dtype
}

// OpDType returns the dtype op computes in, given its floating inputs'
// dtypes, under r. With autocast off, and for ops on no list, it is the
// widest input dtype, as PyTorch's type promotion gives.
func (r *Region) OpDType(op tensor.Op, in ...tensor.DType) tensor.DType {
	if len(in) == 0 {
		panic(&tensor.UsageError{Op: "amp.OpDType", Msg: fmt.Sprintf("%s has no inputs", op)})
	}
	if !r.Enabled() {
		return tensor.Widest(in...)
	}
	switch policies[op] {
	case Lower:
		return r.dtype
	case FP32:
		return tensor.Float32
	}
	// Widest, and Keep: with fp16 and fp32 the only floating dtypes,
	// PyTorch's promote list and its native promotion agree.
	return tensor.Widest(in...)
}

// Cast returns x in dtype dt for an op: x itself when it already has dt.
// A cast of a weight (a tensor the caller marks as a parameter) to the
// lower dtype is cached until the outermost region exits, so a weight used
// by several ops of one step is cast once. The caller owns the result
// unless it is x or a cached weight; Owned tells which.
func (r *Region) Cast(x *tensor.Tensor, dt tensor.DType, param bool) (out *tensor.Tensor, owned bool) {
	if x.DType() == dt {
		return x, false
	}
	if param && r != nil && x.DType() == tensor.Float32 && dt == r.dtype {
		return r.cache.get(x, dt), false
	}
	return tensor.Cast(x, dt), true
}

// CachedCasts is the number of weight casts held, for tests.
func (r *Region) CachedCasts() int {
	if r == nil {
		return 0
	}
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	return len(r.cache.m)
}

// castKey names a cached cast: nested regions of fp16 and bf16 cast the
// same weight to both.
type castKey struct {
	x  *tensor.Tensor
	dt tensor.DType
}

type cache struct {
	mu sync.Mutex
	m  map[castKey]*tensor.Tensor
}

func (c *cache) get(x *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := castKey{x, dt}
	if y, ok := c.m[k]; ok {
		return y
	}
	y := tensor.Cast(x, dt)
	if c.m == nil {
		c.m = map[castKey]*tensor.Tensor{}
	}
	c.m[k] = y
	return y
}

func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, y := range c.m {
		y.Release()
	}
	c.m = nil // made again at the next cast
}
