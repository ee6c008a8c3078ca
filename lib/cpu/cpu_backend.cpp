// CPU backend: memory, copies, gathers, and the sgemm wrappers.
#include "cpu/cpu_backend.h"

#include <cblas.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "common/error.h"
#include "device/devices.h"

namespace snn {

const char *CpuBackend::name() const {
    static const std::string n = std::string("cpu (OpenBLAS ") + openblas_get_corename() + ")";
    return n.c_str();
}

void *CpuBackend::alloc(size_t bytes) {
    void *p = nullptr;
    // 64-byte alignment: a cache line and an AVX-512 vector.
    if (posix_memalign(&p, 64, bytes == 0 ? 64 : bytes) != 0 || p == nullptr)
        fail(SNN_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes", bytes);
    return p;
}

void CpuBackend::release(void *p) noexcept { std::free(p); }

Stream *CpuBackend::create_stream(size_t, bool) {
    Stream *s = new (std::nothrow) Stream();
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

void cpu_set_threads(int32_t n) { openblas_set_num_threads(n); }

// ---- sgemm -----------------------------------------------------------------

// Products below this many multiply-adds cost less in a plain loop than
// OpenBLAS's call and threading overhead.
constexpr int64_t kSmallGemm = 48 * 1024;

void gemm_nt(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
             int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    if (M * N * K > kSmallGemm) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(M), int(N), int(K), 1.0f, A,
                    int(lda), B, int(ldb), accumulate ? 1.0f : 0.0f, C, int(ldc));
        return;
    }
    // Dot products of contiguous rows, eight partial sums so the compiler can
    // keep them in one vector register.
    for (int64_t i = 0; i < M; ++i) {
        const float *a = A + i * lda;
        for (int64_t j = 0; j < N; ++j) {
            const float *b = B + j * ldb;
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t k = 0;
            for (; k + 8 <= K; k += 8)
                for (int u = 0; u < 8; ++u) acc[u] += a[k + u] * b[k + u];
            float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            for (; k < K; ++k) sum += a[k] * b[k];
            C[i * ldc + j] = accumulate ? C[i * ldc + j] + sum : sum;
        }
    }
}

void gemm_tn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
             int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    if (M * N * K > kSmallGemm) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, int(M), int(N), int(K), 1.0f, A,
                    int(lda), B, int(ldb), accumulate ? 1.0f : 0.0f, C, int(ldc));
        return;
    }
    // C[i][:] += A[k][i] * B[k][:], rows of B streamed contiguously.
    for (int64_t i = 0; i < M; ++i) {
        float *c = C + i * ldc;
        if (!accumulate)
            for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            float a = A[k * lda + i];
            const float *b = B + k * ldb;
            for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
    }
}

void gemm_nn(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
             int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    if (M * N * K > kSmallGemm) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(M), int(N), int(K), 1.0f, A,
                    int(lda), B, int(ldb), accumulate ? 1.0f : 0.0f, C, int(ldc));
        return;
    }
    for (int64_t i = 0; i < M; ++i) {
        float *c = C + i * ldc;
        if (!accumulate)
            for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            float a = A[i * lda + k];
            const float *b = B + k * ldb;
            for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
    }
}

}  // namespace snn
