/* Training steps of examples/words' four networks, timed:
 *
 *   words_bench [--steps N] [--batch N] [--dict DIR] [CASE ...]
 *
 * CASE is lang_lstm, lang_transformer, lm_lstm or lm_transformer (default:
 * all four). For each, one line
 *
 *   name median_ms allocations
 *
 * median_ms: the median over N steps (default 200, after 10 of warm-up) of
 * one training step at --batch (default 64): gathering the batch's token
 * ids, lengths and labels by index, forward, backprop (cross-entropy),
 * Adam's update; the batches are the first of the example's first epoch
 * (seed 1). allocations: heap allocations per step over the timed steps
 * (tests/core/alloc_counter.c counts them). Threads: SNN_NUM_THREADS
 * (default: all cores). bench/words_compare.sh runs it next to
 * bench/words_torch.py --time-steps.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/core/alloc_counter.h"
#include "models.h"
#include "snn.h"
#include "wordlists.h"
#include "bench_util.h"

#define STEPS 24
#define WARMUP 10
#define LEARNING_RATE 2e-3

/* The example's shuffling (examples/words/words.c). */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void shuffle(int64_t *v, size_t n, uint64_t *state) {
    for (size_t i = n - 1; i > 0; --i) {
        uint64_t bound = (uint64_t)i + 1, limit = UINT64_MAX - UINT64_MAX % bound, r;
        do r = next_random(state);
        while (r >= limit);
        size_t j = (size_t)(r % bound);
        int64_t t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

static void run_case(const word_data *data, words_task task, const char *model_name, long steps,
                     long batch) {
    words_batch_data train;
    if (words_task_data(data, &data->train, task, &train) != WORDS_OK) exit(1);
    char spec[2048];
    words_spec(spec, sizeof spec, task, model_name, data->steps, data->vocab);
    snn_model *model = NULL;
    snn_forward_cache *fwd = NULL;
    snn_backward_cache *bwd = NULL;
    snn_optimiser *adam = NULL;
    CHECK(snn_model_create(spec, &model));
    CHECK(snn_model_init(model, 1));
    CHECK(snn_preallocate(model, batch, &fwd));
    CHECK(snn_preallocate_grads(model, batch, &bwd));
    CHECK(snn_optimiser_create(model, SNN_OPTIMISER_ADAM, &adam));
    CHECK(snn_optimiser_set(adam, SNN_HP_LEARNING_RATE, LEARNING_RATE));
    const size_t total = (size_t)(WARMUP + steps) * (size_t)batch;
    int64_t *order = malloc(train.count * sizeof *order);
    double *times = malloc((size_t)steps * sizeof *times);
    if (!order || !times || total > train.count) {
        fprintf(stderr, "words_bench: %ld steps of %ld need more than %zu training words\n", steps,
                batch, train.count);
        exit(1);
    }
    for (size_t i = 0; i < train.count; ++i) order[i] = (int64_t)i;
    uint64_t rng = 1;
    shuffle(order, train.count, &rng);
    size_t allocations = 0;
    for (long s = 0; s < WARMUP + steps; ++s) {
        if (s == WARMUP) alloc_counter_start();
        const int64_t *rows = order + (size_t)s * (size_t)batch;
        double t0 = (now_us() / 1e6);
        CHECK(snn_set_tokens_gather(fwd, train.tokens, train.count, rows, (size_t)batch));
        CHECK(snn_set_lengths_gather(fwd, train.lengths, train.count, rows, (size_t)batch));
        CHECK(snn_set_labels_gather(bwd, train.labels, train.count, rows, (size_t)batch));
        float loss = 0.0f;
        CHECK(snn_forward(fwd, model));
        CHECK(snn_backprop(bwd, fwd, model, SNN_LOSS_LOGIT_CROSSENTROPY, &loss));
        CHECK(snn_optimiser_step(adam, model, bwd));
        if (s >= WARMUP) times[s - WARMUP] = (now_us() / 1e6) - t0;
    }
    allocations = alloc_counter_stop();
    qsort(times, (size_t)steps, sizeof *times, cmp_double);
    printf("%s_%s %.3f %.2f\n", task == WORDS_TASK_LANG ? "lang" : "lm", model_name,
           1e3 * times[steps / 2], (double)allocations / (double)steps);
    fflush(stdout);
    free(times);
    free(order);
    snn_optimiser_destroy(adam);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
    snn_model_destroy(model);
    words_task_data_free(&train);
}

int main(int argc, char **argv) {
    long steps = 200, batch = 64;
    const char *dict = "/usr/share/dict";
    const char *cases[4];
    int case_count = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atol(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atol(argv[++i]);
        else if (!strcmp(argv[i], "--dict") && i + 1 < argc) dict = argv[++i];
        else if (case_count < 4 && (!strcmp(argv[i], "lang_lstm") || !strcmp(argv[i], "lang_transformer") ||
                                    !strcmp(argv[i], "lm_lstm") || !strcmp(argv[i], "lm_transformer")))
            cases[case_count++] = argv[i];
        else {
            fprintf(stderr, "usage: words_bench [--steps N] [--batch N] [--dict DIR] "
                            "[lang_lstm|lang_transformer|lm_lstm|lm_transformer ...]\n");
            return 2;
        }
    }
    if (steps < 1 || batch < 1) {
        fprintf(stderr, "words_bench: --steps and --batch must be at least 1\n");
        return 2;
    }
    if (case_count == 0) {
        static const char *all[4] = {"lang_lstm", "lang_transformer", "lm_lstm", "lm_transformer"};
        memcpy(cases, all, sizeof all);
        case_count = 4;
    }
    words_options o = {dict, STEPS, WORDS_TRAIN_PER_LANGUAGE, WORDS_TEST_PER_LANGUAGE};
    word_data data;
    char error[4096];
    if (words_load(&o, &data, error, sizeof error) != WORDS_OK) {
        fprintf(stderr, "words_bench: %s\n", error);
        return 1;
    }
    for (int c = 0; c < case_count; ++c) {
        const char *name = cases[c];
        words_task task = !strncmp(name, "lang_", 5) ? WORDS_TASK_LANG : WORDS_TASK_LM;
        run_case(&data, task, strchr(name, '_') + 1, steps, batch);
    }
    words_free(&data);
    return 0;
}
