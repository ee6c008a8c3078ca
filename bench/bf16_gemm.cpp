// snn's bf16 product (lib/cpu/gemm_bf16.h) against OpenBLAS's cblas_sbgemm
// and the float32 cblas_sgemm, on the products of the resnet and default CNN
// training steps (bench/snn_bench.c's resnet_train_step and
// default_cnn_train_step, batch 64, chunks of 8 images per product), one
// thread. Per shape and routine: GFLOP/s (2 M N K per call, median of the
// repetitions). gemm_bf16 is timed from float32 operands (its conversion and
// packing included), as the layers call it; sbgemm twice, from operands
// already in bf16 and with their conversion (cblas_sbstobf16) included,
// where the OpenBLAS loaded has them: they are looked up at run time, since
// an OpenBLAS built without BUILD_BFLOAT16 (Debian's 0.3.21) declares them in
// cblas.h but lacks them.
// Usage: bf16_gemm [--reps N]
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemm_bf16.h"

namespace {

struct Shape {
    const char *what;
    bool ta, tb;
    int64_t M, N, K;
};

// (cout, K = cin 3 3, P = output pixels): forward W col, backward dW = dz col^T
// and dcol = W^T dz, over chunks of 8 images; then the dense layers.
const Shape kShapes[] = {
    {"resnet conv 16x16 28x28 fwd", false, false, 16, 8 * 784, 144},
    {"resnet conv 16x16 28x28 dW", false, true, 16, 144, 8 * 784},
    {"resnet conv 16x16 28x28 dcol", true, false, 144, 8 * 784, 16},
    {"resnet conv 32x32 14x14 fwd", false, false, 32, 8 * 196, 288},
    {"resnet conv 32x32 14x14 dW", false, true, 32, 288, 8 * 196},
    {"resnet conv 32x32 14x14 dcol", true, false, 288, 8 * 196, 32},
    {"resnet conv 64x64 7x7 fwd", false, false, 64, 8 * 49, 576},
    {"resnet conv 64x64 7x7 dW", false, true, 64, 576, 8 * 49},
    {"resnet conv 64x64 7x7 dcol", true, false, 576, 8 * 49, 64},
    {"cnn conv 1x32 28x28 fwd", false, false, 32, 8 * 784, 9},
    {"cnn conv 32x64 14x14 fwd", false, false, 64, 8 * 196, 288},
    {"cnn conv 32x64 14x14 dW", false, true, 64, 288, 8 * 196},
    {"cnn conv 32x64 14x14 dcol", true, false, 288, 8 * 196, 64},
    {"cnn dense 3136x128 fwd", false, true, 64, 128, 3136},
    {"cnn dense 3136x128 dW", true, false, 128, 3136, 64},
    {"cnn dense 3136x128 dx", false, false, 64, 3136, 128},
};

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

template <typename Fn>
double gflops(const Shape &s, int reps, Fn fn) {
    std::vector<double> t;
    fn();
    for (int r = 0; r < reps; ++r) {
        const double t0 = now_s();
        fn();
        t.push_back(now_s() - t0);
    }
    std::sort(t.begin(), t.end());
    return 2.0 * double(s.M) * double(s.N) * double(s.K) / t[t.size() / 2] * 1e-9;
}

using Sbgemm = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                       const bfloat16 *, blasint, const bfloat16 *, blasint, float, float *, blasint);
using ToBf16 = void (*)(blasint, const float *, blasint, bfloat16 *, blasint);

}  // namespace

int main(int argc, char **argv) {
    int reps = 50;
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    openblas_set_num_threads(1);
    const Sbgemm sbgemm = reinterpret_cast<Sbgemm>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
    const ToBf16 to_bf16 = reinterpret_cast<ToBf16>(dlsym(RTLD_DEFAULT, "cblas_sbstobf16"));
    std::printf("OpenBLAS %s, core %s; cblas_sbgemm: %s; snn's native bf16 (AVX-512 BF16): %s\n",
                openblas_get_config(), openblas_get_corename(), sbgemm && to_bf16 ? "present" : "absent (0 below)",
                snn::cpu_has_bf16() ? "yes" : "no");
    std::printf("%-32s %10s %10s %10s %10s   GFLOP/s, 1 thread\n", "product (M N K)", "sgemm", "gemm_bf16",
                "sbgemm", "sbgemm+cvt");
    for (const Shape &s : kShapes) {
        const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
        const size_t na = size_t(s.M * s.K), nb = size_t(s.K * s.N);
        std::vector<float> A(na), B(nb), C(size_t(s.M * s.N));
        for (size_t i = 0; i < na; ++i) A[i] = float((i * 7919) % 1000) * 1e-3f - 0.5f;
        for (size_t i = 0; i < nb; ++i) B[i] = float((i * 104729) % 1000) * 1e-3f - 0.5f;
        std::vector<bfloat16> A16(na), B16(nb);
        std::vector<unsigned char> work(snn::gemm_bf16_bytes(s.M, s.N, s.K));
        const CBLAS_TRANSPOSE ta = s.ta ? CblasTrans : CblasNoTrans, tb = s.tb ? CblasTrans : CblasNoTrans;
        const double f32 = gflops(s, reps, [&] {
            cblas_sgemm(CblasRowMajor, ta, tb, int(s.M), int(s.N), int(s.K), 1.0f, A.data(), int(lda), B.data(),
                        int(ldb), 0.0f, C.data(), int(s.N));
        });
        const double ours = gflops(s, reps, [&] {
            snn::gemm_bf16(s.ta, s.tb, s.M, s.N, s.K, A.data(), lda, B.data(), ldb, C.data(), s.N, false,
                           work.data());
        });
        double sb = 0.0, sb_cvt = 0.0;
        if (sbgemm && to_bf16) {
            to_bf16(blasint(na), A.data(), 1, A16.data(), 1);
            to_bf16(blasint(nb), B.data(), 1, B16.data(), 1);
            sb = gflops(s, reps, [&] {
                sbgemm(CblasRowMajor, ta, tb, blasint(s.M), blasint(s.N), blasint(s.K), 1.0f, A16.data(),
                       blasint(lda), B16.data(), blasint(ldb), 0.0f, C.data(), blasint(s.N));
            });
            sb_cvt = gflops(s, reps, [&] {
                to_bf16(blasint(na), A.data(), 1, A16.data(), 1);
                to_bf16(blasint(nb), B.data(), 1, B16.data(), 1);
                sbgemm(CblasRowMajor, ta, tb, blasint(s.M), blasint(s.N), blasint(s.K), 1.0f, A16.data(),
                       blasint(lda), B16.data(), blasint(ldb), 0.0f, C.data(), blasint(s.N));
            });
        }
        char name[96];
        std::snprintf(name, sizeof name, "%s (%lld %lld %lld)", s.what, (long long)s.M, (long long)s.N,
                      (long long)s.K);
        std::printf("%-44s %8.1f %10.1f %10.1f %10.1f\n", name, f32, ours, sb, sb_cvt);
    }
    return 0;
}
