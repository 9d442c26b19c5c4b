// Package tensor holds dense, row-major tensors on a Vulkan device and the
// ops that run vkamp's kernels on them: matmul with fp32 accumulation
// (batched, with torch.matmul's broadcasting of batch dimensions),
// elementwise ops and their backward kernels, reductions in fp32, softmax
// along any axis with its backward, casts, row selection by index, layout
// copies (Permute, Transpose, Narrow, Concat, Stack, Gather), ops along an
// axis (ArgMax, ArgMin, CumSum, TopK, Sort, ArgSort), constructors on the
// device (Arange, OneHot), and the ops of training: dropout, cross-entropy and layer normalisation
// with their backward passes, the fused optimizer updates (OptimizerState)
// and dynamic loss scaling (LossScale). It is the only package that
// launches a kernel.
//
// A tensor has a dtype and a shape. The dtypes are Float32, Float16,
// BFloat16 (16-bit ones stored two per 32-bit word where the device lacks
// 16-bit storage) and Int32, for indices and labels. Arithmetic ops take the
// floating dtypes in any mix and compute in fp32; an Int32 operand panics.
// Ops record work and return a new tensor at once; reading values
// (Float32s, Item) waits for the device. 16-bit values are rounded by
// vkamp's own integer code, the same on every device: to nearest even,
// overflowing to inf.
//
// Misuse is a programmer error and panics with a typed value: a
// *ShapeError naming the op and both shapes, a *DTypeError, or a
// *UsageError (nil, released or mixed-device tensors). Failures of the
// device or of memory do not panic: the tensor that could not be made
// carries the error, every tensor computed from it carries it too, and the
// read returns it. A tensor larger than the device's maxStorageBufferRange
// is one that cannot be made: no kernel could bind it. Bad data found by a
// kernel is a device-side assert: a class index out of range given to NLL
// or CrossEntropyBackward, or an index out of range given to Embedding,
// IndexSelect, Gather, their backward ops or OneHot, gives NaN and raises the
// device's assert, which the next read of any tensor on the device (or
// Wait) returns as an *AssertError, without a wait of its own. In-place ops (AxpyUnless,
// Accumulate, SetBytes, CopyFrom, Zero, the optimizer steps,
// LossScale.Unscale) return errors instead, so a weight never becomes an
// error carrier.
//
// Memory is explicit: Release a tensor, or track a step's temporaries in a
// Scope and release them together, which keeps a training loop's device
// memory flat. A tensor is not safe for concurrent mutation; concurrent
// reads and ops on different tensors of one device are.
package tensor
