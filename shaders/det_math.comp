#version 450
// det_math applies one function elementwise, for the tests that check the
// deterministic mode's arithmetic against Go: op 0 is a / b, 1 sqrt(a),
// 2 exp(a), 3 ln(a), 4 a * b + c unfused, 5 tanh(a), 6 sigmoid(a),
// 7 1/sqrt(a), 8 erf(a), 9 a^b. On the deterministic path they are
// det.glsl's; otherwise the driver's (erf, which GLSL lacks, det.glsl's).
#include "common.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint n; uint op; } p;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) readonly buffer C { float c[]; };
layout(set = 0, binding = 3) writeonly buffer D { float d[]; };

float apply(float x, float y, float z) {
    switch (p.op) {
    case 0u: return DETERMINISTIC ? det_div(x, y) : x / y;
    case 1u: return DETERMINISTIC ? det_sqrt(x) : sqrt(x);
    case 2u: return DETERMINISTIC ? det_exp(x) : exp(x);
    case 3u: return DETERMINISTIC ? det_log(x) : log(x);
    case 5u: return DETERMINISTIC ? det_tanh(x) : tanh(x);
    case 6u: return DETERMINISTIC ? det_sigmoid(x) : 1.0 / (1.0 + exp(-x));
    case 7u: return DETERMINISTIC ? det_rsqrt(x) : inversesqrt(x);
    case 8u: return det_erf(x);
    case 9u: return DETERMINISTIC ? det_pow(x, y) : pow(x, y);
    }
    return DETERMINISTIC ? det_mad(x, y, z) : x * y + z;
}

void main() {
    GRID_STRIDE(i, p.n) { d[i] = apply(a[i], b[i], c[i]); }
}
