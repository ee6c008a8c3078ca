/* snn's GPU benchmark cases. One line per case:
 *
 *   name median_us min_us steps_per_round
 *
 * median_us: median over rounds of the time of one call (a forward pass, or
 * a whole training step: forward, backprop and Adam update), each round
 * being steps_per_round calls in a row followed by one device
 * synchronisation, divided by steps_per_round. That is throughput, as a
 * training loop sees it: the GPU's queue never runs dry between calls. The
 * data stay on the GPU: inputs and labels are uploaded once, before the
 * timing. bench/torch_gpu.py is the PyTorch twin (same networks, batches,
 * losses, optimiser and timing).
 *
 * Usage: gpu_bench [case ...] [--rounds N] [--precision float32|bf16|fp16]
 *                  [--device N] [--loss-readback] [--profile N]
 * --loss-readback asks snn_backprop for the loss value at every step (a
 * device-to-host copy and a wait), as a loop that prints its loss does.
 * --profile N runs 3 calls, then N calls between cudaProfilerStart and
 * cudaProfilerStop, and prints nothing: for a profiler that starts off
 * (ncu --profile-from-start off), so that it sees steady-state calls only.
 * Exits 77 when no GPU can be used, printing why.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models.h"
#include "snn.h"
#include "bench_util.h"


typedef struct {
    const char *name;
    const char *spec;
    int64_t batch;
    int train; /* 0: forward only */
    int tf32;  /* 1: TF32 products allowed (snn_set_allow_tf32) */
} gpu_case;

#define SIMPLENNS_CNN \
    "input 28x28x1; conv 5x5 16 relu; maxpool 2; conv 3x3 8 relu; maxpool 4; flatten; dense 10"
#define BIG_MLP "input 1024; dense 4096 relu; dense 4096 relu; dense 10"

static const gpu_case cases[] = {
    {"seed_forward_128", "input 100; dense 200 relu; dense 1", 128, 0, 0},
    {"mlp_train_64", "input 784; dense 128 relu; dense 64 relu; dense 10", 64, 1, 0},
    {"cnn_train_64", SIMPLENNS_CNN, 64, 1, 0},
    {"default_cnn_train_64", FASHION_MNIST_DEFAULT_SPEC, 64, 1, 0},
    {"default_cnn_train_512", FASHION_MNIST_DEFAULT_SPEC, 512, 1, 0},
    {"default_cnn_forward_64", FASHION_MNIST_DEFAULT_SPEC, 64, 0, 0},
    {"big_mlp_tf32_train_1024", BIG_MLP, 1024, 1, 1},
    {"resnet_train_64", FASHION_MNIST_RESNET_SPEC, 64, 1, 0},
    {"resnet_train_512", FASHION_MNIST_RESNET_SPEC, 512, 1, 0},
};

static void sync_device(void) {
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaDeviceSynchronize: %s\n", cudaGetErrorString(e));
        exit(1);
    }
}

/* One call of a case: a forward pass, or a training step. */
typedef struct {
    const gpu_case *c;
    snn_model *m;
    snn_forward_cache *f;
    snn_backward_cache *b;
    snn_optimiser *o;
    snn_loss loss;
    float *loss_value; /* NULL: no readback */
} step_args;

static void run_steps(const step_args *a, int steps) {
    for (int k = 0; k < steps; ++k) {
        CHECK(snn_forward(a->f, a->m));
        if (a->c->train) {
            CHECK(snn_backprop(a->b, a->f, a->m, a->loss, a->loss_value));
            CHECK(snn_optimiser_step(a->o, a->m, a->b));
        }
    }
}

/* Microseconds per call of `steps` calls between two synchronisations. */
static double timed_steps(const step_args *a, int steps) {
    sync_device();
    const double t0 = now_us();
    run_steps(a, steps);
    sync_device();
    return (now_us() - t0) / steps;
}

static void run(const gpu_case *c, int device, int rounds, snn_precision precision,
                int loss_readback, int profile) {
    snn_model *m = NULL;
    snn_forward_cache *f = NULL;
    snn_backward_cache *b = NULL;
    snn_optimiser *o = NULL;
    size_t in = 0, out = 0;
    CHECK(snn_set_allow_tf32(c->tf32));
    CHECK(snn_model_create(c->spec, &m));
    CHECK(snn_to_gpu(m, device));
    CHECK(snn_model_input_size(m, &in));
    CHECK(snn_model_output_size(m, &out));
    CHECK(snn_preallocate(m, c->batch, &f));
    if (precision != SNN_PRECISION_FLOAT32) {
        snn_status s = snn_cache_set_precision(f, precision);
        if (s != SNN_OK) {
            printf("%s - - - (%s)\n", c->name, snn_last_error());
            snn_forward_cache_destroy(f);
            snn_model_destroy(m);
            return;
        }
    }
    float *x = malloc(sizeof(float) * in * (size_t)c->batch);
    int32_t *labels = malloc(sizeof(int32_t) * (size_t)c->batch);
    for (size_t i = 0; i < in * (size_t)c->batch; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    for (int64_t i = 0; i < c->batch; ++i) labels[i] = (int32_t)(i % (int64_t)out);
    CHECK(snn_set_inputs(f, x, in * (size_t)c->batch));
    const snn_loss loss = out == 1 ? SNN_LOSS_MSE : SNN_LOSS_LOGIT_CROSSENTROPY;
    if (c->train) {
        CHECK(snn_preallocate_grads(m, c->batch, &b));
        CHECK(snn_optimiser_create(m, SNN_OPTIMISER_ADAM, &o));
        CHECK(snn_set_labels(b, labels, (size_t)c->batch));
    }
    float loss_value = 0.0f;
    const step_args sa = {c, m, f, b, o, loss, loss_readback ? &loss_value : NULL};
    if (profile > 0) {
        run_steps(&sa, 3);
        sync_device();
        cudaProfilerStart();
        run_steps(&sa, profile);
        sync_device();
        cudaProfilerStop();
        rounds = 0;
    }
    /* Rounds of about 20 ms: steps_per_round from a first timed round. */
    int steps = 10;
    for (int pass = 0; pass < 2 && rounds > 0; ++pass) {
        const double per = timed_steps(&sa, steps);
        if (pass == 1) {
            steps = (int)(20000.0 / (per > 1.0 ? per : 1.0));
            if (steps < 5) steps = 5;
            if (steps > 400) steps = 400;
        }
    }
    double *times = malloc(sizeof(double) * (size_t)(rounds > 0 ? rounds : 1));
    for (int r = 0; r < rounds; ++r) times[r] = timed_steps(&sa, steps);
    qsort(times, (size_t)rounds, sizeof(double), cmp_double);
    if (rounds > 0) printf("%s %.1f %.1f %d\n", c->name, times[rounds / 2], times[0], steps);
    fflush(stdout);
    free(times);
    free(x);
    free(labels);
    snn_optimiser_destroy(o);
    snn_backward_cache_destroy(b);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
    CHECK(snn_set_allow_tf32(0));
}

int main(int argc, char **argv) {
    int rounds = 15, device = 0, loss_readback = 0, profile = 0;
    snn_precision precision = SNN_PRECISION_FLOAT32;
    const char *only[16];
    int n_only = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) device = atoi(argv[++i]);
        else if (strcmp(argv[i], "--loss-readback") == 0) loss_readback = 1;
        else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc) profile = atoi(argv[++i]);
        else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc) {
            const char *p = argv[++i];
            if (strcmp(p, "float32") == 0) precision = SNN_PRECISION_FLOAT32;
            else if (strcmp(p, "bf16") == 0) precision = SNN_PRECISION_BF16;
            else if (strcmp(p, "fp16") == 0) precision = SNN_PRECISION_FP16;
            else {
                fprintf(stderr, "--precision must be float32, bf16 or fp16, not %s\n", p);
                return 2;
            }
        } else if (n_only < 16) only[n_only++] = argv[i];
    }
    if (rounds < 1) {
        fprintf(stderr, "--rounds must be at least 1\n");
        return 2;
    }
    if (snn_gpu_status(device) != SNN_OK) {
        printf("no GPU %d: %s\n", device, snn_last_error());
        return 77;
    }
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        const gpu_case *c = &cases[k];
        int wanted = n_only == 0;
        for (int i = 0; i < n_only; ++i) wanted |= strcmp(only[i], c->name) == 0;
        if (wanted) run(c, device, rounds, precision, loss_readback, profile);
    }
    return 0;
}
