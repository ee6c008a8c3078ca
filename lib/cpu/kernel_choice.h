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
                   // the AVX-512 and AVX2 direct convolutions are ruled out)
    fast_no_conv512,  // the fast paths but the AVX-512 direct convolutions
                      // (SNN_CPU_KERNELS=no_conv512): what a processor
                      // without AVX-512 runs
};
void cpu_choose_kernels(CpuKernels kernels);

// bf16 precision is a request for speed: the convolutions (cpu/conv.cpp)
// and the products (cpu/product_paths.cpp) whose shapes run faster in
// float32 take float32's kernels at bf16 too (exact float32). On by
// default; a program that links snn statically (the kernel tests) may turn
// the rules off for the whole process, to run every product at bf16 on the
// bf16 kernels. Convolutions read it when a cache is made, products on
// every call: change it between caches, on one thread.
void cpu_bf16_rules(bool apply);
bool cpu_bf16_rules_apply();

// True when the choice is CpuKernels::fast_gemm512.
bool cpu_gemm512_forced();

// True when the AVX-512 direct convolutions (cpu/conv_avx512.h) are ruled
// out: CpuKernels::fast_gemm512 or fast_no_conv512, or SNN_CPU_KERNELS set
// to no_conv512 (or reference).
bool cpu_conv512_ruled_out();

// The instruction-set cap (in the spirit of oneDNN's ONEDNN_MAX_CPU_ISA):
// snn's kernels run as on a processor with no more than the level named, so
// a processor with AVX-512 measures what AVX2-only ones run. Levels, in
// order: portable (no SIMD kernels of snn's own: the portable micro-kernels
// and plain loops), avx2 (AVX2 and FMA), avx512 (AVX-512 F and BW, no BF16),
// avx512_bf16 (all; the default). The cap only lowers: above what the
// processor has, the processor's features rule. SNN_CPU_ISA in the
// environment names it, read once at first use (an unknown name is no cap);
// SNN_CPU_KERNELS=avx2 (read on every call) is the cap avx2. Every kernel
// table asks cpu_kernel_features() (cpu/cpu_backend.h), which applies it.
// The loops multiversioned by the compiler (cpu/multiversion.h) are chosen
// by the dynamic loader before any setting is read, and the cap does not
// reach them; nor does it reach OpenBLAS, which picks its kernels when it
// loads (OPENBLAS_CORETYPE).
enum class CpuIsa : int32_t { portable, avx2, avx512, avx512_bf16 };

// Parses a level's name; false (and *isa untouched) for any other text.
bool cpu_isa_from_name(const char *name, CpuIsa *isa);

// The cap asked for (not lowered to what the processor has).
CpuIsa cpu_isa_cap();

// The cap for the whole process instead of SNN_CPU_ISA, until
// cpu_cap_isa_from_environment() (snn_set_cpu_isa in the C API). Change it
// between passes, on one thread.
void cpu_cap_isa(CpuIsa isa);
void cpu_cap_isa_from_environment();

// The level in force, the cap and the processor together: "avx512_bf16",
// "avx512", "avx2", "portable", or "neon" on aarch64 without a cap.
const char *cpu_isa_in_force();

}  // namespace snn
