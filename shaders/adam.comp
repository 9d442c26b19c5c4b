#version 450
// adam is one Adam or AdamW step (PyTorch's formulas, bias-corrected) over a
// parameter group, skipped on the device when the scaler found an inf.
#define SECOND_MOMENT
#include "optim.glsl"
#include "det.glsl"

layout(push_constant) uniform Push {
    uint nchunks;
    float lr;
    float beta1;
    float beta2;
    float eps;
    float weight_decay;
    uint decoupled; // AdamW: decay the weight, not the gradient
} p;

// one_minus_pow returns 1 - b^t for b in [0, 1). 1.0 - pow(b, t) cancels
// when b^t is near 1 (0.999^t for small t), and pow is only as accurate as
// exp2(t * log2(b)), whose log2 has an absolute error bound: the bias
// correction could be off by 1e-4. Powers are multiplied in the complement
// c = 1 - x instead, where x^m x^n becomes c_m + c_n (1 - c_m): no
// cancellation, a few roundings per bit of t.
float one_minus_pow(float b, uint t) {
    float acc = 0.0;   // 1 - b^0
    float c = 1.0 - b; // 1 - b^(2^i)
    for (; t != 0u; t >>= 1) {
        if ((t & 1u) != 0u) acc += c * (1.0 - acc);
        c *= 2.0 - c;
    }
    return acc;
}

// det_one_minus_pow is one_minus_pow with every rounding fixed.
float det_one_minus_pow(float b, uint t) {
    float acc = 0.0;
    float c = det_sub(1.0, b);
    for (; t != 0u; t >>= 1) {
        if ((t & 1u) != 0u) acc = det_add(acc, det_mul(c, det_sub(1.0, acc)));
        c = det_mul(c, det_sub(2.0, c));
    }
    return acc;
}

// det_step is the deterministic path of main: the same formulas, each
// operation rounded once, division and sqrt correctly rounded.
void det_step() {
    uint t = steps[0] + 1u;
    float bc1 = det_one_minus_pow(p.beta1, t);
    float bc2 = det_sqrt(det_one_minus_pow(p.beta2, t));
    float step_size = det_div(p.lr, bc1);
    float decay = det_sub(1.0, det_mul(p.lr, p.weight_decay));
    float nb1 = det_sub(1.0, p.beta1), nb2 = det_sub(1.0, p.beta2);
    FOR_EACH_ELEMENT(p.nchunks, {
        float w = det_ftz(param[ip]);
        float g = det_ftz(grad[ig]);
        if (p.decoupled != 0u) w = det_mul(w, decay);
        else g = det_mad(p.weight_decay, w, g);
        float m = det_mad(nb1, g, det_mul(p.beta1, m1[im]));
        float v = det_mad(nb2, det_mul(g, g), det_mul(p.beta2, m2[iv]));
        m1[im] = m;
        m2[iv] = v;
        float den = det_add(det_div(det_sqrt(v), bc2), p.eps);
        param[ip] = det_sub(w, det_div(det_mul(step_size, m), den));
    })
}

void main() {
    if (DETERMINISTIC) {
        det_step();
        return;
    }
    uint t = steps[0] + 1u;
    float bc1 = one_minus_pow(p.beta1, t);
    float bc2 = sqrt(one_minus_pow(p.beta2, t));
    float step_size = p.lr / bc1;
    FOR_EACH_ELEMENT(p.nchunks, {
        float w = param[ip];
        float g = grad[ig];
        if (p.decoupled != 0u) w *= 1.0 - p.lr * p.weight_decay;
        else g += p.weight_decay * w;
        float m = p.beta1 * m1[im] + (1.0 - p.beta1) * g;
        float v = p.beta2 * m2[iv] + (1.0 - p.beta2) * g * g;
        m1[im] = m;
        m2[iv] = v;
        param[ip] = w - step_size * m / (sqrt(v) / bc2 + p.eps);
    })
}
