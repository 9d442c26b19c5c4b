#version 450
// cast_tex converts n elements between fp32 and fp16 or bf16 in the texel
// form for CPU drivers (texels.glsl), with the same integer conversions as
// cast_f32_f16, cast_f16_f32 and cast: these conversions are exact through
// fp32 bit patterns.
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#define TEXELS
#define OP(a) (a)
#include "unary.glsl"
