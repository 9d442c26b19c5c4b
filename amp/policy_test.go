package amp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/tensor"
)

// Every op of the graph has an explicit policy, Keep included: an op added
// to tensor without a decision here fails, rather than keep its input's
// dtype by default. And every entry is an op.
func TestPolicyTableCoversOps(t *testing.T) {
	ops := tensor.Ops()
	for _, op := range ops {
		_, ok := policies[op]
		require.True(t, ok, "op %s has no autocast policy (add one, Keep if it is on no list)", op)
	}
	require.Len(t, policies, len(ops), "an entry of the policy table is not an op of tensor.Ops")
}

// The table follows PyTorch's CUDA lists for the ops that exist here.
func TestPolicyLists(t *testing.T) {
	want := map[tensor.Op]Policy{
		tensor.OpMatMul: Lower, tensor.OpLinear: Lower,
		tensor.OpSum: FP32, tensor.OpSoftmax: FP32, tensor.OpLogSoftmax: FP32, tensor.OpLayerNorm: FP32,
		tensor.OpMSELoss: FP32, tensor.OpCrossEntropy: FP32, tensor.OpExp: FP32,
		// PyTorch's fp32 list: log, rsqrt, pow, sum (with dim).
		tensor.OpLog: FP32, tensor.OpRsqrt: FP32, tensor.OpPow: FP32, tensor.OpSumAxes: FP32,
		tensor.OpConv2d:    Lower, // PyTorch's CUDA lower-precision list; its poolings are on none
		tensor.OpAttention: Lower,
		tensor.OpBatchNorm: FP32, tensor.OpNLLLoss: FP32,
		tensor.OpCumSum: FP32, // PyTorch's fp32 list
	}
	for _, op := range tensor.Ops() {
		p, ok := want[op]
		if !ok {
			p = Keep
		}
		require.Equal(t, p, PolicyOf(op), "policy of %s", op)
	}
}

// Under autocast, Keep promotes as without autocast (add of fp16 and fp32
// is fp32); Lower and FP32 ignore the inputs; with autocast off every op
// runs in the widest input dtype.
func TestOpDType(t *testing.T) {
	f16, f32 := tensor.Float16, tensor.Float32
	on := New(true, f16)
	var none *Region // nil: autocast off
	cases := []struct {
		op      tensor.Op
		in      []tensor.DType
		on, off tensor.DType
	}{
		{tensor.OpMatMul, []tensor.DType{f32, f32}, f16, f32},
		{tensor.OpLinear, []tensor.DType{f16, f32, f32}, f16, f32},
		{tensor.OpSum, []tensor.DType{f16}, f32, f16},
		{tensor.OpLayerNorm, []tensor.DType{f16, f16, f16}, f32, f16},
		{tensor.OpAdd, []tensor.DType{f16, f32}, f32, f32},
		{tensor.OpAdd, []tensor.DType{f16, f16}, f16, f16},
		{tensor.OpAddBias, []tensor.DType{f32, f16}, f32, f32},
		{tensor.OpReLU, []tensor.DType{f16}, f16, f16},
		{tensor.OpMean, []tensor.DType{f16}, f16, f16},
	}
	for _, c := range cases {
		require.Equal(t, c.on, on.OpDType(c.op, c.in...), "%s%v under autocast", c.op, c.in)
		require.Equal(t, c.off, none.OpDType(c.op, c.in...), "%s%v without autocast", c.op, c.in)
	}
	require.PanicsWithError(t, "tensor: amp.OpDType: layer_norm has no inputs", func() { on.OpDType(tensor.OpLayerNorm) })
}

// A bf16 region lowers to bf16; bf16 with fp16 promotes to fp32, as
// PyTorch's type promotion gives; a dtype other than fp16 or bf16 panics.
func TestOpDTypeBF16(t *testing.T) {
	bf, f16, f32 := tensor.BFloat16, tensor.Float16, tensor.Float32
	on := New(true, bf)
	require.Equal(t, bf, on.DType())
	require.Equal(t, bf, on.OpDType(tensor.OpMatMul, f32, f32))
	require.Equal(t, f32, on.OpDType(tensor.OpSum, bf))
	require.Equal(t, f32, on.OpDType(tensor.OpAdd, bf, f16))
	require.Equal(t, bf, on.OpDType(tensor.OpAdd, bf, bf))
	inner := on.Enter(true, f16)
	require.Equal(t, f16, inner.OpDType(tensor.OpLinear, f32, f32, f32))
	require.Equal(t, bf, inner.Exit().OpDType(tensor.OpLinear, f32, f32, f32))
	require.Panics(t, func() { New(true, f32) })
	require.Panics(t, func() { on.Enter(true, tensor.Int32) })
}
