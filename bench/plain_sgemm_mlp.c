/* The floor for snn_bench's seed_forward case ("input 100; dense 200 relu;
 * dense 1" at batch 128): the same forward pass written directly as two
 * OpenBLAS sgemm calls and a bias + relu loop, over buffers allocated once.
 * Prints one line as snn_bench does:
 *
 *   seed_forward median_us allocations
 *
 * Threads: SNN_NUM_THREADS (default: OpenBLAS's own choice) is passed to
 * openblas_set_num_threads. Usage: plain_sgemm_mlp [--reps N]
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/core/alloc_counter.h"
#include "bench_util.h"

enum { BATCH = 128, IN = 100, HIDDEN = 200, OUT = 1 };

/* x [BATCH][IN], w1 [HIDDEN][IN], b1 [HIDDEN], w2 [OUT][HIDDEN], b2 [OUT]:
 * h = relu(x w1^T + b1), y = h w2^T + b2, row-major as snn lays them out. */
static void forward(const float *x, const float *w1, const float *b1, const float *w2,
                    const float *b2, float *h, float *y) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BATCH, HIDDEN, IN, 1.0f, x, IN, w1, IN,
                0.0f, h, HIDDEN);
    for (int n = 0; n < BATCH; ++n) {
        float *row = h + (size_t)n * HIDDEN;
        for (int j = 0; j < HIDDEN; ++j) {
            float v = row[j] + b1[j];
            row[j] = v > 0.0f ? v : 0.0f;
        }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, BATCH, OUT, HIDDEN, 1.0f, h, HIDDEN, w2,
                HIDDEN, 0.0f, y, OUT);
    for (int n = 0; n < BATCH; ++n)
        for (int j = 0; j < OUT; ++j) y[(size_t)n * OUT + j] += b2[j];
}

int main(int argc, char **argv) {
    int reps = 2000;
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
    if (reps < 1) reps = 1;
    const char *env = getenv("SNN_NUM_THREADS");
    if (env && atoi(env) > 0) openblas_set_num_threads(atoi(env));

    float *x = malloc(sizeof(float) * BATCH * IN);
    float *w1 = malloc(sizeof(float) * HIDDEN * IN);
    float *b1 = malloc(sizeof(float) * HIDDEN);
    float *w2 = malloc(sizeof(float) * OUT * HIDDEN);
    float *b2 = malloc(sizeof(float) * OUT);
    float *h = malloc(sizeof(float) * BATCH * HIDDEN);
    float *y = malloc(sizeof(float) * BATCH * OUT);
    double *times = malloc(sizeof(double) * (size_t)reps);
    if (!x || !w1 || !b1 || !w2 || !b2 || !h || !y || !times) {
        fprintf(stderr, "plain_sgemm_mlp: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < (size_t)BATCH * IN; ++i)
        x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    for (size_t i = 0; i < (size_t)HIDDEN * IN; ++i) w1[i] = (float)((int)(i % 23) - 11) / 100.0f;
    for (size_t i = 0; i < (size_t)HIDDEN; ++i) b1[i] = 0.0f;
    for (size_t i = 0; i < (size_t)OUT * HIDDEN; ++i) w2[i] = (float)((int)(i % 7) - 3) / 50.0f;
    b2[0] = 0.0f;

    size_t allocations = 0;
    for (int r = -reps / 10 - 3; r < reps; ++r) { /* the first ones warm up */
        if (r == 0) alloc_counter_start();
        double t0 = now_us();
        forward(x, w1, b1, w2, b2, h, y);
        double t1 = now_us();
        if (r >= 0) times[r] = t1 - t0;
    }
    allocations = alloc_counter_stop();
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    printf("seed_forward %.2f %.2f\n", times[reps / 2], (double)allocations / reps);
    free(times);
    free(x);
    free(w1);
    free(b1);
    free(w2);
    free(b2);
    free(h);
    free(y);
    return 0;
}
