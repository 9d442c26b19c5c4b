#version 450
// adadelta is one Adadelta step (PyTorch's formulas) over a parameter group,
// skipped on the device when the scaler found an inf. m1 is the running
// average of squared gradients, m2 that of squared updates.
#include "adadelta.glsl"
