// Backend-independent orchestration: a model (network description plus the
// flat parameter vector on one device), the forward and backward caches, and
// the passes over the layers. Every buffer is allocated when a model or
// cache is made; forward, backprop and optimiser steps allocate nothing.
#pragma once

#include <stdint.h>
#include <memory>

#include <vector>

#include "core/backend.h"
#include "engine/settings.h"
#include "ops/spec.h"
#include "ops/op.h"

namespace snn {

// One allocation on a backend, freed with it.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(Backend &be, size_t bytes) : be_(&be), bytes_(bytes), p_(be.alloc(bytes)) {}
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    DeviceBuffer(DeviceBuffer &&o) noexcept { swap(o); }
    DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
        DeviceBuffer t(std::move(o));
        swap(t);
        return *this;
    }
    ~DeviceBuffer() {
        if (p_) be_->release(p_);
    }
    void swap(DeviceBuffer &o) noexcept {
        std::swap(be_, o.be_);
        std::swap(bytes_, o.bytes_);
        std::swap(p_, o.p_);
    }
    float *f() const { return static_cast<float *>(p_); }
    int32_t *i32() const { return static_cast<int32_t *>(p_); }
    void *get() const { return p_; }
    size_t bytes() const { return bytes_; }

private:
    Backend *be_ = nullptr;
    size_t bytes_ = 0;
    void *p_ = nullptr;
};

// A stream owned by one handle.
class OwnedStream {
public:
    OwnedStream() = default;
    OwnedStream(Backend &be, size_t staging, bool tf32) : be_(&be), s_(be.create_stream(staging, tf32)) {}
    OwnedStream(const OwnedStream &) = delete;
    OwnedStream &operator=(const OwnedStream &) = delete;
    OwnedStream(OwnedStream &&o) noexcept { swap(o); }
    OwnedStream &operator=(OwnedStream &&o) noexcept {
        OwnedStream t(std::move(o));
        swap(t);
        return *this;
    }
    ~OwnedStream() {
        if (s_) be_->destroy_stream(s_);
    }
    void swap(OwnedStream &o) noexcept {
        std::swap(be_, o.be_);
        std::swap(s_, o.s_);
    }
    Stream *get() const { return s_; }

private:
    Backend *be_ = nullptr;
    Stream *s_ = nullptr;
};

// Per-node backend plans (convolution descriptors, ...) of one cache. Each
// plan remembers its kernels, so releasing needs nothing but the backend.
class LayerPlans {
public:
    LayerPlans() = default;
    LayerPlans(const LayerPlans &) = delete;
    LayerPlans &operator=(const LayerPlans &) = delete;
    LayerPlans(LayerPlans &&o) noexcept { swap(o); }
    LayerPlans &operator=(LayerPlans &&o) noexcept {
        LayerPlans t(std::move(o));
        swap(t);
        return *this;
    }
    ~LayerPlans();
    void swap(LayerPlans &o) noexcept {
        std::swap(be_, o.be_);
        plans_.swap(o.plans_);
    }
    // Makes the plans for every node; returns the largest workspace needed.
    size_t make(Backend &be, Stream *s, const Network &net, int64_t max_batch, bool backward,
                Precision precision);
    void *operator[](size_t layer) const { return plans_[layer].plan; }
    const OpKernels *kernels(size_t layer) const { return plans_[layer].kernels; }

private:
    struct Plan {
        void *plan;
        const OpKernels *kernels;
    };
    Backend *be_ = nullptr;
    std::vector<Plan> plans_;
};

// Where each node's values lie in a cache's arena: slices of one buffer,
// memory reused once a value's lifetime has ended.
struct ArenaPlan {
    std::vector<size_t> offset;   // per node, in floats; SIZE_MAX where the node has no slice
    size_t floats = 0;            // the arena's size
};

// The model's stream orders every use of its parameters and state. Writes
// (init, copies, optimiser steps) run on it, each followed by a mark that
// later readers wait for (wait_mark). Each reader (a forward or backward
// pass on its cache's stream) makes the model's stream wait for it when
// queued, so the next write starts after every earlier read while readers
// never wait for one another. No host synchronisation.
struct Model {
    Network net;
    Backend *backend = nullptr;
    OwnedStream stream;
    DeviceBuffer params;
    DeviceBuffer state;    // non-trainable values (running statistics)
    uint64_t id = 0;       // unique per model in the process
    uint64_t placement = 0;// changes on every device move
    // Writes of the parameters and of the state, counted, with the last
    // writer's name: backprop refuses a forward pass they have changed since.
    struct Writes {
        uint64_t count = 0;
        const char *by = "";
        void note(const char *writer) { ++count, by = writer; }
    };
    Writes param_writes;
    Writes state_writes;
    // snn_parameters gave out a writable view: writes through it are not
    // counted, so what was made from the parameters is made again each time.
    bool params_viewed = false;

    // Const-ness is honest: a const Model gives read-only views, and every
    // writer of the parameters or the state takes a Model& (model_write,
    // optimiser_step, model_reinit, and forward_pass, whose training mode
    // updates the running statistics). snn_forward keeps its const
    // snn_model* for ABI stability and says in snn.h that a training-mode
    // pass writes the state; the one const_cast is there, at the boundary.
    int32_t device() const { return backend->device(); }
    const float *params_ptr() const { return params.f(); }
    float *params_ptr() { return params.f(); }
    const float *state_ptr() const { return state.f(); }
    float *state_ptr() { return state.f(); }
};

// For each node, the node whose memory its output is (flatten reuses its
// input's).
std::vector<size_t> memory_owners(const Network &net);

// Makes a CPU model from a parsed network, parameters initialised from seed,
// state at its initial values. Throws SNN_ERR_INTERNAL if the CPU lacks an op.
void model_init_on_cpu(Model &m, Network net, uint64_t seed);
// Re-initialises parameters and state on the model's device.
void model_reinit(Model &m, uint64_t seed);
// Uploads host values into the model's parameters or state (dst one of
// them), after every pass queued so far that reads them, and waits for it.
void model_write(Model &m, void *dst, const void *src_host, size_t bytes);
// Moves parameters and state to `be`; on failure the model is unchanged.
// SNN_ERR_UNSUPPORTED naming the op when `be` lacks one of the model's ops.
void model_move(Model &m, Backend &be);

// Caches and optimisers keep their own copy of the network description, so
// they never read their model's memory outside calls that are given the
// model: every destroy order is safe.
// The inference rewrites of a cache (snn_cache_set_inference_rewrites;
// engine/rewrites.cpp): each fold runs a convolution or dense layer (node
// `product`) with the batchnorm that alone reads it (`norm`) folded into its
// weights and bias, and the relu that alone reads the batchnorm (`act`, 0
// when none) in its output pass, as one shadow layer over the folded copy of
// its parameters; the output goes to the product's own buffer (which the
// batchnorm keeps, so it lives to the end of the pass), and every reader of
// the last node folded (`last`) reads it there.
struct InferenceFold {
    size_t product = 0, norm = 0, act = 0, last = 0;
    Layer layer;                 // the product with a bias and the folded activation
    size_t at = 0;               // its parameters' offset in InferenceRewrites::params
    void *plan = nullptr;        // its forward plan (float32)
    const OpKernels *kernels = nullptr;
};

struct InferenceRewrites {
    InferenceRewrites() = default;
    InferenceRewrites(const InferenceRewrites &) = delete;
    InferenceRewrites &operator=(const InferenceRewrites &) = delete;
    ~InferenceRewrites();
    Backend *be = nullptr;
    std::vector<InferenceFold> folds;
    std::vector<int32_t> fold_of;  // per node: the fold it runs, or -1
    std::vector<char> skipped;     // per node: folded into a fold that ran before
    std::vector<float *> acts;     // ForwardCache::acts as the rewritten pass reads them
    DeviceBuffer params, workspace;
    // The model's write counts the folded parameters were made from.
    uint64_t param_writes = UINT64_MAX, state_writes = UINT64_MAX;
};

struct ForwardCache {
    Network net;
    uint64_t model_id = 0, placement = 0;
    Backend *backend = nullptr;
    OwnedStream stream;
    int64_t max_batch = 0, batch = 0;
    int64_t input_batch = -1;    // batch of the inputs set, -1 when none
    int64_t forward_batch = -1;  // batch of the last forward pass, -1 when none
    bool training = true;        // the mode of the next pass
    Precision precision = Precision::f32;          // of the next pass (snn_set_precision)
    Precision forward_precision = Precision::f32;  // of the last pass
    bool forward_training = true;// the mode of the last pass
    uint64_t seed = 0, passes = 0;  // dropout: the seed and the training passes since it was set
    uint64_t forward_key = 0;    // passes - 1 at the last training pass
    // What the last pass read: the model's write counts then, and the call
    // that has overwritten its inputs since (null while they are intact).
    struct PassRecord {
        uint64_t param_writes = 0, state_writes = 0;
        const char *inputs_replaced_by = nullptr;
    } pass;
    ArenaPlan arena_plan;
    DeviceBuffer arena, aux;
    std::vector<float *> acts;   // acts[i] output of node i (acts[0] the inputs)
    std::vector<float *> auxes;  // auxes[i] the values node i keeps, or null
    LayerPlans plans;
    DeviceBuffer workspace;
    // Sequence models: the valid steps per sample of the inputs set
    // ([max_batch] int32 on the device), used while has_lengths; setting
    // inputs clears it (every sample full length).
    DeviceBuffer lengths;
    bool has_lengths = false;
    // Token models: the floats snn_set_tokens converts ids into (host,
    // max_batch x T), so setting tokens allocates nothing.
    std::vector<float> token_staging;
    // Inference rewrites: null while off (the default); see InferenceFold.
    // forward_rewritten: the last pass ran them (its nodes' buffers then
    // hold what backprop cannot differentiate).
    std::unique_ptr<InferenceRewrites> rewrites;
    bool forward_rewritten = false;
};

void forward_cache_init(ForwardCache &c, const Model &m, int64_t max_batch);
// Throws SNN_ERR_UNSUPPORTED when `be` cannot run net at precision p: the
// backend lacks it, or a node with products has no kernels for it.
void check_precision(const Network &net, Backend &be, Precision p);
// Makes the cache's next passes run at precision p (re-plans its nodes once,
// an allocation outside the training loop). On failure unchanged.
void forward_cache_set_precision(ForwardCache &c, Precision p);
// Moves a cache made for `m` on another device to m's device, keeping its
// batch, inputs and outputs (a one-off allocation and copy). On failure the
// cache is unchanged.
void forward_cache_follow(ForwardCache &c, const Model &m);
// Runs the model on the cache's inputs (SNN_ERR_STATE when none are set
// for the current batch) and records what it read (ForwardCache::pass). A
// training-mode pass updates the running statistics: the model is mutable.
void forward_pass(ForwardCache &c, Model &m);
// Turns the cache's inference rewrites on (made for its network, on its
// backend: a one-off allocation) or off.
void forward_set_rewrites(ForwardCache &c, bool on);
// The rewrites that apply to the cache's next pass, their folded parameters
// made again if the model's parameters or state changed since; null when
// none apply (off, training mode, not float32, not the CPU, nothing to fold).
InferenceRewrites *rewrites_for_pass(ForwardCache &c, const Model &m);

struct LossScaler {
    bool enabled = false;
    double scale = 65536.0, growth = 2.0, backoff = 0.5;
    int64_t growth_interval = 2000;
    int64_t good_steps = 0;   // finite steps since the scale last changed
    bool found_inf = false;   // the last backprop's gradient was not finite: skip its step
    // Before the last backprop's update, so gradients set afterwards
    // (snn_set_gradients, e.g. summed over ranks) can redo it.
    double scale_before = 65536.0;
    int64_t good_steps_before = 0;
};

// The scaler's update after a step whose gradient was finite or not. The
// scale stays a finite float of at least FLT_MIN: a backoff below it stops
// there, a growth that would overflow is not made.
void loss_scaler_update(LossScaler &sc, bool finite);

// Turns scaling on with these settings and state, after checking them
// (scale a finite float of at least FLT_MIN, growth > 1, backoff in (0, 1),
// growth_interval and good_steps in [1, 2^53] and [0, growth_interval));
// SNN_ERR_INVALID_ARGUMENT naming the value otherwise, the scaler unchanged.
void loss_scaler_set(LossScaler &sc, double scale, double growth, double backoff, int64_t growth_interval,
                     int64_t good_steps);

struct BackwardCache {
    Network net;
    uint64_t model_id = 0, placement = 0;
    Backend *backend = nullptr;
    OwnedStream stream;
    int64_t max_batch = 0;
    DeviceBuffer grads, targets, labels, loss, input_grad;
    // Gradients of the nodes' outputs in an arena (memory reused once a
    // gradient is consumed), and two scratch slices for accumulating a
    // gradient that reaches a node from several consumers.
    ArenaPlan arena_plan;
    DeviceBuffer arena, scratch;
    std::vector<float *> deltas;      // deltas[i] dL/d(output of node i)'s memory
    std::vector<char> requires_grad;  // per node, for the current setting
    std::vector<size_t> owner;        // per node, the node whose memory its output is
    std::vector<char> written;        // per owner, during a pass: its gradient has a value
    int64_t targets_batch = -1, labels_batch = -1;
    double loss_params[kLossCount] = {};  // per loss, its parameter (from its default)
    bool want_input_grad = false;
    int64_t input_grad_batch = -1;
    int64_t grads_batch = -1;    // batch of the last backprop, -1 when none
    bool grads_finite = true;
    LayerPlans plans;
    Precision plan_precision = Precision::f32;  // what plans and workspace were made for
    DeviceBuffer workspace;
    // Dynamic loss scaling (torch.cuda.amp.GradScaler's rule), on while
    // scaler.enabled: backprop multiplies the loss's gradient by scale,
    // divides the parameter gradients by it and checks them; a non-finite
    // one marks the step skipped (found_inf, no error), halves the scale by
    // backoff and restarts the count of good steps; growth_interval good
    // steps in a row multiply it by growth.
    LossScaler scaler;
};

void backward_cache_init(BackwardCache &c, const Model &m, int64_t max_batch);
// As forward_cache_follow, keeping targets, labels and the last gradient.
void backward_cache_follow(BackwardCache &c, const Model &m);
// Throws SNN_ERR_STATE when the targets or labels the loss reads are not set
// for a batch of n.
void check_loss_inputs(const BackwardCache &b, const LossDesc &d, int64_t n);
// Labels per sample: 1, or T for a sequence output (one per step).
inline size_t labels_per_sample(const Network &net) { return size_t(net.output().steps()); }
// Loss and gradients; *loss_host written when non-null. Throws
// SNN_ERR_INVALID_ARGUMENT for an unknown loss id and as check_loss_inputs.
void backprop_loss(BackwardCache &b, ForwardCache &f, const Model &m, int32_t loss, float *loss_host);
// Gradients from a host gradient of the outputs (count = batch * outputs).
void backprop_output_grad(BackwardCache &b, ForwardCache &f, const Model &m, const float *grad_host);

struct Optimiser {
    uint64_t model_id = 0, placement = 0;
    Backend *backend = nullptr;
    OptKind kind = OptKind::adam;
    // The hyperparameters (engine/hyperparameters.h); those the kind has
    // start at its defaults (core/optimisers.h). nesterov is 0 or 1.
    double lr = 0, momentum = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0, alpha = 0,
           nesterov = 0, dampening = 0, max_grad_norm = 0;
    int64_t steps = 0;
    size_t count = 0;
    // For reset, ordered after the steps queued so far; steps run on the
    // model's stream.
    OwnedStream stream;
    DeviceBuffer m, v;
    // Clipping: kGradNormDoubles doubles, [0] the gradient norm of the last
    // step when it clipped (norm_written).
    DeviceBuffer norm;
    bool norm_written = false;
};

void optimiser_init(Optimiser &o, const Model &model, OptKind kind);
void optimiser_reset(Optimiser &o);
// Moves the optimiser's state (moments, step count) to m's device, as
// PyTorch's optimiser state follows its parameters. On failure unchanged.
void optimiser_follow(Optimiser &o, const Model &m);
void optimiser_step(Optimiser &o, Model &model, const BackwardCache &b);
// The L2 norm of the gradient of the last step, which clipped (after it).
// Throws SNN_ERR_STATE when the last step did not clip or there was none.
double optimiser_grad_norm(const Optimiser &o);

// Copies bytes from a buffer of `from` to a buffer of `to` (either may be the
// CPU) and waits until the copy is complete.
void copy_across(Backend &from, Stream *from_stream, const void *src, Backend &to, Stream *to_stream,
                 void *dst, size_t bytes);

}  // namespace snn
