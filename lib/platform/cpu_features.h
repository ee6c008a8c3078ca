// What the processor offers snn's kernels, read once per process. Every
// question about instruction sets goes through here, so the kernel tables
// (cpu/product_paths.cpp, cpu/conv_paths.h) never ask the compiler or the
// operating system themselves.
#pragma once

namespace snn {

struct CpuFeatures {
    bool avx2_fma;    // x86-64: AVX2 and FMA3 (8-float vectors, fused multiply-add)
    bool avx512f;     // x86-64: AVX-512 Foundation (16-float vectors)
    bool avx512bw;    // x86-64: AVX-512 Byte and Word
    bool avx512bf16;  // x86-64: AVX-512 BF16 (bf16 dot products)
    bool neon;        // aarch64: Advanced SIMD (4-float vectors, fused multiply-add); always there
};

// The running processor's features (the operating system's support for the
// wider registers included, as the compiler's checks read it).
const CpuFeatures &cpu_features();

}  // namespace snn
