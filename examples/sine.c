/* The snn getting-started example: fit sin(x) on [0, 2*pi] with a small MLP
 * trained by Adam, as in SimpleNNs.jl's guide.
 *
 *   build/examples/sine
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "snn.h"

#define CHECK(call)                                                                    \
    do {                                                                               \
        snn_status status_ = (call);                                                   \
        if (status_ != SNN_OK) {                                                       \
            fprintf(stderr, "%s failed: %s\n", #call, snn_last_error());               \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

int main(void) {
    const double pi = 3.14159265358979323846;
    enum { N = 512, EPOCHS = 3000 };
    static float x[N], y[N];
    for (int i = 0; i < N; ++i) {
        x[i] = (float)(2.0 * pi * i / (N - 1));
        y[i] = (float)sin(x[i]);
    }

    snn_model *model = NULL;
    CHECK(snn_model_create("input 1; dense 10 tanh; dense 10 sigmoid; dense 1", &model));
    CHECK(snn_model_init(model, 42));

    snn_forward_cache *fwd = NULL;
    snn_backward_cache *bwd = NULL;
    snn_optimiser *adam = NULL;
    CHECK(snn_preallocate(model, N, &fwd));
    CHECK(snn_preallocate_grads(model, N, &bwd));
    CHECK(snn_optimiser_create(model, SNN_OPTIMISER_ADAM, &adam));
    CHECK(snn_optimiser_set(adam, SNN_HP_LEARNING_RATE, 0.01));

    /* The whole data set is one batch: inputs and targets are set once. */
    CHECK(snn_set_inputs(fwd, x, N));
    CHECK(snn_set_targets(bwd, y, N));

    float loss = 0.0f;
    for (int epoch = 1; epoch <= EPOCHS; ++epoch) {
        CHECK(snn_forward(fwd, model));
        CHECK(snn_backprop(bwd, fwd, model, SNN_LOSS_MSE, &loss));
        CHECK(snn_optimiser_step(adam, model, bwd));
        if (epoch == 1 || epoch % 500 == 0) printf("epoch %4d  loss %.6f\n", epoch, loss);
    }

    CHECK(snn_forward(fwd, model));
    const float *out = NULL;
    size_t count = 0;
    CHECK(snn_outputs(fwd, &out, &count));
    double mse = 0.0;
    for (size_t i = 0; i < count; ++i) mse += (out[i] - y[i]) * (out[i] - y[i]);
    mse /= (double)count;
    printf("final MSE %.6f\n", mse);

    snn_optimiser_destroy(adam);
    snn_backward_cache_destroy(bwd);
    snn_forward_cache_destroy(fwd);
    snn_model_destroy(model);
    return mse < 1e-3 ? 0 : 1;
}
