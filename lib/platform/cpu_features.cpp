// CPU feature detection: the compiler's runtime checks on x86-64 (cpuid and
// xgetbv, as libgcc reads them on Linux and Windows alike); Advanced SIMD is
// part of every aarch64 processor.
#include "platform/cpu_features.h"

namespace snn {
namespace {

CpuFeatures detect() {
    CpuFeatures f{};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#elif defined(__aarch64__)
    f.neon = true;
#endif
    return f;
}

}  // namespace

const CpuFeatures &cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

}  // namespace snn
