package tensor

import "github.com/vkamp/vkamp/vk"

// The deterministic mode (vk.Options.Deterministic, VKAMP_DETERMINISTIC=1)
// gives the same bits on every driver and tier for the kernels that declare
// the specialization constant DETERMINISTIC (shaders/include/det.glsl). The
// kernels decide their roundings; this file fixes what the host chooses:
//
//   - MatMul always runs matmul_reg, whose accumulation for each output is
//     sequential in k whatever its tile, with the tiles of the rule and
//     never tuned ones (VKAMP_MATMUL and the autotuner are ignored);
//   - tree reductions use workgroups of detReduceLocal invocations on every
//     device, so a row's tree has the same shape everywhere; the batch
//     norm's trees span detSegment(n) invocations;
//   - the layer norm runs one invocation per row on every device (no tree,
//     no barrier): its forward pass keeps four partial sums in a fixed
//     order (shaders/include/det_norm.glsl), in its texel form on lavapipe
//     and its storage-buffer form elsewhere, the same bits; its backward
//     pass sums each row sequentially, never in its texel form.
//
// Covered (the MNIST MLP's training step, fp16 AMP and fp32, checked by
// tools/internal/trainer's TestDeterministic and scripts/check-deterministic.sh
// on lavapipe at every tier and on SwiftShader): matmul with its epilogue
// (bias, beta * C), sum_rows and sum_cols, log_softmax and softmax, nll,
// cross_entropy_backward, relu and relu_backward, accumulate, adam (in
// its texel form on lavapipe, the same bits: TestOptimizerVec4Offsets),
// axpy_unless, the casts, fill and copy, the scaler's scale_by and
// unscale_check (their products through det_mul), scale_update and
// step_count (integer code), and broadcast_scale (the backward of sums,
// means and losses), add_bias and axpy.
//
// Covered too, each op's outputs pinned by hash on fixed inputs in
// TestDeterministicOps (lavapipe at every tier, SwiftShader), their
// functions checked against Go's in TestDeterministicMath: exp, log, sqrt,
// rsqrt, tanh, sigmoid, pow, div (bcast_div), silu and mish and their
// backward passes, gelu in its erf and tanh forms with their backward passes (and the texel forms of gelu and
// gelu_backward, whose det path is the same per element), softmax_backward,
// log_softmax_backward, nll_backward, layer_norm and layer_norm_backward,
// batch_norm (forward, backward, running statistics, evaluation), sgd,
// adadelta, adam with decoupled decay (adamw), gradient clipping
// (grad_sumsq, clip_coef, grad_scale), embedding_backward, cumsum (its
// adds in an order fixed by the shape: tensor/scan.go), arange (det_mad),
// and argmax, argmin, topk, argsort, one_hot and multinomial (integer
// code over cumsum's sums).
// Subnormal fp32 values are zero in deterministic mode, as SwiftShader
// reads and writes them on x86: every det_* operation (det.glsl) flushes
// its inputs and its result, a product's flush decided as x86 does
// (tininess after rounding: det_prod); sums, means, max and min
// reductions, max pooling, accumulate, relu, relu_backward, scale and
// clamping by value (grad_clamp) compare and add flushed values.
// TestDeterministicSubnormals and TestDeterministicClampValues check the
// elementwise add, sub, mul and clamping bit for bit against Go on inputs
// where lavapipe and SwiftShader differed; TestDeterministicSubnormalOps
// pins by hash matmul (with its epilogue), the reductions, max pooling,
// accumulate, softmax, log_softmax, cross_entropy_backward, layer norm and
// its backward, gelu, tanh, exp, div, scale, relu and its backward, the
// casts, adam, add_bias, axpy, the scaler's scale and unscale (fp32 and
// fp16 gradients; a scale of 2^127, whose reciprocal is subnormal),
// clipping's scaling and broadcast_scale on subnormal-rich inputs (before
// the inputs were flushed, lavapipe differed from those hashes in
// twenty-four of them, SwiftShader in three).
// NaN payloads are not part of the promise: drivers may make a NaN input's
// result any NaN.
//
// Covered for the GPT and the CNN (TestDeterministicModelKernels pins their
// bytes, the same on lavapipe at every tier and on SwiftShader): the fused
// causal attention and its backward run the shared-memory kernels on every
// device (never the texel ones), with each output's sums in key and head
// order; conv2d runs im2col + MatMul (never conv_tex), its weight gradient
// in the same passes on every device (within the least
// maxStorageBufferRange Vulkan allows and convMaxDepth), with the bias and
// col2im's sums flushed; max, average and adaptive pooling and their
// backwards, and dropout (its mask is integer code). Kernels that call det_*
// functions from several places compile without spirv-opt
// (`// spirv-opt: off`, shaders/internal/gen): its inliner drops
// NoContraction from the copies and fuses them into fma.
//
// Not covered: kernels outside these lists. A new deterministic kernel
// includes shaders/include/det.glsl, takes its DETERMINISTIC path and
// compares or stores fp32 values it loads only through det_* operations
// or det_ftz. The casts and copies gave the same bits on subnormal
// inputs on both drivers already; they keep them.

// detReduceLocal is the workgroup size of tree reductions in deterministic
// mode: 128, the least maxComputeWorkGroupInvocations Vulkan allows.
const detReduceLocal = 128

// detSegment is the number of invocations that reduce one row of n
// elements in deterministic mode, the tree's width: the least power of two
// reaching n, at most detReduceLocal, whatever the device.
func detSegment(n int) uint32 {
	s := uint32(1)
	for int(s) < n && s < detReduceLocal {
		s *= 2
	}
	return s
}

// mmChooseDet is mmChoose in deterministic mode.
func mmChooseDet(info vk.Info, a, b *Tensor, g mmGeom) (mmGeom, mmPlan, error) {
	g.aMode = mmMode(a.dtype, mmRegister, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, mmRegister, !g.transB, g.n, g.k)
	return g, mmPlanFor(info, mmRegister, g), nil
}
