// Package nn trains models: reverse-mode autograd over the tensor ops, layers
// with fp32 master weights, losses in fp32, and optimizers that can skip a
// step on the device, for PyTorch's AMP recipe with package scaler.
//
// A Graph records one forward pass; Backward runs the backward rules of its
// ops in reverse, from one table whose rules the engine checks (one gradient
// per input, each of its input's shape and dtype, or a panic naming the op).
// Gradients accumulate into each Param's fp32 Grad. A Graph carries its own
// autocast region (package amp), so there is no global state: two goroutines
// train two models with two graphs. Release frees every tensor the graph
// made, and its cached weight casts.
//
// SGD and Adam update all parameters in one dispatch per group of memory
// blocks, and StepUnless skips the update on the device when the scaler's
// overflow flag is set (their step counts do not advance), so an AMP step
// needs no host wait. SaveCheckpoint and LoadCheckpoint keep parameters and
// the state of any number of optimizers in safetensors files and scalars in
// JSON, as versions of a directory switched atomically: a crash never leaves
// a torn checkpoint, and a failed save leaves the directory as it was.
//
// The training utilities of a GPT recipe: parameter groups
// (NewAdamGroups, and DecayGroups for AdamW's decay on matrices only),
// gradient clipping on the device (ClipGradNorm, ClipGradValue: after
// scaler.Unscale, before scaler.Step), learning-rate schedules as functions
// of the iteration (CosineWithWarmup, StepLR, LinearWarmup), initialisers
// with PyTorch's conventions (InitNormal, InitKaimingUniform,
// InitXavierNormal, ...), freezing (Param.Frozen, Freeze) and train/eval
// mode over nested modules (Train, Eval). loss.Backward(),
// loss.Scaled(sc).Backward() and loss.Item() are PyTorch's one-liners.
//
// Layer constructors panic with a *tensor.UsageError naming the layer for
// sizes below 1 (misuse). A parameter the device cannot hold (out of
// memory, or over its maxStorageBufferRange) carries the error: Param.Err
// reports it, and NewSGD and NewAdam return it naming the parameter. Set
// new weights with Param.Set, which copies into the tensor the optimizer
// updates; an optimizer also follows a Value or Grad replaced by a tensor
// of the same shape. A parameter listed twice in an optimizer is an error.
//
// Graphs and Vars belong to one goroutine. Params, optimizers and the device
// may be shared, with the device's lock ordering the work.
//
// Misuse of a Graph panics with a *tensor.UsageError naming the method: any
// method but Release of a released graph, Backward of a nil loss or of
// another graph's loss, a second Backward of a graph made without
// Options.RetainGraph (it would add the same gradients again), and a call
// that overlaps another call of the same graph, as two goroutines sharing
// a graph soon do (an atomic flag per call finds it).
package nn
