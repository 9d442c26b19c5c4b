#version 450
// adam is one Adam or AdamW step (PyTorch's formulas, bias-corrected) over a
// parameter group, skipped on the device when the scaler found an inf.
// With HALF_DT fp16 or bf16 it also writes each updated weight rounded to
// HALF_DT into the parameter's half copy (when its chunk entry has one), so
// that autocast needs no cast of the weights before the next forward.
#define SECOND_MOMENT
#include "optim.glsl"
#include "det.glsl"
#include "dtype.glsl"

// HALF_DT: DT_F32 writes no half copies; DT_F16 or DT_BF16 writes them.
layout(constant_id = 1) const uint HALF_DT = DT_F32;
// The half copies, two per word. Without them any buffer is bound here.
layout(set = 0, binding = 7) writeonly buffer H { uint h[]; };

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

// det_elem is the deterministic path of elem: the same formulas, each
// operation rounded once, division and sqrt correctly rounded.
float det_elem(uvec4 at, uint e, float bc2, float step_size) {
    uint ip = at.x + e, ig = at.y + e, im = at.z + e, iv = at.w + e;
    float w = det_ftz(param[ip]);
    float g = det_ftz(grad[ig]);
    if (p.decoupled != 0u) w = det_mul(w, det_sub(1.0, det_mul(p.lr, p.weight_decay)));
    else g = det_mad(p.weight_decay, w, g);
    float m = det_mad(det_sub(1.0, p.beta1), g, det_mul(p.beta1, m1[im]));
    float v = det_mad(det_sub(1.0, p.beta2), det_mul(g, g), det_mul(p.beta2, m2[iv]));
    m1[im] = m;
    m2[iv] = v;
    float den = det_add(det_div(det_sqrt(v), bc2), p.eps);
    float nw = det_sub(w, det_div(det_mul(step_size, m), den));
    param[ip] = nw;
    return nw;
}

// elem updates element e of the chunk at and returns its new weight.
float elem(uvec4 at, uint e, float bc2, float step_size) {
    if (DETERMINISTIC) return det_elem(at, e, bc2, step_size);
    uint ip = at.x + e, ig = at.y + e, im = at.z + e, iv = at.w + e;
    float w = param[ip];
    float g = grad[ig];
    if (p.decoupled != 0u) w *= 1.0 - p.lr * p.weight_decay;
    else g += p.weight_decay * w;
    float m = p.beta1 * m1[im] + (1.0 - p.beta1) * g;
    float v = p.beta2 * m2[iv] + (1.0 - p.beta2) * g * g;
    m1[im] = m;
    m2[iv] = v;
    float nw = w - step_size * m / (sqrt(v) / bc2 + p.eps);
    param[ip] = nw;
    return nw;
}

void main() {
    if (found[0] != 0.0) return;
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (c >= p.nchunks) return;
    uvec4 at = chunks[2u * c];
    uvec4 more = chunks[2u * c + 1u]; // count, half copy's first word, has a half copy
    uint t = steps[0] + 1u;
    float bc2, step_size;
    if (DETERMINISTIC) {
        bc2 = det_sqrt(det_one_minus_pow(p.beta2, t));
        step_size = det_div(p.lr, det_one_minus_pow(p.beta1, t));
    } else {
        bc2 = sqrt(one_minus_pow(p.beta2, t));
        step_size = p.lr / one_minus_pow(p.beta1, t);
    }
    if (HALF_DT == DT_F32 || more.z == 0u) {
        for (uint e = gl_LocalInvocationIndex; e < more.x; e += gl_WorkGroupSize.x)
            elem(at, e, bc2, step_size);
        return;
    }
    // Two consecutive elements per invocation: a word of the copy has one
    // writer. An odd count pads the last word's high half with 0, as Cast.
    for (uint q = gl_LocalInvocationIndex; 2u * q < more.x; q += gl_WorkGroupSize.x) {
        uint lo = f32_to_half(elem(at, 2u * q, bc2, step_size), HALF_DT);
        uint hi = 0u;
        if (2u * q + 1u < more.x) hi = f32_to_half(elem(at, 2u * q + 1u, bc2, step_size), HALF_DT);
        h[more.y + q] = lo | (hi << 16);
    }
}
