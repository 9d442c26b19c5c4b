#version 450
// adadelta is one Adadelta step (PyTorch's formulas) over a parameter group,
// skipped on the device when the scaler found an inf. m1 is the running
// average of squared gradients, m2 that of squared updates.
#define SECOND_MOMENT
#define NO_STEPS // no bias correction: the step count is not read
#include "optim.glsl"
#include "det.glsl"

layout(push_constant) uniform Push {
    uint nchunks;
    float lr;
    float rho;
    float eps;
    float weight_decay;
} p;

// det_step is main on the deterministic path: the same formulas with
// det.glsl's operations, division and sqrt correctly rounded.
void det_step() {
    float keep = det_sub(1.0, p.rho);
    FOR_EACH_ELEMENT(p.nchunks, {
        float w = param[ip];
        float g = det_mad(p.weight_decay, w, grad[ig]);
        float sq = det_add(det_mul(p.rho, m1[im]), det_mul(det_mul(keep, g), g));
        float delta = det_mul(det_div(det_sqrt(det_add(m2[iv], p.eps)), det_sqrt(det_add(sq, p.eps))), g);
        m1[im] = sq;
        m2[iv] = det_add(det_mul(p.rho, m2[iv]), det_mul(det_mul(keep, delta), delta));
        param[ip] = det_sub(w, det_mul(p.lr, delta));
    })
}

void main() {
    if (DETERMINISTIC) {
        det_step();
        return;
    }
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
