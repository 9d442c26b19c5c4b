// Division by a divisor fixed for the dispatch, by a multiply, an add and a
// shift (Granlund and Montgomery): the host computes the magic numbers
// (tensor/divmagic.go). CPU drivers have no vector integer division and
// divide lane by lane, a scalar division each.
#ifndef VKAMP_DIVMAGIC_GLSL
#define VKAMP_DIVMAGIC_GLSL

// div_by returns n / d for n < 2^31, given d's multiplier m and shift s.
uint div_by(uint n, uint m, uint s) {
    uint hi, lo;
    umulExtended(n, m, hi, lo);
    return (hi + n) >> s;
}

#endif
