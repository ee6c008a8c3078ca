// Vectors of 8 floats for the CPU kernels that the compiler does not
// vectorise on its own (GCC's vector extensions: AVX2 in the x86-64-v3
// build, two SSE registers in the baseline one). Use them only inside
// functions marked SNN_MULTIVERSION (cpu/multiversion.h), into which these
// helpers inline.
#pragma once

#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__)
// The helpers always inline, so no vector crosses a call boundary.
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace snn {

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

// Loads and stores through memcpy need no alignment.
__attribute__((always_inline)) inline v8f load8(const float *p) {
    v8f v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}
__attribute__((always_inline)) inline void store8(float *p, v8f v) { __builtin_memcpy(p, &v, sizeof v); }
// x in every lane (lane 0 shuffled to all: one broadcast instruction)
__attribute__((always_inline)) inline v8f splat8(float x) {
    const v8f v = {x};
    return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}
// Pairwise: ((v0 + v4) + (v1 + v5)) + ((v2 + v6) + (v3 + v7))
__attribute__((always_inline)) inline float sum8(v8f v) {
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

}  // namespace snn
