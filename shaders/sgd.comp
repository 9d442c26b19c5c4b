#version 450
// sgd is one SGD step (PyTorch's formulas: weight decay, momentum with
// dampening, Nesterov) over a parameter group, skipped on the device when
// the scaler found an inf. The momentum buffer is m1.
#include "sgd.glsl"
