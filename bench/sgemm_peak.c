/* This machine's OpenBLAS sgemm throughput, the ceiling the benchmark
 * figures are compared with. Prints:
 *
 *   corename NAME
 *   config TEXT
 *   sgemm_peak THREADS GFLOPS
 *
 * for 1 and 2 threads (or the thread counts given as arguments), each the
 * best of several C = A * B products of N x N matrices (N = 1024, or
 * --size N). OPENBLAS_CORETYPE in the environment pins the kernel OpenBLAS
 * picks; corename reports the one in use.
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
    free(a);
    free(b);
    free(c);
    return 0;
}
