/* This machine's OpenBLAS sgemm throughput, the ceiling the benchmark
 * figures are compared with. Prints:
 *
 *   corename NAME
 *   config TEXT
 *   sgemm_peak THREADS GFLOPS
 *   fma_peak BITS GFLOPS
 *
 * sgemm_peak for 1 and 2 threads (or the thread counts given as
 * arguments), each the best of several C = A * B products of N x N matrices
 * (N = 1024, or --size N). OPENBLAS_CORETYPE in the environment pins the
 * kernel OpenBLAS picks; corename reports the one in use. fma_peak (x86-64,
 * one thread, for 256-bit vectors where the processor has FMA and 512-bit
 * ones where it has AVX-512): the best of 5 runs of a loop of 12 independent
 * chains of vector FMAs, the float32 rate the core's FMA units reach at all.
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double gflops(int threads, int n, const float *a, const float *b, float *c) {
    openblas_set_num_threads(threads);
    double flops = 2.0 * n * n * (double)n;
    double best = 0.0;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                n); /* warm-up: threads started, pages touched */
    for (int r = 0; r < 7; ++r) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f,
                    c, n);
        double g = flops / (now_s() - t0) / 1e9;
        if (g > best) best = g;
    }
    return best;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define FMA_ROUNDS 20000000L

__attribute__((target("avx2,fma"))) static float fma_chains_256(void) {
    __m256 acc[12];
    const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps((float)i);
    for (long k = 0; k < FMA_ROUNDS; ++k)
        for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], x, y);
    float out[8], total = 0.0f;
    for (int i = 0; i < 12; ++i) {
        _mm256_storeu_ps(out, acc[i]);
        total += out[0];
    }
    return total;
}

__attribute__((target("avx512f"))) static float fma_chains_512(void) {
    __m512 acc[12];
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps((float)i);
    for (long k = 0; k < FMA_ROUNDS; ++k)
        for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], x, y);
    float total = 0.0f;
    for (int i = 0; i < 12; ++i) total += _mm512_reduce_add_ps(acc[i]);
    return total;
}

/* GFLOP/s of fma_chains_BITS: 12 chains x 2 flops x BITS / 32 lanes a round. */
static double fma_peak(int bits) {
    double best = 0.0;
    volatile float sink = 0.0f;
    for (int r = 0; r < 5; ++r) {
        double t0 = now_s();
        sink = bits == 512 ? fma_chains_512() : fma_chains_256();
        double g = FMA_ROUNDS * 12.0 * 2.0 * (bits / 32) / (now_s() - t0) / 1e9;
        if (g > best) best = g;
    }
    (void)sink;
    return best;
}
#endif

int main(int argc, char **argv) {
    int n = 1024;
    int threads[8];
    int n_threads = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) n = atoi(argv[++i]);
        else if (n_threads < 8 && atoi(argv[i]) > 0) threads[n_threads++] = atoi(argv[i]);
    }
    if (n < 1) n = 1024;
    if (n_threads == 0) {
        threads[0] = 1;
        threads[1] = 2;
        n_threads = 2;
    }
    size_t count = (size_t)n * (size_t)n;
    float *a = malloc(sizeof(float) * count);
    float *b = malloc(sizeof(float) * count);
    float *c = malloc(sizeof(float) * count);
    if (!a || !b || !c) {
        fprintf(stderr, "sgemm_peak: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < count; ++i) {
        a[i] = (float)(i % 17) / 17.0f;
        b[i] = (float)(i % 13) / 13.0f;
    }
    printf("corename %s\n", openblas_get_corename());
    printf("config %s\n", openblas_get_config());
    for (int i = 0; i < n_threads; ++i)
        printf("sgemm_peak %d %.2f\n", threads[i], gflops(threads[i], n, a, b, c));
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        printf("fma_peak 256 %.2f\n", fma_peak(256));
    if (__builtin_cpu_supports("avx512f")) printf("fma_peak 512 %.2f\n", fma_peak(512));
#endif
    free(a);
    free(b);
    free(c);
    return 0;
}
