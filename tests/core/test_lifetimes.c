/* Handles may be destroyed in any order: caches and optimisers keep what
 * they need of their model, so a binding's garbage collector may free them
 * in whatever order it likes. Every permutation of (model, forward cache,
 * backward cache, optimiser) is destroyed here, with calls that need only
 * the surviving handles made between the destroys. Run under
 * AddressSanitizer, a read of freed model memory fails the test. */
#include <snn.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: %s\n", __FILE__,     \
                    __LINE__, #cond, snn_last_error());                    \
            ++failures;                                                    \
        }                                                                  \
    } while (0)

/* Convolution and pooling give the caches per-layer plans, which read the
 * layers of the network when they are released. */
static const char *kSpec =
    "input 6x6x2; conv 3x3 4 relu; maxpool 2; avgpool 2 stride=1; flatten; dense 3";

enum { MODEL = 0, FORWARD = 1, BACKWARD = 2, OPTIMISER = 3, HANDLES = 4, BATCH = 3 };

struct world {
    snn_model *model;
    snn_forward_cache *fwd;
    snn_backward_cache *bwd;
    snn_optimiser *opt;
    float inputs[BATCH * 72];
    int32_t labels[BATCH];
    float outputs[BATCH * 3];
};

static void make_world(struct world *w) {
    memset(w, 0, sizeof *w);
    for (int i = 0; i < BATCH * 72; ++i) w->inputs[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < BATCH; ++i) w->labels[i] = i % 3;
    CHECK(snn_model_create(kSpec, &w->model) == SNN_OK);
    CHECK(snn_preallocate(w->model, BATCH, &w->fwd) == SNN_OK);
    CHECK(snn_preallocate_grads(w->model, BATCH, &w->bwd) == SNN_OK);
    CHECK(snn_optimiser_create(w->model, SNN_OPTIMISER_ADAM, &w->opt) == SNN_OK);
    CHECK(snn_set_inputs(w->fwd, w->inputs, BATCH * 72) == SNN_OK);
    CHECK(snn_forward(w->fwd, w->model) == SNN_OK);
    CHECK(snn_set_labels(w->bwd, w->labels, BATCH) == SNN_OK);
    CHECK(snn_backprop(w->bwd, w->fwd, w->model, SNN_LOSS_LOGIT_CROSSENTROPY, NULL) == SNN_OK);
    CHECK(snn_optimiser_step(w->opt, w->model, w->bwd) == SNN_OK);
    CHECK(snn_get_outputs(w->fwd, w->outputs, BATCH * 3) == SNN_OK);
}

/* Calls that need only the handles still alive, with their results. */
static void use_survivors(struct world *w, const int *alive) {
    if (alive[FORWARD]) {
        float out[BATCH * 3];
        const float *view = NULL;
        size_t n = 0;
        int64_t batch = 0, max_batch = 0;
        CHECK(snn_get_outputs(w->fwd, out, BATCH * 3) == SNN_OK);
        CHECK(memcmp(out, w->outputs, sizeof out) == 0);
        CHECK(snn_outputs(w->fwd, &view, &n) == SNN_OK && n == BATCH * 3);
        CHECK(snn_set_inputs(w->fwd, w->inputs, BATCH * 72) == SNN_OK);
        CHECK(snn_set_inputs(w->fwd, w->inputs, 7) == SNN_ERR_COUNT);
        CHECK(snn_cache_set_batch(w->fwd, 2) == SNN_OK);
        CHECK(snn_cache_batch(w->fwd, &batch, &max_batch) == SNN_OK && batch == 2 && max_batch == BATCH);
        CHECK(snn_cache_set_batch(w->fwd, BATCH) == SNN_OK);
        CHECK(snn_set_inputs(w->fwd, w->inputs, BATCH * 72) == SNN_OK);
        if (alive[MODEL]) {
            CHECK(snn_forward(w->fwd, w->model) == SNN_OK);
            CHECK(snn_get_outputs(w->fwd, w->outputs, BATCH * 3) == SNN_OK);
        }
    }
    if (alive[BACKWARD]) {
        const float *g = NULL;
        size_t n = 0, params = 0;
        float copy[256];
        CHECK(snn_gradients(w->bwd, &g, &n) == SNN_OK && n > 0 && n <= 256);
        params = n;
        CHECK(snn_get_gradients(w->bwd, copy, params) == SNN_OK);
        CHECK(memcmp(copy, g, params * sizeof(float)) == 0);
        CHECK(snn_set_gradients(w->bwd, copy, params) == SNN_OK);
        CHECK(snn_set_labels(w->bwd, w->labels, BATCH) == SNN_OK);
        CHECK(snn_set_labels(w->bwd, w->labels, BATCH + 1) == SNN_ERR_BATCH);
    }
    if (alive[OPTIMISER]) {
        int64_t steps = 0;
        double lr = 0;
        CHECK(snn_optimiser_step_count(w->opt, &steps) == SNN_OK && steps >= 1);
        CHECK(snn_optimiser_set(w->opt, SNN_HP_LEARNING_RATE, 0.002) == SNN_OK);
        CHECK(snn_optimiser_get(w->opt, SNN_HP_LEARNING_RATE, &lr) == SNN_OK && lr == 0.002);
        if (alive[MODEL] && alive[BACKWARD])
            CHECK(snn_optimiser_step(w->opt, w->model, w->bwd) == SNN_OK);
    }
}

static void destroy(struct world *w, int which) {
    switch (which) {
        case MODEL: snn_model_destroy(w->model); w->model = NULL; break;
        case FORWARD: snn_forward_cache_destroy(w->fwd); w->fwd = NULL; break;
        case BACKWARD: snn_backward_cache_destroy(w->bwd); w->bwd = NULL; break;
        default: snn_optimiser_destroy(w->opt); w->opt = NULL; break;
    }
}

/* Heap's algorithm over the destroy orders. */
static int orders = 0;
static void run_order(const int *order) {
    struct world w;
    int alive[HANDLES] = {1, 1, 1, 1};
    make_world(&w);
    for (int k = 0; k < HANDLES; ++k) {
        destroy(&w, order[k]);
        alive[order[k]] = 0;
        use_survivors(&w, alive);
    }
    ++orders;
}

static void permute(int *a, int n) {
    if (n == 1) {
        run_order(a);
        return;
    }
    for (int i = 0; i < n - 1; ++i) {
        permute(a, n - 1);
        int j = (n % 2 == 0) ? i : 0;
        int t = a[j];
        a[j] = a[n - 1];
        a[n - 1] = t;
    }
    permute(a, n - 1);
}

int main(void) {
    int order[HANDLES] = {MODEL, FORWARD, BACKWARD, OPTIMISER};
    CHECK(snn_set_num_threads(2) == SNN_OK);
    permute(order, HANDLES);
    CHECK(orders == 24);
    if (failures) {
        printf("%d checks failed\n", failures);
        return 1;
    }
    printf("all %d destroy orders are safe\n", orders);
    return 0;
}
