// The body of adadelta.comp and its texel form (adadelta_tex.comp, with
// TEXELS defined).
#ifndef VKAMP_ADADELTA_GLSL
#define VKAMP_ADADELTA_GLSL

#define TEX_BINDING 7 // the texel views' first binding (optim.glsl)
#define SECOND_MOMENT
#define NO_STEPS // no bias correction: the step count is not read
#include "optim.glsl"
#include "det.glsl"

// LR_DEV reads the learning rate from lr_dev[0] when the step runs, not
// from the push constants, as adam.comp does: a captured step replays with
// the rate written before each replay. Without it any buffer is bound here.
layout(constant_id = 5) const bool LR_DEV = false;
layout(set = 0, binding = 6) readonly buffer LR { float lr_dev[]; };

layout(push_constant) uniform Push {
    uint nchunks;
    float lr;
    float rho;
    float eps;
    float weight_decay;
} p;

float lr; // the step's learning rate: p.lr, or lr_dev[0] (LR_DEV), set first in main

// hp holds the push constants update reads for every element, read at
// main's top (adam.glsl's Hyper: lavapipe reads them lane by lane in a loop).
struct Hyper { float rho, eps, weight_decay; };
Hyper hp;

// det_update is update on the deterministic path: the same formulas with
// det.glsl's operations, division and sqrt correctly rounded.
float det_update(float w, float g, inout float sq, inout float acc) {
    float keep = det_sub(1.0, hp.rho);
    g = det_mad(hp.weight_decay, w, g);
    sq = det_add(det_mul(hp.rho, sq), det_mul(det_mul(keep, g), g));
    float delta = det_mul(det_div(det_sqrt(det_add(acc, hp.eps)), det_sqrt(det_add(sq, hp.eps))), g);
    acc = det_add(det_mul(hp.rho, acc), det_mul(det_mul(keep, delta), delta));
    return det_sub(w, det_mul(lr, delta));
}

// update is one element's step: weight w, gradient g, the averages of
// squared gradients sq and of squared updates acc (updated); it returns
// the new weight.
float update(float w, float g, inout float sq, inout float acc) {
    if (DETERMINISTIC) return det_update(w, g, sq, acc);
    g = g + hp.weight_decay * w;
    sq = hp.rho * sq + (1.0 - hp.rho) * g * g;
    float delta = sqrt(acc + hp.eps) / sqrt(sq + hp.eps) * g;
    acc = hp.rho * acc + (1.0 - hp.rho) * delta * delta;
    return w - lr * delta;
}

void main() {
    lr = LR_DEV ? lr_dev[0] : p.lr;
    hp = Hyper(p.rho, p.eps, p.weight_decay);
    FOR_EACH_QUAD(p.nchunks, {
        vec4 w = LOAD4(param, ip);
        vec4 g = LOAD4(grad, ig);
        vec4 sq = LOAD4(m1, im);
        vec4 acc = LOAD4(m2, iv);
        w.x = update(w.x, g.x, sq.x, acc.x);
        w.y = update(w.y, g.y, sq.y, acc.y);
        w.z = update(w.z, g.z, sq.z, acc.z);
        w.w = update(w.w, g.w, sq.w, acc.w);
        STORE4(m1, im, sq);
        STORE4(m2, iv, acc);
        STORE4(param, ip, w);
    }, {
        float sq = WORD(m1, im);
        float acc = WORD(m2, iv);
        float w = update(WORD(param, ip), WORD(grad, ig), sq, acc);
        WORD(m1, im) = sq;
        WORD(m2, iv) = acc;
        WORD(param, ip) = w;
    })
}

#endif
