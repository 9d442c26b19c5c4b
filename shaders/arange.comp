#version 450
// arange: d[i] = start + i*step for i in [0, n), in dtype OUT_DT. For Int32
// start and step are int32 and the arithmetic is integer (the runtime
// checks that no element overflows); for a floating dtype they are fp32,
// i*step and the add are each rounded once in fp32 (precise: no fma, which
// lavapipe would contract them into, SwiftShader not), and the sum is
// rounded once to OUT_DT. Each invocation makes two consecutive elements,
// so a 16-bit output word has one writer.
#include "common.glsl"
#include "dtype.glsl"
#include "det.glsl"

layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint start; uint step; } p; // start, step: int32 or fp32 bits
layout(set = 0, binding = 0) writeonly buffer D { uint d[]; };

uint elem(uint i) {
    if (OUT_DT == DT_I32) return p.start + i * p.step; // two's complement: signed too
    float s = uintBitsToFloat(p.start), st = uintBitsToFloat(p.step);
    float v;
    if (DETERMINISTIC) {
        v = det_mad(float(i), st, s);
    } else {
        precise float m = float(i) * st;
        precise float r = m + s;
        v = r;
    }
    return dt_wide(OUT_DT) ? floatBitsToUint(v) : f32_to_half_flat(v, OUT_DT);
}

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint e = 2u * w;
        bool two = e + 1u < p.n;
        if (dt_wide(OUT_DT)) {
            d[e] = elem(e);
            if (two) d[e + 1u] = elem(e + 1u);
        } else {
            uint hi = two ? elem(e + 1u) : 0u;
            d[w] = elem(e) | (hi << 16);
        }
    }
}
