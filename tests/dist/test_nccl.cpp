// libsnn_nccl: several GPUs of one process training one model. One mode per
// process:
//
//   test_nccl replicas   (suite gpu) two replicas on GPUs 0 and 1 with batch
//                        32 each follow one model with batch 64 for 5 Adam
//                        steps, and stay bit-identical; skipped (77) with
//                        fewer than 2 GPUs
//   test_nccl statuses   (suite device, any machine) bad arguments, and the
//                        exact status and message of a communicator asked
//                        for on a machine without a GPU
#include <dlfcn.h>
#include <snn_dist_nccl.h>

#include <cstring>
#include <string>

#include "gpu_test.h"

using namespace gpu_test;

namespace {

// An snn_nccl_* call that must return `status`; prints its message otherwise.
#define CHECK_NCCL(call, status)                                                                   \
    do {                                                                                           \
        snn_status st_ = (call);                                                                   \
        if (st_ != (status)) {                                                                     \
            std::fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s: %s\n", __FILE__,        \
                         __LINE__, #call, st_, snn_status_string(st_), #status,                    \
                         snn_nccl_last_error());                                                   \
            ++gpu_test::failures();                                                                \
        }                                                                                          \
    } while (0)

// The last snn_nccl_* message contains `words`.
void check_message(const char *words) {
    if (std::strstr(snn_nccl_last_error(), words) == nullptr) {
        std::fprintf(stderr, "message \"%s\" lacks \"%s\"\n", snn_nccl_last_error(), words);
        ++failures();
    }
}

struct CommDeleter {
    void operator()(snn_nccl_comm *c) const { snn_nccl_comm_destroy(c); }
};
using Comm = std::unique_ptr<snn_nccl_comm, CommDeleter>;

bool driver_present() {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr) return false;
    dlclose(driver);
    return true;
}

// ---------------------------------------------------------------------------

void statuses() {
    snn_nccl_comm *const sentinel = reinterpret_cast<snn_nccl_comm *>(&failures());
    snn_nccl_comm *c = sentinel;
    const int32_t gpu0[1] = {0};
    const int32_t twice[2] = {0, 0};
    const int32_t negative[1] = {-1};

    // Arguments are checked before any GPU is looked for.
    CHECK_NCCL(snn_nccl_comm_create(nullptr, 1, &c), SNN_ERR_NULL_ARGUMENT);
    check_message("devices is NULL");
    CHECK_NCCL(snn_nccl_comm_create(gpu0, 1, nullptr), SNN_ERR_NULL_ARGUMENT);
    check_message("out is NULL");
    CHECK_NCCL(snn_nccl_comm_create(gpu0, 0, &c), SNN_ERR_INVALID_ARGUMENT);
    check_message("count must be >= 1, got 0");
    CHECK_NCCL(snn_nccl_comm_create(twice, 2, &c), SNN_ERR_INVALID_ARGUMENT);
    check_message("GPU 0 is listed twice");
    CHECK_NCCL(snn_nccl_comm_create(negative, 1, &c), SNN_ERR_GPU_INDEX);
    check_message("devices[0] is -1");
    CHECK(c == sentinel);

    // NULL handles.
    snn_nccl_comm_destroy(nullptr);
    int32_t size = 0;
    CHECK_NCCL(snn_nccl_comm_size(nullptr, &size), SNN_ERR_NULL_ARGUMENT);
    CHECK_NCCL(snn_nccl_set_timeout(nullptr, 1.0), SNN_ERR_NULL_ARGUMENT);
    CHECK_NCCL(snn_nccl_broadcast_replicas(nullptr, nullptr, 1), SNN_ERR_NULL_ARGUMENT);
    check_message("comm is NULL");
    CHECK_NCCL(snn_nccl_allreduce_replica_gradients(nullptr, nullptr, nullptr, 1),
               SNN_ERR_NULL_ARGUMENT);
    check_message("comm is NULL");

    if (snn_gpu_count() > 0) {
        // A GPU machine: GPU 0 works, an index past the last does not.
        CHECK_NCCL(snn_nccl_comm_create(gpu0, 1, &c), SNN_OK);
        Comm comm(c == sentinel ? nullptr : c);
        if (comm) {
            CHECK_NCCL(snn_nccl_comm_size(comm.get(), &size), SNN_OK);
            CHECK(size == 1);
            CHECK_NCCL(snn_nccl_set_timeout(comm.get(), 0.0), SNN_ERR_INVALID_ARGUMENT);
            CHECK_NCCL(snn_nccl_broadcast_replicas(comm.get(), nullptr, 1), SNN_ERR_NULL_ARGUMENT);
        }
        const int32_t past[1] = {1000};
        snn_nccl_comm *d = sentinel;
        CHECK_NCCL(snn_nccl_comm_create(past, 1, &d), SNN_ERR_GPU_INDEX);
        check_message("devices[0] is GPU 1000, but CUDA sees");
        CHECK(d == sentinel);
        std::printf("statuses: %d GPU(s) visible\n", snn_gpu_count());
        return;
    }

    // No GPU: the reason, every time (a failed creation leaves no state
    // behind that would change the next answer), and *out untouched.
    for (int attempt = 0; attempt < 3; ++attempt) {
        c = sentinel;
        const snn_status st = snn_nccl_comm_create(gpu0, 1, &c);
        if (attempt == 0)
            std::printf("snn_nccl_comm_create: %s: %s\n", snn_status_string(st), snn_nccl_last_error());
        CHECK(c == sentinel);
        if (!driver_present()) {
            // This is what a machine without the NVIDIA driver (libcuda.so) gets.
            CHECK(st == SNN_ERR_GPU_DRIVER);
            check_message("snn_nccl_comm_create: no CUDA driver is installed");
        } else if (st == SNN_ERR_NO_GPU) {
            check_message("sees no GPU");
        } else {
            CHECK(st == SNN_ERR_GPU_DRIVER);
            check_message("driver");
        }
    }
}

// ---------------------------------------------------------------------------

constexpr int kReplicas = 2;
constexpr int64_t kShare = 32;                 // samples per replica and step
constexpr int64_t kBatch = kReplicas * kShare; // the single model's batch
constexpr int kSteps = 5;
const char *const kSpec = "input 6x6x2; conv 3x3 4 relu pad=1; maxpool 2; flatten; dense 16 tanh; dense 5";

// One training step's data: inputs and labels of kBatch samples.
struct Batch {
    std::vector<float> x;
    std::vector<int32_t> y;
};

void replicas() {
    const int32_t gpus = snn_gpu_count();
    if (gpus < kReplicas) {
        const snn_status why = snn_gpu_status(gpus);
        std::printf("skipped: %d usable GPU(s), the test needs %d (GPU %d: %s: %s)\n", gpus,
                    kReplicas, gpus, snn_status_string(why), snn_last_error());
        std::exit(77);
    }
    const int32_t devices[kReplicas] = {0, 1};

    // The reference: one model with the whole batch on GPU 0.
    Model single = make_model(kSpec, 7);
    const std::vector<float> start = parameters(single.get());
    move_to(single.get(), 0);
    const size_t features = input_size(single.get());
    Forward single_f = make_forward(single.get(), kBatch);
    Backward single_b = make_backward(single.get(), kBatch);
    Optimiser single_o = make_optimiser(single.get(), SNN_OPTIMISER_ADAM);

    // The replicas: replica 1 starts from other parameters, which the
    // broadcast overwrites with replica 0's.
    Model models[kReplicas] = {make_model(kSpec, 7), make_model(kSpec, 99)};
    Forward fwd[kReplicas];
    Backward bwd[kReplicas];
    Optimiser opt[kReplicas];
    snn_model *model_ptrs[kReplicas];
    snn_backward_cache *cache_ptrs[kReplicas];
    for (int i = 0; i < kReplicas; ++i) {
        move_to(models[i].get(), devices[i]);
        fwd[i] = make_forward(models[i].get(), kShare);
        bwd[i] = make_backward(models[i].get(), kShare);
        opt[i] = make_optimiser(models[i].get(), SNN_OPTIMISER_ADAM);
        model_ptrs[i] = models[i].get();
        cache_ptrs[i] = bwd[i].get();
    }

    snn_nccl_comm *c = nullptr;
    CHECK_NCCL(snn_nccl_comm_create(devices, kReplicas, &c), SNN_OK);
    if (c == nullptr) return;
    Comm comm(c);
    CHECK_NCCL(snn_nccl_set_timeout(comm.get(), 30.0), SNN_OK);
    CHECK_NCCL(snn_nccl_broadcast_replicas(comm.get(), model_ptrs, kReplicas), SNN_OK);
    CHECK(parameters(models[1].get()) == start);

    // Wrong calls leave the communicator usable.
    snn_model *swapped[kReplicas] = {model_ptrs[1], model_ptrs[0]};
    CHECK_NCCL(snn_nccl_broadcast_replicas(comm.get(), swapped, kReplicas), SNN_ERR_DEVICE_MISMATCH);
    check_message("models[0] is on GPU 1, but replica 0 belongs to GPU 0");
    CHECK_NCCL(snn_nccl_broadcast_replicas(comm.get(), model_ptrs, 1), SNN_ERR_INVALID_ARGUMENT);
    check_message("count is 1 but the communicator has 2 GPUs");

    Random random(2024);
    for (int step = 0; step < kSteps; ++step) {
        Batch batch{random.floats(size_t(kBatch) * features, -1.0f, 1.0f),
                    random.labels(size_t(kBatch), 5)};

        CHECK_OK(snn_set_inputs(single_f.get(), batch.x.data(), batch.x.size()));
        CHECK_OK(snn_set_labels(single_b.get(), batch.y.data(), batch.y.size()));
        CHECK_OK(snn_forward(single_f.get(), single.get()));
        CHECK_OK(snn_backprop(single_b.get(), single_f.get(), single.get(),
                              SNN_LOSS_LOGIT_CROSSENTROPY, nullptr));

        // Replica i takes samples [i * kShare, (i + 1) * kShare).
        for (int i = 0; i < kReplicas; ++i) {
            const float *x = batch.x.data() + size_t(i * kShare) * features;
            const int32_t *y = batch.y.data() + size_t(i * kShare);
            CHECK_OK(snn_set_inputs(fwd[i].get(), x, size_t(kShare) * features));
            CHECK_OK(snn_set_labels(bwd[i].get(), y, size_t(kShare)));
            CHECK_OK(snn_forward(fwd[i].get(), models[i].get()));
            CHECK_OK(snn_backprop(bwd[i].get(), fwd[i].get(), models[i].get(),
                                  SNN_LOSS_LOGIT_CROSSENTROPY, nullptr));
        }
        CHECK_NCCL(snn_nccl_allreduce_replica_gradients(comm.get(), model_ptrs, cache_ptrs, kReplicas),
                   SNN_OK);

        if (step == 0) {
            // The mean of the halves' gradients is the whole batch's gradient,
            // and every replica holds the same one.
            std::vector<float> want(param_count(single.get())), got0(want.size()), got1(want.size());
            CHECK_OK(snn_get_gradients(single_b.get(), want.data(), want.size()));
            CHECK_OK(snn_get_gradients(bwd[0].get(), got0.data(), got0.size()));
            CHECK_OK(snn_get_gradients(bwd[1].get(), got1.data(), got1.size()));
            close("averaged gradient", got0, want, 1e-5f, 1e-7f);
            CHECK(got0 == got1);
        }

        CHECK_OK(snn_optimiser_step(single_o.get(), single.get(), single_b.get()));
        for (int i = 0; i < kReplicas; ++i)
            CHECK_OK(snn_optimiser_step(opt[i].get(), models[i].get(), bwd[i].get()));
    }

    const std::vector<float> want = parameters(single.get());
    const std::vector<float> got0 = parameters(models[0].get());
    const std::vector<float> got1 = parameters(models[1].get());
    CHECK(got0 != start);  // training moved the parameters
    close("replica 0 after 5 Adam steps", got0, want, 1e-4f, 1e-6f);
    CHECK(got0 == got1);   // the replicas never drift apart

    // A cache on the wrong GPU is refused before anything is queued.
    snn_backward_cache *swapped_caches[kReplicas] = {cache_ptrs[1], cache_ptrs[0]};
    CHECK_NCCL(snn_nccl_allreduce_replica_gradients(comm.get(), model_ptrs, swapped_caches, kReplicas),
               SNN_ERR_DEVICE_MISMATCH);
    check_message("caches[0] is not on GPU 0");
}

}  // namespace

int main(int argc, char **argv) {
    if (argc >= 2 && std::strcmp(argv[1], "replicas") == 0)
        replicas();
    else if (argc >= 2 && std::strcmp(argv[1], "statuses") == 0)
        statuses();
    else {
        std::fprintf(stderr, "usage: %s replicas | statuses\n", argv[0]);
        return 2;
    }
    return finish(argv[1]);
}
