#version 450
// det_math applies one function elementwise, for the tests that check the
// deterministic mode's arithmetic against Go: op 0 is a / b, 1 sqrt(a),
// 2 exp(a), 3 ln(a), 4 a * b + c unfused. On the deterministic path they
// are det.glsl's; otherwise the driver's.
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
    }
    return DETERMINISTIC ? det_mad(x, y, z) : x * y + z;
}

void main() {
    GRID_STRIDE(i, p.n) { d[i] = apply(a[i], b[i], c[i]); }
}
