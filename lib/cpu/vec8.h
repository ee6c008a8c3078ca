// Vectors of 8 floats for the CPU kernels that the compiler does not
// vectorise on its own (GCC's vector extensions, which clang shares: AVX2 in
// the x86-64-v3 build, two SSE registers in the baseline one). Use them only
// inside functions marked SNN_MULTIVERSION (cpu/multiversion.h).
//
// The helpers are macros, not functions: a function taking or returning a
// 32-byte vector has a different calling convention with and without AVX,
// which clang refuses in the baseline build even when the call is inlined.
#pragma once

#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace snn {

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
// The same vector at any float's alignment, for loads and stores.
typedef float v8f_unaligned __attribute__((vector_size(32), aligned(4), may_alias));

}  // namespace snn

// 8 floats from p (any alignment), and to p
#define SNN_LOAD8(p) (*reinterpret_cast<const ::snn::v8f_unaligned *>(p))
#define SNN_STORE8(p, v) (*reinterpret_cast<::snn::v8f_unaligned *>(p) = (v))
// x in every lane (one broadcast instruction)
#define SNN_SPLAT8(x)                                                     \
    __extension__({                                                       \
        const ::snn::v8f snn_splat_ = {(x)};                              \
        __builtin_shufflevector(snn_splat_, snn_splat_, 0, 0, 0, 0, 0, 0, 0, 0); \
    })
// ((v0 + v4) + (v1 + v5)) + ((v2 + v6) + (v3 + v7))
#define SNN_SUM8(v)                                                                        \
    __extension__({                                                                        \
        const ::snn::v8f snn_sum_ = (v);                                                   \
        ((snn_sum_[0] + snn_sum_[4]) + (snn_sum_[1] + snn_sum_[5])) +                      \
            ((snn_sum_[2] + snn_sum_[6]) + (snn_sum_[3] + snn_sum_[7]));                   \
    })
