// Inference rewrites (snn_cache_set_inference_rewrites): a batchnorm folded
// into the convolution or dense layer before it, and a relu after it into
// that layer's output pass, for inference-mode float32 passes on the CPU.
//
// With s = weight / sqrt(running_var + eps) per channel (batchnorm's weight),
// the product's rows of weights are scaled by s and its bias becomes
// (bias - running_mean) s + batchnorm's bias: the batchnorm's output in one
// pass instead of a pass that writes the product and one that reads it back
// (and a third for the relu). The model's parameters stay as they are (as
// PyTorch's); the folded copy is the cache's, made again whenever the
// model's parameters or running statistics were written since, and before
// every pass once snn_parameters gave out a writable view of them.
#include <algorithm>

#include "common/error.h"
#include "core/math.h"
#include "engine/network.h"

namespace snn {

InferenceRewrites::~InferenceRewrites() {
    for (const InferenceFold &f : folds)
        if (f.plan) f.kernels->release(*be, f.plan);
}

namespace {

// Nodes that read node i's output.
std::vector<std::vector<size_t>> readers_of(const Network &net) {
    std::vector<std::vector<size_t>> readers(net.layers.size());
    for (size_t k = 1; k < net.layers.size(); ++k)
        for (int32_t i : net.layers[k].inputs) readers[size_t(i)].push_back(k);
    return readers;
}

bool is_output(const std::vector<size_t> &owner, size_t i) { return owner.back() == owner[i]; }

// The fold that starts at batchnorm node `norm`, if it has one.
bool find_fold(const Network &net, const std::vector<size_t> &owner, const std::vector<std::vector<size_t>> &readers,
               size_t norm, InferenceFold *f) {
    const Layer &bn = net.layers[norm];
    if (bn.kind != OpKind::batchnorm || bn.alias || bn.inputs.size() != 1 || is_output(owner, norm)) return false;
    const size_t product = size_t(bn.inputs[0]);
    const Layer &p = net.layers[product];
    if (product == 0 || p.alias || p.act != Act::identity || readers[product].size() != 1) return false;
    if (p.kind == OpKind::conv) {
        if (!p.out.is_image) return false;
    } else if (p.kind == OpKind::dense) {
        if (p.in.is_seq || p.out.is_seq || p.out.is_image) return false;
    } else {
        return false;
    }
    f->product = product;
    f->norm = norm;
    f->act = 0;
    f->last = norm;
    if (readers[norm].size() == 1) {
        const size_t r = readers[norm][0];
        const Layer &a = net.layers[r];
        if (a.kind == OpKind::activation && !a.alias && a.inputs.size() == 1 && a.act == Act::relu &&
            !is_output(owner, r)) {
            f->act = r;
            f->last = r;
        }
    }
    f->layer = p;
    f->layer.bias = true;
    f->layer.bias_count = size_t(p.units);
    f->layer.act = f->act ? Act::relu : Act::identity;
    return true;
}

// Folds the model's parameters and running statistics into every fold's copy.
void fold_parameters(InferenceRewrites &rw, const Network &net, const Model &m) {
    const float *params = m.params_ptr(), *state = m.state_ptr();
    float *out = rw.params.f();
    for (const InferenceFold &f : rw.folds) {
        const Layer &p = net.layers[f.product], &bn = net.layers[f.norm];
        const int64_t rows = p.units, per_row = int64_t(p.weight_count) / rows;
        const float *w = params + p.weight_offset, *b = p.bias ? params + p.bias_offset : nullptr;
        const float *gamma = params + bn.weight_offset, *beta = params + bn.bias_offset;
        const float *mean = state + bn.state_offset, *var = mean + rows;
        float *fw = out + f.layer.weight_offset, *fb = out + f.layer.bias_offset;
        for (int64_t r = 0; r < rows; ++r) {
            const float scale = gamma[r] * norm_invstd(double(var[r]), bn.eps);
            for (int64_t k = 0; k < per_row; ++k) fw[r * per_row + k] = w[r * per_row + k] * scale;
            fb[r] = ((b ? b[r] : 0.0f) - mean[r]) * scale + beta[r];
        }
    }
    rw.param_writes = m.param_writes.count;
    rw.state_writes = m.state_writes.count;
}

std::unique_ptr<InferenceRewrites> make_rewrites(const ForwardCache &c) {
    const Network &net = c.net;
    Backend &be = *c.backend;
    auto rw = std::make_unique<InferenceRewrites>();
    rw->be = &be;
    const size_t L = net.layers.size();
    rw->fold_of.assign(L, -1);
    rw->skipped.assign(L, 0);
    rw->acts = c.acts;
    if (be.device() >= 0) return rw;  // the CPU only, for now: nothing to fold on a GPU
    const std::vector<std::vector<size_t>> readers = readers_of(net);
    const std::vector<size_t> owner = memory_owners(net);
    size_t floats = 0;
    for (size_t i = 1; i < L; ++i) {
        InferenceFold f;
        if (!find_fold(net, owner, readers, i, &f)) continue;
        f.at = floats;
        f.layer.weight_offset = floats;
        f.layer.bias_offset = floats + f.layer.weight_count;
        floats += f.layer.weight_count + f.layer.bias_count;
        rw->folds.push_back(std::move(f));
    }
    size_t workspace = 0;
    for (size_t k = 0; k < rw->folds.size(); ++k) {
        InferenceFold &f = rw->folds[k];
        f.kernels = op_kernels(be, f.layer.kind);
        if (!f.kernels) fail(SNN_ERR_UNSUPPORTED, "%s has no '%s' op", be.name(), op_desc(f.layer.kind).name);
        if (f.kernels->plan) {
            size_t ws = 0;
            f.plan = f.kernels->plan(be, c.stream.get(), f.layer, c.max_batch, false, Precision::f32, &ws);
            workspace = std::max(workspace, ws);
        }
        rw->fold_of[f.product] = int32_t(k);
        rw->skipped[f.norm] = 1;
        if (f.act) rw->skipped[f.act] = 1;
        // Readers of the last node folded (and of its aliases) read the product's buffer.
        for (size_t i = 0; i < L; ++i)
            if (owner[i] == f.last) rw->acts[i] = c.acts[f.product];
    }
    rw->params = DeviceBuffer(be, floats * sizeof(float));
    rw->workspace = DeviceBuffer(be, workspace);
    return rw;
}

}  // namespace

void forward_set_rewrites(ForwardCache &c, bool on) {
    if (!on) {
        c.rewrites.reset();
        return;
    }
    if (!c.rewrites) c.rewrites = make_rewrites(c);
}

InferenceRewrites *rewrites_for_pass(ForwardCache &c, const Model &m) {
    InferenceRewrites *rw = c.rewrites.get();
    if (!rw || c.training || c.precision != Precision::f32 || rw->folds.empty()) return nullptr;
    if (m.params_viewed || rw->param_writes != m.param_writes.count || rw->state_writes != m.state_writes.count)
        fold_parameters(*rw, c.net, m);
    return rw;
}

}  // namespace snn
