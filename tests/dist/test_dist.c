/* Tests of libsnn_dist (include/snn_dist.h), run by run_mpi.sh under
 * mpirun. One program, one scenario per first argument:
 *
 *   equivalence   p ranks with batch 64/p each take the same 20 Adam steps as
 *                 one process with batch 64 over the same samples, for an MLP
 *                 and a small CNN; all ranks end bit-identical.
 *   broadcast     ranks initialised with different seeds are identical after
 *                 snn_comm_broadcast_parameters; bad roots and models of
 *                 different sizes are errors that leave the communicator
 *                 usable.
 *   rank-dies     rank 1 exits abruptly at step 5; rank 0's all-reduce
 *                 returns SNN_ERR_IO within its 5 s timeout, and later calls
 *                 SNN_ERR_STATE.
 *   killed-while-saving
 *                 rank 1 saves a model file over and over and is killed
 *                 (SIGKILL) by rank 0 in the middle; the file still loads,
 *                 and holds one of the two parameter sets rank 1 saved.
 *
 * The last two write "ok" to DIR/result on rank 0 when every check passed,
 * since mpirun's exit status is not meaningful once a rank was killed.
 * Usage: test_dist SCENARIO DIR
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snn.h"
#include "snn_dist.h"

static int32_t rank = 0, ranks = 1;

#define FAIL(...)                                             \
    do {                                                      \
        fprintf(stderr, "rank %d: FAIL: ", (int)rank);        \
        fprintf(stderr, __VA_ARGS__);                         \
        fprintf(stderr, " (line %d)\n", __LINE__);            \
        exit(1);                                              \
    } while (0)

#define CHECK(call)                                                                     \
    do {                                                                                \
        snn_status s_ = (call);                                                         \
        if (s_ != SNN_OK) FAIL("%s -> %s: %s / %s", #call, snn_status_string(s_),        \
                               snn_dist_last_error(), snn_last_error());                \
    } while (0)

#define EXPECT_STATUS(call, expected)                                                   \
    do {                                                                                \
        snn_status s_ = (call);                                                         \
        if (s_ != (expected)) FAIL("%s -> %s, expected %s (%s)", #call,                  \
                                   snn_status_string(s_), snn_status_string(expected),   \
                                   snn_dist_last_error());                              \
    } while (0)

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static snn_model *make_model(const char *spec, uint64_t seed) {
    snn_model *model = NULL;
    CHECK(snn_model_create(spec, &model));
    CHECK(snn_model_init(model, seed));
    return model;
}

static float *copy_parameters(const snn_model *model, size_t *count) {
    CHECK(snn_parameter_count(model, count));
    float *p = malloc(*count * sizeof *p);
    if (!p) FAIL("out of memory");
    CHECK(snn_get_parameters(model, p, *count));
    return p;
}

/* A fingerprint of the parameters that differs when any bit differs (in
 * practice): sum of p[i] * (i % 97 + 1) in double. */
static double fingerprint(const snn_model *model) {
    size_t n = 0;
    float *p = copy_parameters(model, &n);
    double f = 0.0;
    for (size_t i = 0; i < n; ++i) f += (double)p[i] * (double)(i % 97 + 1);
    free(p);
    return f;
}

/* 1 when every rank's model has the same fingerprint as rank 0's. */
static int identical_on_all_ranks(snn_comm *comm, const snn_model *model) {
    double mine = fingerprint(model);
    double root[1] = {rank == 0 ? mine : 0.0};
    CHECK(snn_comm_allreduce_sum(comm, root, 1));
    double votes[1] = {root[0] == mine ? 1.0 : 0.0};
    CHECK(snn_comm_allreduce_sum(comm, votes, 1));
    return votes[0] == (double)ranks;
}

/* Deterministic inputs in [-1, 1) and labels, the same on every rank. */
static void make_data(float *x, int32_t *labels, size_t samples, size_t features, int32_t classes) {
    uint64_t s = 12345;
    for (size_t i = 0; i < samples * features; ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
    for (size_t i = 0; i < samples; ++i) labels[i] = (int32_t)((i * 7 + i / 3) % (size_t)classes);
}

/* ------------------------------------------------------------------------ */

enum { GLOBAL_BATCH = 64, STEPS = 20 };

/* Trains `model` STEPS Adam steps. With comm, this rank takes its share of
 * each global batch and the gradients are averaged; without, the whole
 * global batch. */
static void train(snn_model *model, snn_comm *comm, const float *x, const int32_t *labels,
                  size_t samples) {
    int64_t share = comm ? GLOBAL_BATCH / ranks : GLOBAL_BATCH;
    int64_t offset = comm ? (int64_t)rank * share : 0;
    snn_forward_cache *fwd = NULL;
    snn_backward_cache *bwd = NULL;
    snn_optimiser *adam = NULL;
    CHECK(snn_preallocate(model, share, &fwd));
    CHECK(snn_preallocate_grads(model, share, &bwd));
    CHECK(snn_optimiser_create(model, SNN_OPTIMISER_ADAM, &adam));
    CHECK(snn_optimiser_set(adam, SNN_HP_LEARNING_RATE, 0.01));
    if (comm) CHECK(snn_comm_prepare(comm, model));
    int64_t indices[GLOBAL_BATCH];
    for (int step = 0; step < STEPS; ++step) {
        for (int64_t i = 0; i < share; ++i)
            indices[i] = ((int64_t)step * GLOBAL_BATCH + offset + i) % (int64_t)samples;
        CHECK(snn_set_inputs_gather(fwd, x, samples, indices, (size_t)share));
        CHECK(snn_set_labels_gather(bwd, labels, samples, indices, (size_t)share));
        CHECK(snn_forward(fwd, model));
        CHECK(snn_backprop(bwd, fwd, model, SNN_LOSS_LOGIT_CROSSENTROPY, NULL));
        if (comm) CHECK(snn_comm_allreduce_gradients(comm, model, bwd));
        CHECK(snn_optimiser_step(adam, model, bwd));
    }
    snn_optimiser_destroy(adam);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
}

static void check_equivalence(snn_comm *comm, const char *spec) {
    if (GLOBAL_BATCH % ranks) FAIL("the global batch %d does not split over %d ranks", GLOBAL_BATCH, (int)ranks);
    /* Different seeds per rank: the broadcast must make them equal. */
    snn_model *distributed = make_model(spec, 1 + (uint64_t)rank);
    CHECK(snn_comm_broadcast_parameters(comm, distributed, 0));
    snn_model *single = make_model(spec, 1);

    size_t features = 0, outputs = 0, samples = 2 * GLOBAL_BATCH * 5;
    CHECK(snn_model_input_size(single, &features));
    CHECK(snn_model_output_size(single, &outputs));
    float *x = malloc(samples * features * sizeof *x);
    int32_t *labels = malloc(samples * sizeof *labels);
    if (!x || !labels) FAIL("out of memory");
    make_data(x, labels, samples, features, (int32_t)outputs);

    train(distributed, comm, x, labels, samples);
    train(single, NULL, x, labels, samples);

    size_t n = 0;
    float *d = copy_parameters(distributed, &n);
    float *s = copy_parameters(single, &n);
    float *init = NULL;
    snn_model *start = make_model(spec, 1);
    init = copy_parameters(start, &n);
    double worst = 0.0, moved = 0.0;
    for (size_t i = 0; i < n; ++i) {
        double error = fabs((double)d[i] - (double)s[i]) / fmax(fabs((double)s[i]), 1e-2);
        if (error > worst) worst = error;
        moved = fmax(moved, fabs((double)s[i] - (double)init[i]));
    }
    if (rank == 0)
        printf("%s: %zu parameters, largest change %.3g, largest relative difference %.3g\n",
               spec, n, moved, worst);
    /* Training moved the parameters (the comparison is not vacuous). */
    if (!(moved > 0.05)) FAIL("%s: training barely moved the parameters (%g)", spec, moved);
    if (!(worst <= 1e-5)) FAIL("%s: distributed and single-process differ by %g (relative)", spec, worst);
    if (!identical_on_all_ranks(comm, distributed)) FAIL("%s: the ranks' parameters differ", spec);

    free(init);
    free(d);
    free(s);
    free(x);
    free(labels);
    snn_model_destroy(start);
    snn_model_destroy(single);
    snn_model_destroy(distributed);
}

static void scenario_equivalence(snn_comm *comm) {
    check_equivalence(comm, "input 20; dense 32 tanh; dense 16 relu; dense 5");
    check_equivalence(comm, "input 8x8x2; conv 3x3 6 relu pad=1; maxpool 2; conv 3x3 4 relu; "
                            "flatten; dense 3");
}

/* ------------------------------------------------------------------------ */

static void scenario_broadcast(snn_comm *comm) {
    const char *spec = "input 6x6x1; conv 3x3 4 relu; flatten; dense 3";
    snn_model *model = make_model(spec, 100 + (uint64_t)rank);
    if (ranks > 1 && identical_on_all_ranks(comm, model)) FAIL("different seeds gave equal models");

    /* From the last rank, so that root 0 is not all that works. */
    int32_t root = ranks - 1;
    CHECK(snn_comm_broadcast_parameters(comm, model, root));
    if (!identical_on_all_ranks(comm, model)) FAIL("the ranks differ after the broadcast");
    snn_model *roots = make_model(spec, 100 + (uint64_t)root);
    if (fingerprint(model) != fingerprint(roots)) FAIL("the parameters are not the root's");

    EXPECT_STATUS(snn_comm_broadcast_parameters(comm, model, ranks), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(snn_comm_broadcast_parameters(comm, model, -1), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(snn_comm_set_timeout(comm, 0.0), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(snn_comm_set_timeout(comm, NAN), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_STATUS(snn_comm_rank(NULL, NULL, NULL), SNN_ERR_NULL_ARGUMENT);
    EXPECT_STATUS(snn_comm_create_mpi(NULL, NULL), SNN_ERR_NULL_ARGUMENT);
    double too_many[1] = {0.0};
    EXPECT_STATUS(snn_comm_allreduce_sum(comm, too_many, SNN_COMM_MAX_SUM + 1), SNN_ERR_COUNT);

    /* Models of different sizes on different ranks: every rank gets
     * SNN_ERR_COUNT, and the communicator still works. */
    snn_model *odd = make_model(rank == 0 ? "input 3; dense 2" : "input 4; dense 2", 1);
    if (ranks > 1) {
        EXPECT_STATUS(snn_comm_broadcast_parameters(comm, odd, 0), SNN_ERR_COUNT);
        if (!strstr(snn_dist_last_error(), "differ in size")) FAIL("message: %s", snn_dist_last_error());
    }
    double one[1] = {1.0};
    CHECK(snn_comm_allreduce_sum(comm, one, 1));
    if (one[0] != (double)ranks) FAIL("the sum of ones is %g, expected %d", one[0], (int)ranks);

    snn_model_destroy(odd);
    snn_model_destroy(roots);
    snn_model_destroy(model);
}

/* ------------------------------------------------------------------------ */

static void write_result(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/result", dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs("ok\n", f) < 0 || fclose(f)) FAIL("cannot write %s", path);
}

enum { DEATH_STEP = 5 };
static const double timeout_seconds = 5.0;

static void scenario_rank_dies(snn_comm *comm, const char *dir) {
    const char *spec = "input 20; dense 32 tanh; dense 5";
    snn_model *model = make_model(spec, 1);
    size_t samples = 256, features = 20;
    float *x = malloc(samples * features * sizeof *x);
    int32_t labels[256];
    if (!x) FAIL("out of memory");
    make_data(x, labels, samples, features, 5);
    snn_forward_cache *fwd = NULL;
    snn_backward_cache *bwd = NULL;
    snn_optimiser *adam = NULL;
    CHECK(snn_preallocate(model, 32, &fwd));
    CHECK(snn_preallocate_grads(model, 32, &bwd));
    CHECK(snn_optimiser_create(model, SNN_OPTIMISER_ADAM, &adam));
    CHECK(snn_comm_set_timeout(comm, timeout_seconds));
    CHECK(snn_comm_broadcast_parameters(comm, model, 0));

    for (int step = 0; step < 10; ++step) {
        if (rank == 1 && step == DEATH_STEP) _exit(1); /* dies without a word */
        int64_t indices[32];
        for (int i = 0; i < 32; ++i) indices[i] = (step * 64 + rank * 32 + i) % 256;
        CHECK(snn_set_inputs_gather(fwd, x, samples, indices, 32));
        CHECK(snn_set_labels_gather(bwd, labels, samples, indices, 32));
        CHECK(snn_forward(fwd, model));
        CHECK(snn_backprop(bwd, fwd, model, SNN_LOSS_LOGIT_CROSSENTROPY, NULL));
        double t0 = now_seconds();
        snn_status status = snn_comm_allreduce_gradients(comm, model, bwd);
        double waited = now_seconds() - t0;
        if (step < DEATH_STEP) {
            if (status != SNN_OK) FAIL("step %d: %s", step, snn_dist_last_error());
            CHECK(snn_optimiser_step(adam, model, bwd));
            continue;
        }
        /* Rank 0 at the step where rank 1 is gone. */
        if (status != SNN_ERR_IO)
            FAIL("step %d: got %s, expected SNN_ERR_IO", step, snn_status_string(status));
        printf("rank 0: all-reduce failed after %.2f s: %s\n", waited, snn_dist_last_error());
        if (waited > timeout_seconds + 3.0) FAIL("waited %.2f s, the timeout is %g s", waited, timeout_seconds);
        if (!strstr(snn_dist_last_error(), "snn_comm_allreduce_gradients"))
            FAIL("the message does not name the function: %s", snn_dist_last_error());
        /* The communicator is broken; every later call says so at once. */
        t0 = now_seconds();
        EXPECT_STATUS(snn_comm_allreduce_gradients(comm, model, bwd), SNN_ERR_STATE);
        EXPECT_STATUS(snn_comm_broadcast_parameters(comm, model, 0), SNN_ERR_STATE);
        if (now_seconds() - t0 > 0.5) FAIL("a broken communicator still waited");
        /* The model is intact and can still be saved. */
        char path[4096];
        snprintf(path, sizeof path, "%s/survivor.safetensors", dir);
        CHECK(snn_model_save(model, path));
        write_result(dir);
        break;
    }
    snn_optimiser_destroy(adam);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
    snn_model_destroy(model);
    free(x);
}

/* ------------------------------------------------------------------------ */

/* Rank 1 saves model A, then B, then A... to one path until rank 0 kills it;
 * rank 0 then loads the file. */
static void scenario_killed_while_saving(snn_comm *comm, const char *dir) {
    const char *spec = "input 28x28x1; flatten; dense 256 relu; dense 10"; /* ~200k parameters */
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snn_model *a = make_model(spec, 1), *b = make_model(spec, 2);
    CHECK(snn_comm_set_timeout(comm, 3.0));

    double pid[1] = {rank == 1 ? (double)getpid() : 0.0};
    CHECK(snn_comm_allreduce_sum(comm, pid, 1));
    if (rank == 1) {
        CHECK(snn_model_save(a, path));
        double ready[1] = {1.0};
        CHECK(snn_comm_allreduce_sum(comm, ready, 1));
        for (long i = 1;; ++i) CHECK(snn_model_save(i % 2 ? b : a, path));
    }
    if (rank != 0) return;

    double ready[1] = {0.0};
    CHECK(snn_comm_allreduce_sum(comm, ready, 1)); /* the first save is done */
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    if (kill((pid_t)pid[0], SIGKILL) != 0) FAIL("cannot kill rank 1 (pid %.0f)", pid[0]);

    snn_model *loaded = NULL;
    CHECK(snn_model_load(path, &loaded));
    double f = fingerprint(loaded);
    if (f != fingerprint(a) && f != fingerprint(b)) FAIL("the file holds neither model");
    printf("rank 0: after rank 1 was killed while saving, %s loads and holds model %s\n", path,
           f == fingerprint(a) ? "A" : "B");

    /* The survivor's next collective fails within the timeout. */
    double t0 = now_seconds();
    double one[1] = {1.0};
    EXPECT_STATUS(snn_comm_allreduce_sum(comm, one, 1), SNN_ERR_IO);
    if (now_seconds() - t0 > 3.0 + 3.0) FAIL("waited %.2f s", now_seconds() - t0);
    if (one[0] != 1.0) FAIL("a failed sum changed its data");
    write_result(dir);
    snn_model_destroy(loaded);
    snn_model_destroy(b);
    snn_model_destroy(a);
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_dist equivalence|broadcast|rank-dies|killed-while-saving DIR\n");
        return 2;
    }
    CHECK(snn_set_num_threads(1)); /* the ranks share the machine's cores */
    snn_comm *comm = NULL;
    CHECK(snn_comm_create_mpi(NULL, &comm));
    CHECK(snn_comm_rank(comm, &rank, &ranks));
    const char *scenario = argv[1], *dir = argv[2];
    if (!strcmp(scenario, "equivalence")) {
        scenario_equivalence(comm);
    } else if (!strcmp(scenario, "broadcast")) {
        scenario_broadcast(comm);
    } else if (!strcmp(scenario, "rank-dies") || !strcmp(scenario, "killed-while-saving")) {
        if (ranks != 2) FAIL("%s needs exactly 2 ranks", scenario);
        if (!strcmp(scenario, "rank-dies"))
            scenario_rank_dies(comm, dir);
        else
            scenario_killed_while_saving(comm, dir);
        /* MPI cannot be finalised once a rank is gone: leave without it. */
        fflush(stdout);
        _exit(0);
    } else {
        FAIL("unknown scenario %s", scenario);
    }
    snn_comm_destroy(comm);
    if (rank == 0) printf("%s: ok on %d ranks\n", scenario, (int)ranks);
    return 0;
}
