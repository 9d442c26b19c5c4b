package tensor

import (
	"fmt"
)

// The texel attention kernels (shaders/include/attention_tex.glsl) are the
// fused kernels for lavapipe, which loads storage and shared memory lane
// by lane but fetches texels with SIMD gathers: each invocation keeps its
// row in registers (the head size is a specialization constant) and
// fetches the other rows as texels. At nanoGPT's CPU recipe (B=12, T=64,
// 4 heads of 32, fp16) the forward pass takes about a fifth of the
// shared-memory kernels' CPU time, forward and backward together (15 ms)
// a fifth (BenchmarkCausalAttention's ratio: 5.4 on a loaded 2-core
// machine); at the GPU recipe's (B=64, T=256, 6 heads of 64) a ninth and
// a fifth.

// attnTexRows is the rows (invocations) of a texel kernel's workgroup.
const attnTexRows = 32

// attnTexMaxHead is the largest head size the texel kernels take: their
// rows live in registers, four or five of them per invocation.
const attnTexMaxHead = 64

// attnKernel forces a kernel family for tests and benchmarks: "" chooses
// per device, "shared" the shared-memory kernels, "texel" the texel ones
// wherever their layout allows.
var attnKernel string

// attnTexFits reports whether the texel kernels run attention over qkv with
// head size hd: on a CPU driver other than SwiftShader (whose compiler does
// not finish matmul_tex either), with whole texels per head slice, qkv
// within the device's texel buffer limit.
func attnTexFits(qkv *Tensor, hd int) bool {
	switch attnKernel {
	case "shared":
		return false
	case "texel":
	default:
		if !formsOf(qkv.dev).attnTex {
			return false
		}
	}
	perTexel := 8 // 16-bit elements in a 16-byte texel
	if qkv.dtype.wide() {
		perTexel = 4
	}
	return hd <= attnTexMaxHead && hd%perTexel == 0 && qkv.buf.TexelsFit()
}

func (a attnDims) texGroups() [3]uint32 {
	return [3]uint32{uint32((a.t + attnTexRows - 1) / attnTexRows), uint32(min(a.batch*a.heads, 65535)), 1}
}

// attnTexFwdRows is attention_tex_fwd's TQ: query rows an invocation
// computes, sharing each key's texels.
const attnTexFwdRows = 2

// texGroupsFwd is texGroups for attention_tex_fwd, whose invocations take
// attnTexFwdRows rows each.
func (a attnDims) texGroupsFwd() [3]uint32 {
	rows := attnTexRows * attnTexFwdRows
	return [3]uint32{uint32((a.t + rows - 1) / rows), uint32(min(a.batch*a.heads, 65535)), 1}
}

// texLoops is loops for the texel kernels: per (batch, head) an invocation
// loops over at most T rows of the other side (the head is unrolled).
func (a attnDims) texLoops(out *Tensor, op string) bool {
	bh := a.batch * a.heads
	iters := (bh + 65534) / 65535 * (a.t + 1)
	return checkLoops(out, op, iters, fmt.Sprintf("attention over %d rows with head size %d", a.t, a.hd))
}
