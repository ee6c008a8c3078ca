// CPU backend: memory, copies, gathers, and the kernel choice.
#include "cpu/cpu_backend.h"

#ifdef SNN_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "common/error.h"
#include "cpu/kernel_choice.h"
#include "cpu/sgemm.h"
#include "cpu/thread_pool.h"
#include "device/devices.h"
#include "ops/op.h"
#include "platform/cpu_features.h"
#include "platform/memory.h"

namespace snn {

namespace {

// The processor's features without those above `cap`.
CpuFeatures capped(CpuIsa cap) {
    CpuFeatures f = cpu_features();
    if (cap < CpuIsa::avx512_bf16) f.avx512bf16 = false;
    if (cap < CpuIsa::avx512) f.avx512f = f.avx512bw = false;
    if (cap < CpuIsa::avx2) f.avx2_fma = f.neon = false;
    return f;
}

// SNN_CPU_ISA, read once: the named level, or avx512_bf16 (no cap) when unset
// or unknown.
CpuIsa environment_cap() {
    static const CpuIsa cap = [] {
        CpuIsa isa = CpuIsa::avx512_bf16;
        const char *v = std::getenv("SNN_CPU_ISA");
        if (v != nullptr) cpu_isa_from_name(v, &isa);
        return isa;
    }();
    return cap;
}

constexpr int32_t kIsaFromEnvironment = -1;
std::atomic<int32_t> g_cpu_isa{kIsaFromEnvironment};

}  // namespace

bool cpu_isa_from_name(const char *name, CpuIsa *isa) {
    static const struct {
        const char *name;
        CpuIsa isa;
    } kNames[] = {{"portable", CpuIsa::portable},
                  {"avx2", CpuIsa::avx2},
                  {"avx512", CpuIsa::avx512},
                  {"avx512_bf16", CpuIsa::avx512_bf16}};
    if (name == nullptr) return false;
    for (const auto &n : kNames)
        if (std::strcmp(name, n.name) == 0) {
            *isa = n.isa;
            return true;
        }
    return false;
}

void cpu_cap_isa(CpuIsa isa) { g_cpu_isa.store(int32_t(isa), std::memory_order_relaxed); }
void cpu_cap_isa_from_environment() { g_cpu_isa.store(kIsaFromEnvironment, std::memory_order_relaxed); }

CpuIsa cpu_isa_cap() {
    const int32_t chosen = g_cpu_isa.load(std::memory_order_relaxed);
    CpuIsa cap = chosen == kIsaFromEnvironment ? environment_cap() : CpuIsa(chosen);
    // SNN_CPU_KERNELS=avx2 (read on every call) is the cap avx2.
    const char *v = std::getenv("SNN_CPU_KERNELS");
    if (v != nullptr && std::strcmp(v, "avx2") == 0 && cap > CpuIsa::avx2) cap = CpuIsa::avx2;
    return cap;
}

const CpuFeatures &cpu_kernel_features() {
    static const CpuFeatures levels[] = {capped(CpuIsa::portable), capped(CpuIsa::avx2), capped(CpuIsa::avx512),
                                         capped(CpuIsa::avx512_bf16)};
    return levels[size_t(cpu_isa_cap())];
}

namespace {

const char *isa_name(const CpuFeatures &f) {
    if (f.avx512f && f.avx512bw && f.avx512bf16) return "avx512_bf16";
    if (f.avx512f) return "avx512";
    if (f.avx2_fma) return "avx2";
    if (f.neon) return "neon";
    return "portable";
}

// The backend's name at the level f: "cpu (OpenBLAS Cooperlake, snn kernels
// avx2)", or without OpenBLAS "cpu (snn sgemm avx2, snn kernels avx2)".
std::string describe(const CpuFeatures &f) {
#ifdef SNN_HAVE_OPENBLAS
    return std::string("cpu (OpenBLAS ") + openblas_get_corename() + ", snn kernels " + isa_name(f) + ")";
#else
    return std::string("cpu (snn sgemm ") + sgemm_kernel_name(sgemm_kernel_for(f)) + ", snn kernels " +
           isa_name(f) + ")";
#endif
}

}  // namespace

const char *cpu_isa_in_force() { return isa_name(cpu_kernel_features()); }

const char *CpuBackend::name() const {
    static const std::string names[] = {describe(capped(CpuIsa::portable)), describe(capped(CpuIsa::avx2)),
                                        describe(capped(CpuIsa::avx512)), describe(capped(CpuIsa::avx512_bf16))};
    return names[size_t(cpu_isa_cap())].c_str();
}

void *CpuBackend::alloc(size_t bytes) {
    // 64-byte alignment: a cache line and an AVX-512 vector.
    void *p = platform::aligned_allocate(64, bytes == 0 ? 64 : bytes);
    if (p == nullptr)
        fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
    return p;
}

void CpuBackend::release(void *p) noexcept { platform::aligned_free(p); }

Stream *CpuBackend::create_stream(size_t, bool) {
    Stream *s = new (std::nothrow) CpuStream();
    if (!s) fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory");
    return s;
}

void CpuBackend::destroy_stream(Stream *s) noexcept { delete s; }

void CpuBackend::upload(Stream *, void *dst, const void *src_host, size_t bytes) {
    if (bytes) std::memcpy(dst, src_host, bytes);
}

void CpuBackend::download(Stream *, void *dst_host, const void *src, size_t bytes) {
    if (bytes) std::memcpy(dst_host, src, bytes);
}

void CpuBackend::copy(Stream *, void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
}

void CpuBackend::gather_upload(Stream *, void *dst, const void *src_host, const int64_t *idx,
                               size_t n, size_t row_bytes) {
    auto *d = static_cast<char *>(dst);
    auto *s = static_cast<const char *>(src_host);
    for (size_t i = 0; i < n; ++i) std::memcpy(d + i * row_bytes, s + size_t(idx[i]) * row_bytes, row_bytes);
}

void CpuBackend::gather_device(Stream *st, void *dst, const void *src, const int64_t *idx_host,
                               size_t n, size_t row_bytes) {
    gather_upload(st, dst, src, idx_host, n, row_bytes);
}

void CpuBackend::fill(Stream *, float *dst, float value, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] = value;
}

void CpuBackend::scale(Stream *, float *x, float factor, size_t n) {
    for (size_t i = 0; i < n; ++i) x[i] *= factor;
}

// bf16 runs natively with AVX-512 BF16 (vdpbf16ps) and emulated elsewhere:
// operands rounded to bf16, float32 products, the same values without the
// speed. fp16 is for GPUs.
PrecisionSupport CpuBackend::precision_support(Precision p, const char **why) const {
    const char *reason = nullptr;
    PrecisionSupport support = PrecisionSupport::native;
    if (p == Precision::f16) {
        support = PrecisionSupport::none;
        reason = "the CPU backend has no fp16 (use bf16, or fp16 on a GPU)";
    } else if (p == Precision::bf16 && !cpu_has_bf16()) {
        support = PrecisionSupport::emulated;
        reason = cpu_reference_kernels() ? "SNN_CPU_KERNELS=reference: bf16 is emulated (operands rounded, float32 products)"
                 : cpu_features().avx512bf16
                     ? "the instruction-set cap (SNN_CPU_ISA) rules out AVX-512 BF16: bf16 is emulated (operands rounded, float32 products)"
                     : "the processor lacks AVX-512 BF16: bf16 is emulated (operands rounded, float32 products)";
    }
    if (why) *why = reason;
    return support;
}

void CpuBackend::add(Stream *, float *dst, const float *src, size_t n) {
    parallel_ranges(int64_t(n), kElementGrain, 16, [&](int64_t first, int64_t last) {
        for (int64_t i = first; i < last; ++i) dst[i] += src[i];
    });
}

void CpuBackend::copy2d(Stream *, void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
                        size_t rows) {
    for (size_t r = 0; r < rows; ++r)
        std::memcpy(static_cast<char *>(dst) + r * dst_pitch, static_cast<const char *>(src) + r * src_pitch,
                    row_bytes);
}

// Each op's CPU kernels, defined in its file (lib/cpu/<op>.cpp). The CPU is
// the reference backend and has every op, so the references are strong: an
// op without its cpu_op_<name>, or without the build line of its file, fails
// the link. Generic ops (SNN_GENERIC_OP_LIST) run their descriptor's kernels
// on every backend and have no entry; op_kernels() answers for them.
#define SNN_CPU_OP_DECLARE(name) extern const OpKernels cpu_op_##name;
SNN_OP_LIST(SNN_CPU_OP_DECLARE)
#undef SNN_CPU_OP_DECLARE

const OpKernels *CpuBackend::kernels(OpKind kind) const {
    // A discarded `if constexpr` branch does not reference its symbol.
    static const OpKernels *const table[] = {
#define SNN_CPU_OP_ENTRY(name)                                  \
    []() -> const OpKernels * {                                 \
        if constexpr (op_is_generic(OpKind::name)) return nullptr; \
        else return &cpu_op_##name;                             \
    }(),
        SNN_OP_LIST(SNN_CPU_OP_ENTRY)
#undef SNN_CPU_OP_ENTRY
    };
    const size_t k = size_t(kind);
    return k < sizeof(table) / sizeof(table[0]) ? table[k] : nullptr;
}

bool CpuBackend::all_finite(Stream *, const float *x, size_t n) {
    // x - x is 0 for finite x and NaN for Inf and NaN; sum without branches.
    float acc = 0.0f;
    for (size_t i = 0; i < n; ++i) acc += x[i] - x[i];
    return acc == 0.0f;
}

Backend &cpu_backend() {
    static CpuBackend *backend = new CpuBackend();  // lives for the process
    return *backend;
}

namespace {
std::atomic<int32_t> g_cpu_threads{1};
std::atomic<int32_t> g_cpu_kernels{int32_t(CpuKernels::environment)};
}  // namespace

void cpu_choose_kernels(CpuKernels kernels) { g_cpu_kernels.store(int32_t(kernels), std::memory_order_relaxed); }

std::atomic<bool> g_bf16_rules{true};

void cpu_bf16_rules(bool apply) { g_bf16_rules.store(apply, std::memory_order_relaxed); }
bool cpu_bf16_rules_apply() { return g_bf16_rules.load(std::memory_order_relaxed); }

bool cpu_gemm512_forced() {
    return g_cpu_kernels.load(std::memory_order_relaxed) == int32_t(CpuKernels::fast_gemm512);
}

bool cpu_conv512_ruled_out() {
    switch (CpuKernels(g_cpu_kernels.load(std::memory_order_relaxed))) {
        case CpuKernels::fast: return false;
        case CpuKernels::environment: {
            const char *v = std::getenv("SNN_CPU_KERNELS");
            return v != nullptr && (std::strcmp(v, "no_conv512") == 0 || std::strcmp(v, "reference") == 0);
        }
        default: return true;
    }
}

bool cpu_has_bf16() {
    const CpuFeatures &f = cpu_kernel_features();
    return f.avx512bf16 && f.avx512bw && !cpu_reference_kernels();
}

bool cpu_reference_kernels() {
    switch (CpuKernels(g_cpu_kernels.load(std::memory_order_relaxed))) {
        case CpuKernels::reference: return true;
        case CpuKernels::environment: {
            const char *v = std::getenv("SNN_CPU_KERNELS");
            return v != nullptr && std::strcmp(v, "reference") == 0;
        }
        default: return false;
    }
}

// OpenBLAS runs single-threaded inside each of our workers.
void cpu_set_threads(int32_t n) {
#ifdef SNN_HAVE_OPENBLAS
    openblas_set_num_threads(1);
#endif
    thread_pool_reserve(n);
#ifndef SNN_HAVE_OPENBLAS
    sgemm_reserve_threads(n);
#endif
    g_cpu_threads.store(n, std::memory_order_relaxed);
}

int32_t cpu_threads() { return g_cpu_threads.load(std::memory_order_relaxed); }

}  // namespace snn
