#version 450
// scale_update is PyTorch's _amp_update_scale_ on the scaler state, run by a
// single invocation so no step waits for the host: on overflow back off and
// reset the tracker; otherwise grow when tracker+1 equals the interval
// (equality), never to a non-finite scale (the tracker still resets).
// Beyond PyTorch: an optional floor and cap. It also recomputes inv_scale and
// clears the combined found_inf for the next iteration, and counts the
// overflows (skipped iterations) in state[4].
layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;

layout(push_constant) uniform Push {
    float growth;
    float backoff;
    int interval;
    float min_scale; // 0: none
    float max_scale; // 0: none
} p;
layout(set = 0, binding = 0) buffer State { uint state[]; };

bool finite(float x) { return (floatBitsToUint(x) & 0x7F800000u) != 0x7F800000u; }

void main() {
    float s = uintBitsToFloat(state[0]);
    int tracker = int(state[2]);
    if (uintBitsToFloat(state[3]) != 0.0) {
        state[4] += 1u; // overflows so far
        s = s * p.backoff;
        if (p.min_scale > 0.0 && s < p.min_scale) s = p.min_scale;
        tracker = 0;
    } else {
        int successful = tracker + 1;
        if (successful == p.interval) {
            float grown = s * p.growth;
            if (p.max_scale > 0.0 && grown > p.max_scale) grown = p.max_scale;
            if (finite(grown)) s = grown;
            tracker = 0;
        } else {
            tracker = successful;
        }
    }
    // The reciprocal, refined once so it is the correctly rounded one that
    // PyTorch gets from float(1/double(scale)) whatever the division's error.
    float inv = 1.0 / s;
    if (finite(inv) && inv != 0.0) inv = fma(inv, fma(-s, inv, 1.0), inv);
    state[0] = floatBitsToUint(s);
    state[1] = floatBitsToUint(inv);
    state[2] = uint(tracker);
    state[3] = 0u;
}
