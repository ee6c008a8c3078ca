// Models, caches, and the forward and backward passes over the layers.
#include "engine/network.h"

#include <atomic>

#include "common/error.h"
#include "device/devices.h"

namespace snn {
namespace {

std::atomic<uint64_t> g_next_model_id{1};
std::atomic<uint64_t> g_next_placement{1};

// n * per_sample floats, checked against size_t overflow.
size_t batch_floats(int64_t n, size_t per_sample) {
    if (per_sample != 0 && size_t(n) > (SIZE_MAX / sizeof(float)) / per_sample)
        fail(SNN_ERR_BATCH, "batch %lld x %zu floats does not fit in memory", (long long)n, per_sample);
    return size_t(n) * per_sample;
}

bool has_params(const Layer &l) { return l.kind == LayerKind::dense || l.kind == LayerKind::conv; }

}  // namespace

// ---- plans -------------------------------------------------------------------

LayerPlans::~LayerPlans() {
    for (const Plan &p : plans_) {
        if (!p.plan) continue;
        if (p.conv)
            be_->conv_plan_release(p.plan);
        else
            be_->pool_plan_release(p.plan);
    }
}

size_t LayerPlans::make(Backend &be, Stream *s, const Network &net, int64_t max_batch, bool backward) {
    be_ = &be;
    plans_.assign(net.layers.size(), Plan{nullptr, false});
    size_t workspace = 0;
    for (size_t i = 1; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        if (l.kind == LayerKind::conv) {
            size_t ws = 0;
            plans_[i] = {be.conv_plan(s, l.conv_dims(), max_batch, backward, &ws), true};
            if (ws > workspace) workspace = ws;
        } else if (l.kind == LayerKind::maxpool || l.kind == LayerKind::avgpool) {
            plans_[i] = {be.pool_plan(s, l.pool_dims(), l.kind == LayerKind::maxpool, max_batch), false};
        }
    }
    return workspace;
}

void copy_across(Backend &from, Stream *from_stream, const void *src, Backend &to, Stream *to_stream,
                 void *dst, size_t bytes) {
    if (bytes == 0) return;
    if (from.device() == SNN_DEVICE_CPU) {
        from.synchronize(from_stream);
        to.upload(to_stream, dst, src, bytes);
        to.synchronize(to_stream);
    } else if (to.device() == SNN_DEVICE_CPU) {
        to.synchronize(to_stream);
        from.download(from_stream, dst, src, bytes);
    } else {
        DeviceBuffer host(cpu_backend(), bytes);
        from.download(from_stream, host.get(), src, bytes);
        to.upload(to_stream, dst, host.get(), bytes);
        to.synchronize(to_stream);
    }
}

// ---- models ------------------------------------------------------------------

void model_init_on_cpu(Model &m, Network net, uint64_t seed) {
    Backend &be = cpu_backend();
    m.net = std::move(net);
    m.backend = &be;
    m.stream = OwnedStream(be, 0, false);
    m.params = DeviceBuffer(be, m.net.param_count * sizeof(float));
    init_parameters(m.net, seed, m.params.f());
    m.id = g_next_model_id++;
    m.placement = g_next_placement++;
}

void model_reinit(Model &m, uint64_t seed) {
    const size_t bytes = m.net.param_count * sizeof(float);
    if (m.backend->device() == SNN_DEVICE_CPU) {
        init_parameters(m.net, seed, m.params.f());
        return;
    }
    // Initialise on the host, then upload (a one-off, not a training-loop call).
    Backend &cpu = cpu_backend();
    DeviceBuffer host(cpu, bytes);
    init_parameters(m.net, seed, host.f());
    m.backend->upload(m.stream.get(), m.params.get(), host.get(), bytes);
    m.backend->synchronize(m.stream.get());
}

void model_move(Model &m, Backend &to) {
    if (&to == m.backend) return;
    const size_t bytes = m.net.param_count * sizeof(float);
    OwnedStream stream(to, 0, false);
    DeviceBuffer params(to, bytes);
    copy_across(*m.backend, m.stream.get(), m.params.get(), to, stream.get(), params.get(), bytes);
    m.params = std::move(params);
    m.stream = std::move(stream);
    m.backend = &to;
    m.placement = g_next_placement++;
}

// ---- forward -----------------------------------------------------------------

void forward_cache_init(ForwardCache &c, const Model &m, int64_t max_batch) {
    Backend &be = *m.backend;
    c.net = m.net;
    const Network &net = c.net;
    c.model_id = m.id;
    c.placement = m.placement;
    c.backend = &be;
    c.max_batch = max_batch;
    c.batch = max_batch;
    const size_t in_floats = batch_floats(max_batch, size_t(net.input().size()));
    c.stream = OwnedStream(be, in_floats * sizeof(float), allow_tf32_enabled());
    c.acts.assign(net.layers.size(), nullptr);
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        if (l.kind == LayerKind::flatten) {  // same memory, new shape
            c.acts[i] = c.acts[i - 1];
            continue;
        }
        c.storage.emplace_back(be, batch_floats(max_batch, size_t(l.out.size())) * sizeof(float));
        c.acts[i] = c.storage.back().f();
    }
    size_t ws = c.plans.make(be, c.stream.get(), net, max_batch, false);
    c.workspace = DeviceBuffer(be, ws);
}

void forward_cache_follow(ForwardCache &c, const Model &m) {
    ForwardCache to;
    forward_cache_init(to, m, c.max_batch);
    // Only what holds values: the inputs set and the last pass's activations.
    for (size_t i = 0; i < c.net.layers.size(); ++i) {
        const Layer &l = c.net.layers[i];
        const int64_t n = i == 0 ? c.input_batch : c.forward_batch;
        if (l.kind == LayerKind::flatten || n < 1) continue;
        copy_across(*c.backend, c.stream.get(), c.acts[i], *to.backend, to.stream.get(), to.acts[i],
                    size_t(n) * size_t(l.out.size()) * sizeof(float));
    }
    to.batch = c.batch;
    to.input_batch = c.input_batch;
    to.forward_batch = c.forward_batch;
    c = std::move(to);
}

void forward_pass(ForwardCache &c, const Model &m) {
    Backend &be = *c.backend;
    Stream *s = c.stream.get();
    const int64_t n = c.input_batch;
    const float *params = m.params_ptr();
    be.wait(s, m.stream.get());
    for (size_t i = 1; i < m.net.layers.size(); ++i) {
        const Layer &l = m.net.layers[i];
        const float *x = c.acts[i - 1];
        float *y = c.acts[i];
        switch (l.kind) {
            case LayerKind::dense:
                be.dense_forward(s, l.dense_dims(), n, x, params + l.weight_offset,
                                 params + l.bias_offset, y);
                break;
            case LayerKind::conv:
                be.conv_forward(s, c.plans[i], l.conv_dims(), n, x, params + l.weight_offset,
                                params + l.bias_offset, y, c.workspace.get());
                break;
            case LayerKind::maxpool:
                be.maxpool_forward(s, c.plans[i], l.pool_dims(), n, x, y);
                break;
            case LayerKind::avgpool:
                be.avgpool_forward(s, c.plans[i], l.pool_dims(), n, x, y);
                break;
            case LayerKind::flatten:
            case LayerKind::input:
                break;
        }
    }
    c.forward_batch = n;
}

// ---- backward ----------------------------------------------------------------

void backward_cache_init(BackwardCache &b, const Model &m, int64_t max_batch) {
    Backend &be = *m.backend;
    b.net = m.net;
    const Network &net = b.net;
    b.model_id = m.id;
    b.placement = m.placement;
    b.backend = &be;
    b.max_batch = max_batch;
    const size_t out = size_t(net.output().size());
    const size_t delta = batch_floats(max_batch, net.max_activation);
    const size_t staging = std::max(batch_floats(max_batch, out) * sizeof(float),
                                    size_t(max_batch) * sizeof(int32_t));
    b.stream = OwnedStream(be, staging, allow_tf32_enabled());
    b.grads = DeviceBuffer(be, net.param_count * sizeof(float));
    b.delta0 = DeviceBuffer(be, delta * sizeof(float));
    b.delta1 = DeviceBuffer(be, delta * sizeof(float));
    b.targets = DeviceBuffer(be, batch_floats(max_batch, out) * sizeof(float));
    b.labels = DeviceBuffer(be, size_t(max_batch) * sizeof(int32_t));
    b.loss = DeviceBuffer(be, sizeof(float));
    b.input_grad = DeviceBuffer(be, batch_floats(max_batch, size_t(net.input().size())) * sizeof(float));
    size_t ws = b.plans.make(be, b.stream.get(), net, max_batch, true);
    b.workspace = DeviceBuffer(be, ws);
}

void backward_cache_follow(BackwardCache &b, const Model &m) {
    BackwardCache to;
    backward_cache_init(to, m, b.max_batch);
    // Only what holds values: targets, labels and gradients that were set.
    auto carry = [&](const DeviceBuffer &src, DeviceBuffer &dst, int64_t n, size_t per_sample, size_t size) {
        if (n < 0) return;
        copy_across(*b.backend, b.stream.get(), src.get(), *to.backend, to.stream.get(), dst.get(),
                    size_t(n) * per_sample * size);
    };
    const size_t outputs = size_t(b.net.output().size()), inputs = size_t(b.net.input().size());
    carry(b.targets, to.targets, b.targets_batch, outputs, sizeof(float));
    carry(b.labels, to.labels, b.labels_batch, 1, sizeof(int32_t));
    carry(b.grads, to.grads, b.grads_batch < 0 ? -1 : 1, b.net.param_count, sizeof(float));
    carry(b.input_grad, to.input_grad, b.input_grad_batch, inputs, sizeof(float));
    to.targets_batch = b.targets_batch;
    to.labels_batch = b.labels_batch;
    to.want_input_grad = b.want_input_grad;
    to.input_grad_batch = b.input_grad_batch;
    to.grads_batch = b.grads_batch;
    to.grads_finite = b.grads_finite;
    b = std::move(to);
}

namespace {

// Walks the layers from the last to the first. `dy` holds dL/d(output of the
// last layer) in delta0 on entry.
void backward_layers(BackwardCache &b, ForwardCache &f, const Model &m, int64_t n) {
    Backend &be = *b.backend;
    Stream *s = b.stream.get();
    const float *params = m.params_ptr();
    float *grads = b.grads.f();
    const auto &layers = m.net.layers;
    // Input gradients are needed only above the first layer with parameters,
    // unless the caller asked for the gradient of the inputs.
    size_t first_param = layers.size();
    for (size_t i = 1; i < layers.size(); ++i)
        if (has_params(layers[i])) {
            first_param = i;
            break;
        }
    float *dy = b.delta0.f();
    float *spare = b.delta1.f();
    for (size_t i = layers.size() - 1; i >= 1; --i) {
        const Layer &l = layers[i];
        const bool need_dx = i > first_param || b.want_input_grad;
        float *dx = !need_dx ? nullptr : (i == 1 ? b.input_grad.f() : spare);
        const float *x = f.acts[i - 1];
        const float *y = f.acts[i];
        switch (l.kind) {
            case LayerKind::dense:
                be.dense_backward(s, l.dense_dims(), n, x, params + l.weight_offset, y, dy,
                                  grads + l.weight_offset, grads + l.bias_offset, dx);
                break;
            case LayerKind::conv:
                be.conv_backward(s, b.plans[i], l.conv_dims(), n, x, params + l.weight_offset, y,
                                 dy, grads + l.weight_offset, grads + l.bias_offset, dx,
                                 b.workspace.get());
                break;
            case LayerKind::maxpool:
                if (dx) be.maxpool_backward(s, b.plans[i], l.pool_dims(), n, x, y, dy, dx);
                break;
            case LayerKind::avgpool:
                if (dx) be.avgpool_backward(s, b.plans[i], l.pool_dims(), n, dy, dx);
                break;
            case LayerKind::flatten:
            case LayerKind::input:
                // Same memory, new shape: the gradient passes through.
                if (i == 1 && dx) be.copy(s, dx, dy, size_t(n * l.in.size()) * sizeof(float));
                continue;
        }
        if (!dx) break;
        spare = dy;
        dy = dx;
    }
    b.input_grad_batch = b.want_input_grad ? n : -1;
    b.grads_batch = n;
}

void finish_backward(BackwardCache &b, ForwardCache &f) {
    if (check_finite_enabled())
        b.grads_finite = b.backend->all_finite(b.stream.get(), b.grads.f(), b.net.param_count);
    else
        b.grads_finite = true;
    // The forward cache may overwrite its activations only after backprop read them.
    b.backend->wait(f.stream.get(), b.stream.get());
}

}  // namespace

void backprop_loss(BackwardCache &b, ForwardCache &f, const Model &m, int32_t loss, float *loss_host) {
    Backend &be = *b.backend;
    Stream *s = b.stream.get();
    const int64_t n = f.forward_batch, k = m.net.output().size();
    be.wait(s, f.stream.get());
    be.wait(s, m.stream.get());
    const float *y = f.acts.back();
    if (loss == SNN_LOSS_MSE)
        be.mse_loss(s, n, k, y, b.targets.f(), b.delta0.f(), b.loss.f());
    else
        be.xent_loss(s, n, k, y, b.labels.i32(), b.delta0.f(), b.loss.f());
    backward_layers(b, f, m, n);
    float value = 0.0f;
    if (loss_host || check_finite_enabled()) be.download(s, &value, b.loss.get(), sizeof(float));
    finish_backward(b, f);
    if (check_finite_enabled() && !(value - value == 0.0f)) b.grads_finite = false;
    if (loss_host) *loss_host = value;
}

void backprop_output_grad(BackwardCache &b, ForwardCache &f, const Model &m, const float *grad_host) {
    Backend &be = *b.backend;
    Stream *s = b.stream.get();
    const int64_t n = f.forward_batch;
    be.wait(s, f.stream.get());
    be.wait(s, m.stream.get());
    be.upload(s, b.delta0.get(), grad_host, size_t(n * m.net.output().size()) * sizeof(float));
    backward_layers(b, f, m, n);
    finish_backward(b, f);
}

}  // namespace snn
