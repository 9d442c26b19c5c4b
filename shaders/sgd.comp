#version 450
// sgd is one SGD step (PyTorch's formulas: weight decay, momentum with
// dampening, Nesterov) over a parameter group, skipped on the device when
// the scaler found an inf. The momentum buffer is m1.
#include "optim.glsl"
#include "det.glsl"

layout(push_constant) uniform Push {
    uint nchunks;
    float lr;
    float momentum;
    float dampening;
    float weight_decay;
    uint nesterov;
} p;

// det_step is main on the deterministic path: the same formulas with
// det.glsl's operations.
void det_step() {
    bool first = steps[0] == 0u;
    FOR_EACH_ELEMENT(p.nchunks, {
        float w = param[ip];
        float g = det_mad(p.weight_decay, w, grad[ig]);
        if (p.momentum != 0.0) {
            float b = first ? g : det_add(det_mul(p.momentum, m1[im]), det_mul(det_sub(1.0, p.dampening), g));
            m1[im] = b;
            g = p.nesterov != 0u ? det_mad(p.momentum, b, g) : b;
        }
        param[ip] = det_sub(w, det_mul(p.lr, g));
    })
}

void main() {
    if (DETERMINISTIC) {
        det_step();
        return;
    }
    bool first = steps[0] == 0u;
    FOR_EACH_ELEMENT(p.nchunks, {
        float w = param[ip];
        float g = grad[ig] + p.weight_decay * w;
        if (p.momentum != 0.0) {
            float b = first ? g : p.momentum * m1[im] + (1.0 - p.dampening) * g;
            m1[im] = b;
            g = p.nesterov != 0u ? g + p.momentum * b : b;
        }
        param[ip] = w - p.lr * g;
    })
}
