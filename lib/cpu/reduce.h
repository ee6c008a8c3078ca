// Vectorisable sums for the CPU kernels: Lanes interleaved partial sums,
// added pairwise at the end. One serial chain of n additions is bound by the
// adder's latency; Lanes chains fill the vector units. The order depends on
// n alone, so results are deterministic. Inline into a multiversioned
// function (cpu/multiversion.h) to get its vector width.
#pragma once

#include <stdint.h>

namespace snn {

// sum over i in [0, n) of term(i)
template <typename Acc, int Lanes, typename Term>
__attribute__((always_inline)) inline Acc lane_sum(int64_t n, Term term) {
    Acc acc[Lanes] = {};
    int64_t i = 0;
    for (; i + Lanes <= n; i += Lanes)
        for (int l = 0; l < Lanes; ++l) acc[l] += term(i + l);
    for (int l = 0; i + l < n; ++l) acc[l] += term(i + l);
    for (int w = Lanes / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
    return acc[0];
}

// Two sums over the same i at once: *s1 += term1(i), *s2 += term2(i).
template <typename Acc, int Lanes, typename Term1, typename Term2>
__attribute__((always_inline)) inline void lane_sum2(int64_t n, Term1 term1, Term2 term2, Acc *s1, Acc *s2) {
    Acc a[Lanes] = {}, b[Lanes] = {};
    int64_t i = 0;
    for (; i + Lanes <= n; i += Lanes)
        for (int l = 0; l < Lanes; ++l) {
            a[l] += term1(i + l);
            b[l] += term2(i + l);
        }
    for (int l = 0; i + l < n; ++l) {
        a[l] += term1(i + l);
        b[l] += term2(i + l);
    }
    for (int w = Lanes / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) {
            a[l] += a[l + w];
            b[l] += b[l + w];
        }
    *s1 += a[0];
    *s2 += b[0];
}

}  // namespace snn
