#version 450
// adadelta is one Adadelta step (PyTorch's formulas) over a parameter group,
// skipped on the device when the scaler found an inf. m1 is the running
// average of squared gradients, m2 that of squared updates.
#define SECOND_MOMENT
#define NO_STEPS // no bias correction: the step count is not read
#include "optim.glsl"

layout(push_constant) uniform Push {
    uint nchunks;
    float lr;
    float rho;
    float eps;
    float weight_decay;
} p;

void main() {
    FOR_EACH_ELEMENT(p.nchunks, {
        float w = param[ip];
        float g = grad[ig] + p.weight_decay * w;
        float sq = p.rho * m1[im] + (1.0 - p.rho) * g * g;
        float delta = sqrt(m2[iv] + p.eps) / sqrt(sq + p.eps) * g;
        m1[im] = sq;
        m2[iv] = p.rho * m2[iv] + (1.0 - p.rho) * delta * delta;
        param[ip] = w - p.lr * delta;
    })
}
