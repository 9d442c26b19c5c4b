// The body of sgd.comp and its texel form (sgd_tex.comp, with
// TEXELS defined).
#ifndef VKAMP_SGD_GLSL
#define VKAMP_SGD_GLSL

#define UNSCALE_BINDING 7 // the scaler's state (optim.glsl)
#define TEX_BINDING 8 // the texel views' first binding (optim.glsl)
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
    float momentum;
    float dampening;
    float weight_decay;
    uint nesterov;
} p;

float lr; // the step's learning rate: p.lr, or lr_dev[0] (LR_DEV), set first in main

// hp holds the push constants update reads for every element, read at
// main's top (adam.glsl's Hyper: lavapipe reads them lane by lane in a loop).
struct Hyper { float momentum, dampening, weight_decay; bool nesterov; };
Hyper hp;

// det_update is update on the deterministic path: the same formulas with
// det.glsl's operations.
float det_update(float w, float g, inout float b, bool first) {
    g = det_mad(hp.weight_decay, w, g);
    if (hp.momentum != 0.0) {
        b = first ? g : det_add(det_mul(hp.momentum, b), det_mul(det_sub(1.0, hp.dampening), g));
        g = hp.nesterov ? det_mad(hp.momentum, b, g) : b;
    }
    return det_sub(w, det_mul(lr, g));
}

// update is one element's step: weight w, gradient g and, with a momentum,
// its buffer b (updated); it returns the new weight.
float update(float w, float g, inout float b, bool first) {
    if (DETERMINISTIC) return det_update(w, g, b, first);
    g = g + hp.weight_decay * w;
    if (hp.momentum != 0.0) {
        b = first ? g : hp.momentum * b + (1.0 - hp.dampening) * g;
        g = hp.nesterov ? g + hp.momentum * b : b;
    }
    return w - lr * g;
}

void main() {
    lr = LR_DEV ? lr_dev[0] : p.lr;
    hp = Hyper(p.momentum, p.dampening, p.weight_decay, p.nesterov != 0u);
    read_inv();
    bool first = steps[0] == 0u;
    bool mom = p.momentum != 0.0; // else m1 is absent
    FOR_EACH_QUAD(p.nchunks, {
        vec4 w = LOAD4(param, ip);
        vec4 g = unscaled4(LOAD4(grad, ig));
        vec4 b = vec4(0.0);
        if (mom) b = LOAD4(m1, im);
        w.x = update(w.x, g.x, b.x, first);
        w.y = update(w.y, g.y, b.y, first);
        w.z = update(w.z, g.z, b.z, first);
        w.w = update(w.w, g.w, b.w, first);
        if (mom) STORE4(m1, im, b);
        STORE4(param, ip, w);
    }, {
        float b = 0.0;
        if (mom) b = WORD(m1, im);
        float w = update(WORD(param, ip), unscaled(WORD(grad, ig)), b, first);
        if (mom) WORD(m1, im) = b;
        WORD(param, ip) = w;
    })
}

#endif
