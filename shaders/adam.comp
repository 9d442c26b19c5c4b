#version 450
// adam is one Adam or AdamW step (PyTorch's formulas, bias-corrected) over a
// parameter group, skipped on the device when the scaler found an inf.
// With HALF_DT fp16 or bf16 it also writes each updated weight rounded to
// HALF_DT into the parameter's half copy (when its chunk entry has one), so
// that autocast needs no cast of the weights before the next forward.
#include "adam.glsl"
