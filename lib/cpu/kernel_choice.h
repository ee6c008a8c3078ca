// Which CPU kernels the ops take. SNN_CPU_KERNELS=reference in the
// environment selects the reference paths (no_conv512: the fast paths but
// the AVX-512 direct convolutions; avx2: the fast paths of a processor
// without AVX-512, its products' micro-kernels included, read on every
// product, see cpu_kernel_features()) (cpu_reference_kernels() in
// cpu/cpu_backend.h); a program that links snn statically (the kernel tests,
// the fuzzer) may choose instead, for the whole process, to run one model on
// each in turn. Convolutions read the choice when a cache is made, pooling
// and products on every call: change it between passes, on one thread.
#pragma once

#include <stdint.h>

namespace snn {

enum class CpuKernels : int32_t {
    environment,   // SNN_CPU_KERNELS decides (the library's only mode)
    fast,          // the fast paths
    reference,     // the reference paths
    fast_gemm512,  // the fast paths, the convolutions' products by gemm512 on
                   // any processor with AVX-512 (as where OpenBLAS lacks it;
                   // the AVX-512 direct convolutions are ruled out)
    fast_no_conv512,  // the fast paths but the AVX-512 direct convolutions
                      // (SNN_CPU_KERNELS=no_conv512): what a processor
                      // without AVX-512 runs
};
void cpu_choose_kernels(CpuKernels kernels);

// True when the choice is CpuKernels::fast_gemm512.
bool cpu_gemm512_forced();

// True when the AVX-512 direct convolutions (cpu/conv_avx512.h) are ruled
// out: CpuKernels::fast_gemm512 or fast_no_conv512, or SNN_CPU_KERNELS set
// to no_conv512 (or reference).
bool cpu_conv512_ruled_out();

}  // namespace snn
