// The convolution's paths on the CPU: one ordered table (kConvPaths in
// cpu/conv.cpp) of which kernels run a layer for its shape, the processor,
// the kernel choice (cpu/kernel_choice.h) and the precision. The table is
// read when a cache's plans are made, and the first eligible row plans and
// runs the layer's passes; the choice is logged then (SNN_LOG_INFO).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ops/op.h"

namespace snn {

// In the table's order.
enum class ConvPath : int32_t {
    bf16_direct,     // bf16, few taps, identity or relu: cpu/conv_direct.h on rounded operands
                     // (only with cpu_bf16_rules off: the rule gives few taps float32)
    bf16_shifted,    // bf16, stride 1, odd kernel, "same" padding: shifted rows read in place
    bf16_im2col,     // bf16: im2col and gemm_bf16 (native or emulated)
    avx512_direct,   // float32, stride 1, AVX-512: cpu/conv_avx512.h
    avx2_direct,     // float32, stride 1, AVX2 and FMA: cpu/conv_avx2.h
    direct,          // float32, stride 1, few taps: cpu/conv_direct.h
    im2col_shifted,  // float32, stride 1, as many output as input columns: shifted copies
    im2col,          // float32: im2col and sgemm
};

// The processor and the kernel choice, read once per plan.
struct ConvProcessor {
    bool reference;         // the reference kernels were asked for (cpu_reference_kernels)
    bool avx512;            // AVX-512 (F), not the reference kernels (gemm512_available)
    bool conv512;           // the AVX-512 direct convolutions are not ruled out (cpu_conv512_ruled_out)
    bool avx2;              // AVX2 and FMA, the AVX2 direct convolutions built (conv_avx2_built), neither
                            // the reference kernels nor the products by gemm512 (cpu_gemm512_forced)
    bool bf16_native;       // AVX-512 BF16, not the reference kernels (cpu_has_bf16)
    bool gemm512_products;  // the lowerings' float32 products by gemm512 (gemm512_preferred)
    bool bf16_rule;         // conv_bf16_takes_f32 applies (cpu_bf16_rules_apply, cpu/kernel_choice.h)
};

// The start of every path's plan.
struct ConvPlanned {
    ConvPath path;
    const char *products;  // the products the plan fixed, for the log, or null
};

struct ConvPathRow {
    ConvPath path;
    const char *name;
    bool (*eligible)(const ConvDims &d, const ConvProcessor &cpu, Precision precision);
    // As OpKernels::plan, for this row's path.
    ConvPlanned *(*plan)(const Layer &l, const ConvProcessor &cpu, ConvPath path, int64_t max_batch, bool backward,
                         size_t *workspace_bytes);
    void (*release)(ConvPlanned *plan) noexcept;
    void (*forward)(const OpArgs &a, const ConvPlanned &plan);
    void (*backward)(const OpArgs &a, const ConvPlanned &plan);
};

// At bf16 precision, whether the layer takes the float32 rows (exact float32)
// because they measured faster than the bf16 ones for its shape (the rule
// and its figures are in cpu/conv.cpp).
bool conv_bf16_takes_f32(const ConvDims &d);

// The row a layer's plan takes at `precision` on the processor, under the
// kernel choice in force, and the row's name (as logged).
ConvPath conv_path_for(const ConvDims &d, Precision precision);
const char *conv_path_name(ConvPath path);

}  // namespace snn
