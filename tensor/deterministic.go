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
//     device, so a row's tree has the same shape everywhere.
//
// Covered (the MNIST MLP's training step, fp16 AMP and fp32, checked by
// tools/internal/trainer's TestDeterministic and scripts/check-deterministic.sh
// on lavapipe at every tier and on SwiftShader): matmul with its epilogue
// (bias, beta * C), sum_rows and sum_cols, log_softmax and softmax, nll,
// cross_entropy_backward, relu and relu_backward, accumulate, adam,
// axpy_unless, the casts, fill and copy, and the scaler's scale_by,
// unscale_check, scale_update and step_count (exact, or integer code, on
// every driver already).
//
// Not covered yet, running their default code in this mode: the
// elementwise transcendental and division ops (exp, log, tanh, sigmoid,
// gelu, pow, sqrt, rsqrt, div), layer_norm and batch_norm, attention,
// conv2d (conv_tex, and col2im's sums; its MatMuls are covered),
// pooling, embedding_backward, sgd and adadelta, and gradient clipping
// (grad_sumsq, clip_coef). A new deterministic kernel includes
// shaders/include/det.glsl and takes its DETERMINISTIC path.
//
// Covered for the GPT and the CNN (TestDeterministicModelKernels pins their
// bytes, the same on lavapipe at every tier and on SwiftShader), which
// takes attention, conv2d, pooling and embedding_backward off the list
// above: the fused causal attention and its backward run the shared-memory
// kernels on every device (never the texel ones), with each output's sums
// in key and head order; conv2d runs im2col + MatMul (never conv_tex), its
// weight gradient in the same passes on every device (within the least
// maxStorageBufferRange Vulkan allows and convMaxDepth), with the bias and
// col2im's sums flushed; max, average and adaptive pooling and their
// backwards, embedding_backward, dropout (its mask is integer code), and
// softmax_backward and log_softmax_backward. Kernels that call det_*
// functions from several places compile without spirv-opt
// (`// spirv-opt: off`, shaders/internal/gen): its inliner drops
// NoContraction from the copies and fuses them into fma.

// detReduceLocal is the workgroup size of tree reductions in deterministic
// mode: 128, the least maxComputeWorkGroupInvocations Vulkan allows.
const detReduceLocal = 128

// mmChooseDet is mmChoose in deterministic mode.
func mmChooseDet(info vk.Info, a, b *Tensor, g mmGeom) (mmGeom, mmPlan, error) {
	g.aMode = mmMode(a.dtype, mmRegister, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, mmRegister, !g.transB, g.n, g.k)
	return g, mmPlanFor(info, mmRegister, g), nil
}
