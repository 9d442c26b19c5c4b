#version 450
// scale_update is PyTorch's _amp_update_scale_ on the scaler state, run by a
// single invocation so no step waits for the host: on overflow back off and
// reset the tracker; otherwise grow when tracker+1 equals the interval
// (equality), never to a non-finite scale (the tracker still resets).
// Beyond PyTorch: an optional floor and cap. It also recomputes inv_scale and
// clears the combined found_inf for the next iteration, and counts the
// overflows (skipped iterations) in state[4].
//
// The arithmetic is PyTorch's bit for bit on every driver, in integer code:
// PyTorch multiplies the float scale by a double factor in double and rounds
// the product to float (two roundings, both to nearest even), and keeps
// subnormal scales, which some drivers (SwiftShader) flush to 0 in float
// arithmetic. The factors come as their 53-bit significands and exponents.
layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;

layout(push_constant) uniform Push {
    uint growth_hi;  // growth factor = (growth_hi * 2^32 + growth_lo) * 2^growth_exp
    uint growth_lo;
    int growth_exp;
    uint backoff_hi; // backoff factor, likewise
    uint backoff_lo;
    int backoff_exp;
    int interval;
    float min_scale; // 0: none
    float max_scale; // 0: none
} p;
layout(set = 0, binding = 0) buffer State { uint state[]; };

const uint EXP_MASK = 0x7F800000u;
const uint INF_BITS = 0x7F800000u;

bool finite_bits(uint b) { return (b & EXP_MASK) != EXP_MASK; }

// Numbers of up to 96 bits are uvec3 words, least significant first.

int bitlen(uvec3 v) {
    if (v.z != 0u) return 65 + findMSB(v.z);
    if (v.y != 0u) return 33 + findMSB(v.y);
    return v.x != 0u ? 1 + findMSB(v.x) : 0;
}

uint bit_at(uvec3 v, int i) {
    if (i < 0 || i >= 96) return 0u;
    return (v[i >> 5] >> uint(i & 31)) & 1u;
}

// any_below reports whether a bit below position i is set.
bool any_below(uvec3 v, int i) {
    for (int w = 0; w < 3; w++) {
        int lo = 32 * w;
        if (i <= lo) break;
        uint m = i - lo >= 32 ? 0xFFFFFFFFu : (1u << uint(i - lo)) - 1u;
        if ((v[w] & m) != 0u) return true;
    }
    return false;
}

uvec3 shr(uvec3 v, int d) {
    if (d >= 96) return uvec3(0u);
    for (; d >= 32; d -= 32) v = uvec3(v.y, v.z, 0u);
    if (d == 0) return v;
    uint u = uint(d), l = 32u - u;
    return uvec3((v.x >> u) | (v.y << l), (v.y >> u) | (v.z << l), v.z >> u);
}

uvec3 inc(uvec3 v) {
    uint c0, c1;
    v.x = uaddCarry(v.x, 1u, c0);
    v.y = uaddCarry(v.y, c0, c1);
    v.z += c1;
    return v;
}

// round_shr is v / 2^d rounded to nearest, ties to even (d >= 0).
uvec3 round_shr(uvec3 v, int d) {
    if (d <= 0) return v;
    uvec3 q = shr(v, d);
    bool round_bit = bit_at(v, d - 1) != 0u;
    if (round_bit && (any_below(v, d - 1) || (q.x & 1u) != 0u)) q = inc(q);
    return q;
}

// to_float returns the float bits of v * 2^ex rounded to nearest even:
// normal (24 bits), subnormal (to a multiple of 2^-149), or inf. v needs at
// least 26 significant bits, so that a normal result has a round bit and a
// sticky bit below it.
uint to_float(uvec3 v, int ex) {
    int n = bitlen(v);
    int top = ex + n - 1; // exponent of the leading bit
    if (top >= 128) return INF_BITS;
    if (top >= -126) {
        uvec3 q = round_shr(v, n - 24);
        // q holds 24 bits (or 2^24 after a carry, which the exponent field
        // absorbs); the implicit bit adds one to the biased exponent.
        uint bits = uint(top + 126) * 0x800000u + q.x;
        return (bits & EXP_MASK) == EXP_MASK ? INF_BITS : bits;
    }
    return round_shr(v, -149 - ex).x; // at most 2^23: the smallest normal after a carry
}

// unpack returns the significand and exponent of a positive finite float:
// s = m * 2^e, with m's leading bit at 23 (subnormals normalised).
uint unpack(uint sb, out int e) {
    uint m = sb & 0x7FFFFFu;
    if ((sb & EXP_MASK) != 0u) {
        e = int(sb >> 23) - 150;
        return m | 0x800000u;
    }
    int shift = 23 - findMSB(m);
    e = -149 - shift;
    return m << uint(shift);
}

// mul_factor returns the float bits of float(double(s) * f) for a positive
// float s (bits sb, maybe subnormal or 0) and a positive factor
// f = (hi * 2^32 + lo) * 2^e with a 53-bit significand, as C rounds it. The
// host keeps f where the double product can neither overflow nor be
// subnormal.
uint mul_factor(uint sb, uint hi, uint lo, int e) {
    if (sb == 0u) return 0u;
    int es;
    uint ms = unpack(sb, es);
    // The exact product, ms * f < 2^77.
    uint h0, l0, h1, l1, c;
    umulExtended(ms, lo, h0, l0);
    umulExtended(ms, hi, h1, l1);
    uvec3 prod = uvec3(l0, 0u, 0u);
    prod.y = uaddCarry(h0, l1, c);
    prod.z = h1 + c;
    // First rounding, to a double's 53 bits (prod has 76 or 77), then the
    // second, to float.
    int drop = bitlen(prod) - 53;
    return to_float(round_shr(prod, drop), es + e + drop);
}

// reciprocal returns the float bits of float(1 / double(s)) for a positive
// float s. That is 1/s correctly rounded (the double step cannot land on a
// float tie: s times a 25-bit midpoint is a 48-bit number, never within
// 2^-53 of 1), computed by long division, since drivers' division is
// neither exact nor kind to subnormals.
uint reciprocal(uint sb) {
    if (sb == 0u) return INF_BITS;
    if (!finite_bits(sb)) return 0u;
    int es;
    uint ms = unpack(sb, es);
    // q = floor(2^48 / ms), 25 or 26 bits, and whether a remainder is left.
    uint q = 0u, r = 0x800000u;
    for (int i = 0; i < 26; i++) {
        q <<= 1;
        if (r >= ms) {
            q |= 1u;
            r -= ms;
        }
        r <<= 1;
    }
    // 1/s = (2^48 / ms) * 2^(-48 - es); the remainder is a sticky bit below q.
    return to_float(uvec3((q << 1) | uint(r != 0u), 0u, 0u), -49 - es);
}

void main() {
    uint s = state[0];
    int tracker = int(state[2]);
    if (uintBitsToFloat(state[3]) != 0.0) {
        state[4] += 1u; // overflows so far
        s = mul_factor(s, p.backoff_hi, p.backoff_lo, p.backoff_exp);
        // Positive floats order as their bits.
        if (p.min_scale > 0.0 && s < floatBitsToUint(p.min_scale)) s = floatBitsToUint(p.min_scale);
        tracker = 0;
    } else {
        int successful = tracker + 1;
        if (successful == p.interval) {
            uint grown = mul_factor(s, p.growth_hi, p.growth_lo, p.growth_exp);
            if (p.max_scale > 0.0 && grown > floatBitsToUint(p.max_scale)) grown = floatBitsToUint(p.max_scale);
            if (finite_bits(grown)) s = grown;
            tracker = 0;
        } else {
            tracker = successful;
        }
    }
    state[0] = s;
    state[1] = reciprocal(s);
    state[2] = uint(tracker);
    state[3] = 0u;
}
