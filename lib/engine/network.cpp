// Models, caches, and the forward and backward passes over the layers.
#include "engine/network.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <map>
#include <queue>
#include <set>

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

}  // namespace

// ---- plans -------------------------------------------------------------------

LayerPlans::~LayerPlans() {
    for (const Plan &p : plans_)
        if (p.plan) p.kernels->release(*be_, p.plan);
}

const char *precision_name(Precision p) {
    switch (p) {
        case Precision::f32: return "float32";
        case Precision::bf16: return "bf16";
        case Precision::f16: return "fp16";
    }
    return "?";
}

size_t LayerPlans::make(Backend &be, Stream *s, const Network &net, int64_t max_batch, bool backward,
                        Precision precision) {
    be_ = &be;
    plans_.assign(net.layers.size(), Plan{nullptr, nullptr});
    size_t workspace = 0;
    for (size_t i = 1; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        const OpKernels *k = op_kernels(be, l.kind);
        if (!k) fail(SNN_ERR_UNSUPPORTED, "%s: %s has no '%s' op", layer_label(net, i).c_str(), be.name(),
                     op_desc(l.kind).name);
        plans_[i].kernels = k;
        if (!k->plan) continue;
        size_t ws = 0;
        try {
            plans_[i].plan = k->plan(be, s, l, max_batch, backward, precision, &ws);
        } catch (const Error &e) {
            fail(e.status(), "%s: %s", layer_label(net, i).c_str(), e.what());
        }
        if (ws > workspace) workspace = ws;
    }
    return workspace;
}

// ---- arenas ------------------------------------------------------------------

std::vector<size_t> memory_owners(const Network &net) {
    std::vector<size_t> owner(net.layers.size());
    for (size_t i = 0; i < net.layers.size(); ++i)
        owner[i] = net.layers[i].alias ? owner[size_t(net.layers[i].inputs[0])] : i;
    return owner;
}

namespace {

constexpr size_t kAlignFloats = 16;  // 64 bytes
constexpr size_t kForever = SIZE_MAX;

size_t round_up(size_t floats) { return (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

struct Interval {
    size_t node, floats, first, last;  // lifetime [first, last] in steps
};

// The free slices of a buffer being planned, by offset and by size: a slice
// is taken best fit, or from the buffer's end, which then grows; a slice
// given back merges with its free neighbours. Each call is O(log n).
class FreeSlices {
public:
    // The offset of `floats` floats; *end is the buffer's size, grown as needed.
    size_t take(size_t floats, size_t *end) {
        const auto fit = by_size_.lower_bound({floats, 0});
        if (fit != by_size_.end()) {
            const size_t at = fit->second, have = fit->first;
            erase(at, have);
            if (have > floats) insert(at + floats, have - floats);
            return at;
        }
        size_t at = *end;
        if (!by_offset_.empty()) {
            const auto last = std::prev(by_offset_.end());
            if (last->first + last->second == *end) {
                at = last->first;
                erase(last->first, last->second);
            }
        }
        *end = at + floats;
        return at;
    }

    void give_back(size_t at, size_t floats) {
        const auto next = by_offset_.lower_bound(at);
        if (next != by_offset_.end() && at + floats == next->first) {
            floats += next->second;
            erase(next->first, next->second);
        }
        const auto after = by_offset_.lower_bound(at);
        if (after != by_offset_.begin()) {
            const auto prev = std::prev(after);
            if (prev->first + prev->second == at) {
                at = prev->first;
                floats += prev->second;
                erase(prev->first, prev->second);
            }
        }
        insert(at, floats);
    }

private:
    void insert(size_t at, size_t floats) {
        by_offset_.emplace(at, floats);
        by_size_.emplace(floats, at);
    }
    void erase(size_t at, size_t floats) {
        by_offset_.erase(at);
        by_size_.erase({floats, at});
    }

    std::map<size_t, size_t> by_offset_;           // offset -> floats
    std::set<std::pair<size_t, size_t>> by_size_;  // (floats, offset)
};

// Places intervals in one buffer, largest first, each at the lowest offset
// free of every placed interval whose lifetime overlaps its own. O(n^2).
ArenaPlan place_by_size(const std::vector<Interval> &items, size_t nodes) {
    ArenaPlan plan;
    plan.offset.assign(nodes, SIZE_MAX);
    std::vector<Interval> order = items;
    std::stable_sort(order.begin(), order.end(), [](const Interval &a, const Interval &b) { return a.floats > b.floats; });
    std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of overlapping placed items
    std::vector<Interval> placed;
    for (const Interval &it : order) {
        busy.clear();
        for (const Interval &p : placed)
            if (!(p.last < it.first || it.last < p.first))
                busy.emplace_back(plan.offset[p.node], plan.offset[p.node] + p.floats);
        std::sort(busy.begin(), busy.end());
        size_t at = 0;
        for (const auto &b : busy) {
            if (at + it.floats <= b.first) break;
            at = std::max(at, b.second);
        }
        plan.offset[it.node] = at;
        plan.floats = std::max(plan.floats, at + it.floats);
        placed.push_back(it);
    }
    return plan;
}

// Places intervals in one buffer by a sweep over the steps: before the values
// born at a step are placed (largest first), the values whose lifetime ended
// give their slices back. O(n log n), but a chain whose values grow towards
// its end packs worse than by size (20% more memory for a backward pass of
// the default Fashion-MNIST CNN).
ArenaPlan place_by_sweep(const std::vector<Interval> &items, size_t nodes) {
    ArenaPlan plan;
    plan.offset.assign(nodes, SIZE_MAX);
    std::vector<Interval> order = items;
    std::sort(order.begin(), order.end(), [](const Interval &a, const Interval &b) {
        if (a.first != b.first) return a.first < b.first;
        return a.floats != b.floats ? a.floats > b.floats : a.node < b.node;
    });
    using Live = std::pair<size_t, size_t>;  // (last step, index in order)
    std::priority_queue<Live, std::vector<Live>, std::greater<Live>> live;
    FreeSlices slices;
    for (size_t k = 0; k < order.size(); ++k) {
        const Interval &it = order[k];
        for (; !live.empty() && live.top().first < it.first; live.pop()) {
            const Interval &done = order[live.top().second];
            slices.give_back(plan.offset[done.node], done.floats);
        }
        plan.offset[it.node] = slices.take(it.floats, &plan.floats);
        if (it.last != kForever) live.emplace(it.last, k);
    }
    return plan;
}

// The most values placed by size: 4096^2 / 2 overlap tests take about 10 ms.
constexpr size_t kMaxPlacedBySize = 4096;

// Two values share memory only when their lifetimes are disjoint.
ArenaPlan place(const std::vector<Interval> &items, size_t nodes) {
    return items.size() <= kMaxPlacedBySize ? place_by_size(items, nodes) : place_by_sweep(items, nodes);
}

// Forward: a value lives from its node to its last reader, or to the end
// when the backward pass reads it (an op keeps its input or output), or it
// is the inputs or the outputs. Slices are per sample sizes x max_batch.
ArenaPlan plan_forward(const Network &net, int64_t max_batch) {
    const size_t L = net.layers.size();
    const std::vector<size_t> owner = memory_owners(net);
    std::vector<size_t> last(L, 0);
    std::vector<char> kept(L, 0);
    kept[0] = 1;
    kept[owner[L - 1]] = 1;
    for (size_t i = 1; i < L; ++i) {
        const Layer &l = net.layers[i];
        if (l.keeps_output) kept[owner[i]] = 1;
        for (int32_t k : l.inputs) {
            const size_t o = owner[size_t(k)];
            last[o] = std::max(last[o], i);
            if (l.keeps_input) kept[o] = 1;
        }
    }
    std::vector<Interval> items;
    for (size_t i = 0; i < L; ++i)
        if (owner[i] == i)
            items.push_back({i, round_up(batch_floats(max_batch, size_t(net.layers[i].out.size()))), i,
                             kept[i] ? kForever : std::max(last[i], i)});
    return place(items, L);
}

// Backward: steps run from the last node (step 0) to the first. The gradient
// of a value lives from its last reader's backward step to its own node's.
// The inputs' gradient has a buffer of its own (input_grad).
ArenaPlan plan_backward(const Network &net, int64_t max_batch) {
    const size_t L = net.layers.size();
    const std::vector<size_t> owner = memory_owners(net);
    std::vector<size_t> last(L, 0);
    last[owner[L - 1]] = L - 1;
    for (size_t i = 1; i < L; ++i)
        for (int32_t k : net.layers[i].inputs) last[owner[size_t(k)]] = std::max(last[owner[size_t(k)]], i);
    std::vector<Interval> items;
    for (size_t i = 1; i < L; ++i)
        if (owner[i] == i)
            items.push_back({i, round_up(batch_floats(max_batch, size_t(net.layers[i].out.size()))), L - 1 - last[i],
                             L - 1 - i});
    return place(items, L);
}

size_t aux_floats(const Layer &l, int64_t max_batch) {
    return round_up(l.aux_fixed + batch_floats(max_batch, l.aux_per_sample));
}

}  // namespace

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

namespace {

// SNN_ERR_UNSUPPORTED naming the first op `be` lacks.
void check_supported(const Network &net, Backend &be) {
    for (size_t i = 1; i < net.layers.size(); ++i)
        if (!op_kernels(be, net.layers[i].kind))
            fail(SNN_ERR_UNSUPPORTED, "%s: the '%s' op is not available on %s", layer_label(net, i).c_str(),
                 op_desc(net.layers[i].kind).name, be.name());
}

}  // namespace

void model_init_on_cpu(Model &m, Network net, uint64_t seed) {
    Backend &be = cpu_backend();
    check_supported(net, be);
    m.net = std::move(net);
    m.backend = &be;
    m.stream = OwnedStream(be, 0, false);
    m.params = DeviceBuffer(be, m.net.param_count * sizeof(float));
    m.state = DeviceBuffer(be, m.net.state_count * sizeof(float));
    init_parameters(m.net, seed, m.params.f());
    init_state(m.net, m.state.f());
    m.id = g_next_model_id++;
    m.placement = g_next_placement++;
}

void model_reinit(Model &m, uint64_t seed) {
    m.param_writes.note("snn_model_init");
    m.state_writes.note("snn_model_init");
    if (m.backend->device() == SNN_DEVICE_CPU) {
        init_parameters(m.net, seed, m.params.f());
        init_state(m.net, m.state.f());
        return;
    }
    // Initialise on the host, then upload (a one-off, not a training-loop call).
    Backend &cpu = cpu_backend();
    DeviceBuffer params(cpu, m.net.param_count * sizeof(float)), state(cpu, m.net.state_count * sizeof(float));
    init_parameters(m.net, seed, params.f());
    init_state(m.net, state.f());
    model_write(m, m.params.get(), params.get(), params.bytes());
    model_write(m, m.state.get(), state.get(), state.bytes());
}

// The model's stream already waits for every pass queued on a cache (see
// Model), so the upload is ordered after their reads.
void model_write(Model &m, void *dst, const void *src_host, size_t bytes) {
    m.backend->upload(m.stream.get(), dst, src_host, bytes);
    m.backend->mark(m.stream.get());
    m.backend->synchronize(m.stream.get());
}

void model_move(Model &m, Backend &to) {
    if (&to == m.backend) return;
    check_supported(m.net, to);
    const size_t bytes = m.net.param_count * sizeof(float), state_bytes = m.net.state_count * sizeof(float);
    OwnedStream stream(to, 0, false);
    DeviceBuffer params(to, bytes), state(to, state_bytes);
    copy_across(*m.backend, m.stream.get(), m.params.get(), to, stream.get(), params.get(), bytes);
    copy_across(*m.backend, m.stream.get(), m.state.get(), to, stream.get(), state.get(), state_bytes);
    m.params = std::move(params);
    m.state = std::move(state);
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
    // Plans first: a layer the backend cannot run at max_batch is refused
    // before the large allocations.
    const size_t ws = c.plans.make(be, c.stream.get(), net, max_batch, false, c.precision);
    c.arena_plan = plan_forward(net, max_batch);
    c.arena = DeviceBuffer(be, c.arena_plan.floats * sizeof(float));
    const std::vector<size_t> owner = memory_owners(net);
    c.acts.assign(net.layers.size(), nullptr);
    for (size_t i = 0; i < net.layers.size(); ++i) c.acts[i] = c.arena.f() + c.arena_plan.offset[owner[i]];
    size_t aux = 0;
    for (const Layer &l : net.layers) aux += aux_floats(l, max_batch);
    c.aux = DeviceBuffer(be, aux * sizeof(float));
    // Zeroed once, so a cache that follows its model copies defined values
    // even where a pass wrote no aux (dropout in inference mode).
    be.fill(c.stream.get(), c.aux.f(), 0.0f, aux);
    c.auxes.assign(net.layers.size(), nullptr);
    aux = 0;
    for (size_t i = 0; i < net.layers.size(); ++i) {
        const size_t floats = aux_floats(net.layers[i], max_batch);
        if (floats) c.auxes[i] = c.aux.f() + aux;
        aux += floats;
    }
    c.workspace = DeviceBuffer(be, ws);
    if (net.input().is_seq) c.lengths = DeviceBuffer(be, size_t(max_batch) * sizeof(int32_t));
    if (net.input().is_tokens) c.token_staging.assign(size_t(max_batch) * size_t(net.input().steps()), 0.0f);
}

void check_precision(const Network &net, Backend &be, Precision p) {
    const char *why = nullptr;
    if (be.precision_support(p, &why) == PrecisionSupport::none)
        fail(SNN_ERR_UNSUPPORTED, "%s cannot compute in %s: %s", be.name(), precision_name(p), why ? why : "");
    for (size_t i = 1; i < net.layers.size(); ++i) {
        const OpKernels *k = op_kernels(be, net.layers[i].kind);
        if (k && op_desc(net.layers[i].kind).products && !(k->precisions & precision_bit(p)))
            fail(SNN_ERR_UNSUPPORTED, "%s: %s computes '%s' in float32 only, not in %s", layer_label(net, i).c_str(),
                 be.name(), op_desc(net.layers[i].kind).name, precision_name(p));
    }
}

void forward_cache_set_precision(ForwardCache &c, Precision p) {
    if (p == c.precision) return;
    check_precision(c.net, *c.backend, p);
    LayerPlans plans;
    const size_t ws = plans.make(*c.backend, c.stream.get(), c.net, c.max_batch, false, p);
    DeviceBuffer workspace(*c.backend, ws);
    c.backend->synchronize(c.stream.get());  // the old workspace may be in use
    c.plans = std::move(plans);
    c.workspace = std::move(workspace);
    c.precision = p;
}

void forward_cache_follow(ForwardCache &c, const Model &m) {
    check_precision(c.net, *m.backend, c.precision);
    ForwardCache to;
    to.precision = c.precision;
    forward_cache_init(to, m, c.max_batch);
    // Only what holds values: the inputs set, the last pass's kept values
    // and what its nodes saved for the backward pass.
    const std::vector<size_t> owner = memory_owners(c.net);
    for (size_t i = 0; i < c.net.layers.size(); ++i) {
        const Layer &l = c.net.layers[i];
        const int64_t n = i == 0 ? c.input_batch : c.forward_batch;
        if (n < 1) continue;
        if (owner[i] == i)
            copy_across(*c.backend, c.stream.get(), c.acts[i], *to.backend, to.stream.get(), to.acts[i],
                        size_t(n) * size_t(l.out.size()) * sizeof(float));
        if (c.auxes[i])
            copy_across(*c.backend, c.stream.get(), c.auxes[i], *to.backend, to.stream.get(), to.auxes[i],
                        (l.aux_fixed + size_t(n) * l.aux_per_sample) * sizeof(float));
    }
    if (c.has_lengths)
        copy_across(*c.backend, c.stream.get(), c.lengths.get(), *to.backend, to.stream.get(), to.lengths.get(),
                    size_t(c.input_batch) * sizeof(int32_t));
    to.has_lengths = c.has_lengths;
    to.batch = c.batch;
    to.input_batch = c.input_batch;
    to.forward_batch = c.forward_batch;
    to.training = c.training;
    to.forward_training = c.forward_training;
    to.forward_precision = c.forward_precision;
    to.forward_rewritten = c.forward_rewritten;
    if (c.rewrites) forward_set_rewrites(to, true);
    to.seed = c.seed;
    to.passes = c.passes;
    to.forward_key = c.forward_key;
    to.pass = c.pass;
    c = std::move(to);
}

namespace {

// What every kernel call of one pass shares. `state` is the model's
// writable state in a forward pass and null in a backward pass, which
// never reads it (batchnorm keeps what it needs in its aux values).
OpArgs pass_args(Backend &be, Stream *s, const Model &m, float *state, int64_t n, bool training,
                 void *workspace) {
    OpArgs a;
    a.be = &be;
    a.s = s;
    a.n = n;
    a.training = training;
    a.params = m.params_ptr();
    a.state = state;
    a.workspace = workspace;
    return a;
}

}  // namespace

void forward_pass(ForwardCache &c, Model &m) {
    if (c.input_batch < 1) fail(SNN_ERR_STATE, "no inputs set for the current batch (call snn_set_inputs first)");
    // The pass after the one counted 2^64 - 1 would draw pass 0's random
    // numbers again: it is refused until a new seed restarts the count.
    if (c.training && c.passes == UINT64_MAX)
        fail(SNN_ERR_STATE,
             "the dropout generator has counted 2^64 - 1 training passes since its seed, the most it can without "
             "repeating its random numbers (call snn_cache_set_seed)");
    Backend &be = *c.backend;
    Stream *s = c.stream.get();
    const int64_t n = c.input_batch;
    const auto &layers = m.net.layers;
    for (size_t i = 1; i < layers.size(); ++i)
        if (op_desc(layers[i].kind).check) op_desc(layers[i].kind).check(layers[i], n, c.training);
    // A training pass writes the running statistics: it waits for every read
    // the model's stream was ordered after. Any other pass only reads: it
    // waits for the last write.
    const bool writes_state = c.training && m.net.state_count;
    if (writes_state)
        be.wait(s, m.stream.get());
    else
        be.wait_mark(s, m.stream.get());
    OpArgs a = pass_args(be, s, m, m.state_ptr(), n, c.training, c.workspace.get());
    a.precision = c.precision;
    a.lengths = c.has_lengths ? c.lengths.i32() : nullptr;
    // Inference rewrites: folded nodes run as one shadow layer, the nodes
    // folded into it are skipped, and their readers read its output.
    const InferenceRewrites *rw = rewrites_for_pass(c, m);
    const std::vector<float *> &acts = rw ? rw->acts : c.acts;
    for (size_t i = 1; i < layers.size(); ++i) {
        const Layer &l = layers[i];
        if (l.alias) continue;
        if (rw && rw->skipped[i]) continue;
        a.l = &l;
        a.plan = c.plans[i];
        a.key = dropout_key(c.seed, c.passes, i);
        for (size_t j = 0; j < l.inputs.size(); ++j) a.x[j] = acts[size_t(l.inputs[j])];
        a.y = c.acts[i];
        a.aux = c.auxes[i];
        if (rw && rw->fold_of[i] >= 0) {
            const InferenceFold &f = rw->folds[size_t(rw->fold_of[i])];
            OpArgs folded = a;
            folded.l = &f.layer;
            folded.plan = f.plan;
            folded.params = rw->params.f();
            folded.workspace = rw->workspace.get();
            f.kernels->forward(folded);
            continue;
        }
        c.plans.kernels(i)->forward(a);
    }
    c.forward_rewritten = rw != nullptr;
    c.forward_batch = n;
    c.forward_training = c.training;
    c.forward_precision = c.precision;
    if (c.training) {
        c.forward_key = c.passes;
        ++c.passes;
    }
    // Later writes of the parameters or state come after this pass's reads;
    // running statistics it wrote come before later passes and reads.
    be.wait(m.stream.get(), s);
    if (writes_state) be.mark(m.stream.get());
    // What the pass read, after its own write of the state, so backprop can
    // tell whether it is still the pass that ran.
    if (writes_state) m.state_writes.note("snn_forward (training mode) of another cache");
    c.pass = {m.param_writes.count, m.state_writes.count, nullptr};
}

// ---- backward ----------------------------------------------------------------

// The smallest loss scale: FLT_MIN, the smallest normal float. Its inverse
// 2^126, by which the gradients are unscaled, is still a finite float, so a
// gradient that is finite in float32 unscales to a finite one and its step
// is taken; from 2^-128 down the inverse overflows a float (and from
// 2^-150 down the scale is 0 as a float), so every step would be skipped.
constexpr double kMinLossScale = FLT_MIN;

void loss_scaler_update(LossScaler &sc, bool finite) {
    sc.scale_before = sc.scale;
    sc.good_steps_before = sc.good_steps;
    sc.found_inf = !finite;
    if (!finite) {
        sc.scale = std::max(sc.scale * sc.backoff, kMinLossScale);
        sc.good_steps = 0;
    } else if (++sc.good_steps >= sc.growth_interval) {
        if (std::isfinite(float(sc.scale * sc.growth))) sc.scale *= sc.growth;
        sc.good_steps = 0;
    }
}

void loss_scaler_set(LossScaler &sc, double scale, double growth, double backoff, int64_t growth_interval,
                     int64_t good_steps) {
    if (!(double(float(scale)) >= kMinLossScale) || !std::isfinite(float(scale)))
        fail(SNN_ERR_INVALID_ARGUMENT,
             "the loss scale %g is %g as a float; it must be a finite float of at least FLT_MIN (%g), whose "
             "inverse (by which gradients are unscaled) is finite too",
             scale, double(float(scale)), kMinLossScale);
    if (!(growth > 1.0) || !std::isfinite(growth))
        fail(SNN_ERR_INVALID_ARGUMENT, "the growth factor %g is not finite and above 1", growth);
    if (!(backoff > 0.0 && backoff < 1.0))
        fail(SNN_ERR_INVALID_ARGUMENT, "the backoff factor %g is not in (0, 1)", backoff);
    if (growth_interval < 1 || growth_interval > (int64_t(1) << 53))
        fail(SNN_ERR_INVALID_ARGUMENT, "the growth interval %lld is not in [1, 2^53]", (long long)growth_interval);
    if (good_steps < 0 || good_steps >= growth_interval)
        fail(SNN_ERR_INVALID_ARGUMENT, "the count of good steps %lld is not in [0, growth interval %lld)",
             (long long)good_steps, (long long)growth_interval);
    sc.enabled = true;
    sc.scale = scale;
    sc.growth = growth;
    sc.backoff = backoff;
    sc.growth_interval = growth_interval;
    sc.good_steps = good_steps;
    sc.found_inf = false;
    sc.scale_before = scale;
    sc.good_steps_before = good_steps;
}

void backward_cache_init(BackwardCache &b, const Model &m, int64_t max_batch) {
    Backend &be = *m.backend;
    b.net = m.net;
    const Network &net = b.net;
    b.model_id = m.id;
    b.placement = m.placement;
    b.backend = &be;
    b.max_batch = max_batch;
    for (size_t i = 0; i < kLossCount; ++i) b.loss_params[i] = loss_desc(LossKind(i)).param.default_value;
    const size_t out = size_t(net.output().size());
    const size_t labels = size_t(max_batch) * labels_per_sample(net);
    const size_t staging = std::max(batch_floats(max_batch, out) * sizeof(float), labels * sizeof(int32_t));
    b.stream = OwnedStream(be, staging, allow_tf32_enabled());
    const size_t ws = b.plans.make(be, b.stream.get(), net, max_batch, true, b.plan_precision);
    b.grads = DeviceBuffer(be, net.param_count * sizeof(float));
    b.targets = DeviceBuffer(be, batch_floats(max_batch, out) * sizeof(float));
    b.labels = DeviceBuffer(be, labels * sizeof(int32_t));
    b.loss = DeviceBuffer(be, 2 * sizeof(float));  // the loss, and LossArgs::scale
    b.input_grad = DeviceBuffer(be, batch_floats(max_batch, size_t(net.input().size())) * sizeof(float));
    b.arena_plan = plan_backward(net, max_batch);
    b.arena = DeviceBuffer(be, b.arena_plan.floats * sizeof(float));
    b.owner = memory_owners(net);
    const std::vector<size_t> &owner = b.owner;
    // Scratch for a second gradient of one value (backward_layers), one half
    // per input of a node: as large as any value whose memory more than one
    // gradient reaches (the output's, and each reader's but an alias's,
    // which shares its input's memory and writes no gradient), whoever reads
    // it (a second input of add or concat, or any layer through from=).
    std::vector<size_t> writers(net.layers.size(), 0);
    ++writers[owner.back()];
    for (const Layer &l : net.layers)
        if (!l.alias)
            for (int32_t k : l.inputs) ++writers[owner[size_t(k)]];
    size_t scratch = 0;
    for (const Layer &l : net.layers)
        for (int32_t k : l.inputs)
            if (writers[owner[size_t(k)]] > 1)
                scratch = std::max(scratch, round_up(batch_floats(max_batch, size_t(net.layers[size_t(k)].out.size()))));
    b.scratch = DeviceBuffer(be, 2 * scratch * sizeof(float));
    b.deltas.assign(net.layers.size(), nullptr);
    for (size_t i = 0; i < net.layers.size(); ++i)
        b.deltas[i] = owner[i] == 0 ? b.input_grad.f() : b.arena.f() + b.arena_plan.offset[owner[i]];
    b.requires_grad.assign(net.layers.size(), 0);
    b.written.assign(net.layers.size(), 0);
    b.workspace = DeviceBuffer(be, ws);
}

void backward_cache_follow(BackwardCache &b, const Model &m) {
    BackwardCache to;
    to.plan_precision = b.plan_precision;
    backward_cache_init(to, m, b.max_batch);
    // Only what holds values: targets, labels and gradients that were set.
    auto carry = [&](const DeviceBuffer &src, DeviceBuffer &dst, int64_t n, size_t per_sample, size_t size) {
        if (n < 0) return;
        copy_across(*b.backend, b.stream.get(), src.get(), *to.backend, to.stream.get(), dst.get(),
                    size_t(n) * per_sample * size);
    };
    const size_t outputs = size_t(b.net.output().size()), inputs = size_t(b.net.input().size());
    carry(b.targets, to.targets, b.targets_batch, outputs, sizeof(float));
    carry(b.labels, to.labels, b.labels_batch, labels_per_sample(b.net), sizeof(int32_t));
    carry(b.grads, to.grads, b.grads_batch < 0 ? -1 : 1, b.net.param_count, sizeof(float));
    carry(b.input_grad, to.input_grad, b.input_grad_batch, inputs, sizeof(float));
    to.targets_batch = b.targets_batch;
    to.labels_batch = b.labels_batch;
    std::copy(b.loss_params, b.loss_params + kLossCount, to.loss_params);
    to.want_input_grad = b.want_input_grad;
    to.input_grad_batch = b.input_grad_batch;
    to.grads_batch = b.grads_batch;
    to.grads_finite = b.grads_finite;
    to.scaler = b.scaler;
    b = std::move(to);
}

namespace {

// Walks the nodes from the last to the first. dL/d(outputs) is in the last
// node's delta on entry. A node runs when a gradient must pass through it:
// it has parameters, or a node before it has (or the inputs' gradient is
// wanted). The first consumer to reach a value writes its gradient; later
// ones write into scratch and add it.
void backward_layers(BackwardCache &b, ForwardCache &f, const Model &m, int64_t n) {
    Backend &be = *b.backend;
    Stream *s = b.stream.get();
    const auto &layers = m.net.layers;
    const size_t L = layers.size();
    char *rg = b.requires_grad.data();
    rg[0] = b.want_input_grad;
    for (size_t i = 1; i < L; ++i) {
        const Layer &l = layers[i];
        rg[i] = l.has_params();
        for (int32_t k : l.inputs) rg[i] = rg[i] || rg[size_t(k)];
    }
    // Marks per owner of memory: a value and its aliases share one gradient.
    const std::vector<size_t> &owner = b.owner;
    std::fill(b.written.begin(), b.written.end(), 0);
    b.written[owner[L - 1]] = 1;
    OpArgs a = pass_args(be, s, m, nullptr, n, f.forward_training, b.workspace.get());
    a.precision = f.forward_precision;
    a.lengths = f.has_lengths ? f.lengths.i32() : nullptr;
    a.grads = b.grads.f();
    for (size_t i = L - 1; i >= 1; --i) {
        const Layer &l = layers[i];
        if (!rg[i]) continue;
        if (l.alias) continue;  // same memory as its input: the gradient is already there
        if (!b.written[owner[i]]) be.fill(s, b.deltas[i], 0.0f, size_t(n) * size_t(l.out.size()));
        a.l = &l;
        a.plan = b.plans[i];
        a.key = dropout_key(f.seed, f.forward_key, i);
        a.y = f.acts[i];
        a.aux = f.auxes[i];
        a.dy = b.deltas[i];
        float *pending[kMaxOpInputs] = {nullptr, nullptr};
        for (size_t j = 0; j < l.inputs.size(); ++j) {
            const size_t k = size_t(l.inputs[j]);
            a.x[j] = f.acts[k];
            a.dx[j] = nullptr;
            if (!rg[k]) continue;
            if (!b.written[owner[k]]) {
                a.dx[j] = b.deltas[k];
                b.written[owner[k]] = 1;
            } else {
                a.dx[j] = b.scratch.f() + j * (b.scratch.bytes() / sizeof(float) / 2);
                pending[j] = b.deltas[k];
            }
        }
        b.plans.kernels(i)->backward(a);
        for (size_t j = 0; j < l.inputs.size(); ++j)
            if (pending[j]) be.add(s, pending[j], a.dx[j], size_t(n) * size_t(layers[size_t(l.inputs[j])].out.size()));
    }
    b.input_grad_batch = b.want_input_grad ? n : -1;
    b.grads_batch = n;
}
// The plans and workspace of the backward cache follow the precision of the
// forward pass it differentiates (made again when it changes: a one-off).
void follow_precision(BackwardCache &b, const ForwardCache &f) {
    if (b.plan_precision == f.forward_precision) return;
    LayerPlans plans;
    const size_t ws = plans.make(*b.backend, b.stream.get(), b.net, b.max_batch, true, f.forward_precision);
    DeviceBuffer workspace(*b.backend, ws);
    b.backend->synchronize(b.stream.get());
    b.plans = std::move(plans);
    b.workspace = std::move(workspace);
    b.plan_precision = f.forward_precision;
}

// With loss scaling the gradients were computed from scale * dL/dy: they
// are divided by the scale, checked, and the scale updated (GradScaler).
void unscale(BackwardCache &b, int64_t n) {
    LossScaler &sc = b.scaler;
    Backend &be = *b.backend;
    const float inv = float(1.0 / sc.scale);
    be.scale(b.stream.get(), b.grads.f(), inv, b.net.param_count);
    size_t input_floats = 0;
    if (b.want_input_grad) {
        input_floats = size_t(n) * size_t(b.net.input().size());
        be.scale(b.stream.get(), b.input_grad.f(), inv, input_floats);
    }
    const bool finite = be.all_finite(b.stream.get(), b.grads.f(), b.net.param_count) &&
                        be.all_finite(b.stream.get(), b.input_grad.f(), input_floats);
    loss_scaler_update(sc, finite);
}

void finish_backward(BackwardCache &b, ForwardCache &f, const Model &m) {
    if (b.scaler.enabled) {
        unscale(b, f.forward_batch);
        b.grads_finite = !b.scaler.found_inf;
    } else if (check_finite_enabled()) {
        b.grads_finite = b.backend->all_finite(b.stream.get(), b.grads.f(), b.net.param_count);
    } else {
        b.grads_finite = true;
    }
    // The forward cache may overwrite its activations, and the model its
    // parameters and state, only after backprop read them.
    b.backend->wait(f.stream.get(), b.stream.get());
    b.backend->wait(m.stream.get(), b.stream.get());
}

}  // namespace

void check_loss_inputs(const BackwardCache &b, const LossDesc &d, int64_t n) {
    const bool targets = d.input == LossInput::targets;
    const int64_t set = targets ? b.targets_batch : b.labels_batch;
    const char *what = targets ? "targets" : "labels";
    const char *setter = targets ? "snn_set_targets" : "snn_set_labels";
    if (set < 0)
        fail(SNN_ERR_STATE, "no %s are set on the backward cache (call %s first)", what, setter);
    if (set != n)
        fail(SNN_ERR_STATE, "%s are set for a batch of %lld but the forward batch is %lld (call %s again)",
             what, (long long)set, (long long)n, setter);
}

void backprop_loss(BackwardCache &b, ForwardCache &f, const Model &m, int32_t loss, float *loss_host) {
    const LossDesc &d = loss_of(loss);
    check_loss_inputs(b, d, f.forward_batch);
    Backend &be = *b.backend;
    Stream *s = b.stream.get();
    const int64_t n = f.forward_batch;
    be.wait(s, f.stream.get());
    be.wait_mark(s, m.stream.get());
    const Shape &out = m.net.output();
    if (d.input == LossInput::targets && out.is_seq && f.has_lengths)
        fail(SNN_ERR_UNSUPPORTED,
             "%s averages over every output value, padded steps included; with lengths set, use a label loss "
             "(which ignores padded steps) or snn_backprop_with_output_gradient with zeros at padded steps",
             d.name);
    LossArgs a;
    a.be = &be;
    a.s = s;
    a.n = n * out.steps();
    a.k = out.row_size();
    a.sequence = out.is_seq;
    a.steps = out.steps();
    a.lengths = f.has_lengths ? f.lengths.i32() : nullptr;
    a.scale = b.loss.f() + 1;
    a.y = f.acts.back();
    a.targets = b.targets.f();
    a.labels = b.labels.i32();
    a.param = float(b.loss_params[size_t(d.kind)]);
    a.dy = b.deltas.back();
    a.loss = b.loss.f();
    follow_precision(b, f);
    be.loss_kernel(d.kind)(a);
    if (b.scaler.enabled)
        be.scale(s, a.dy, float(b.scaler.scale), size_t(n) * size_t(out.size()));
    backward_layers(b, f, m, n);
    float value = 0.0f;
    if (loss_host || check_finite_enabled()) be.download(s, &value, b.loss.get(), sizeof(float));
    finish_backward(b, f, m);
    if (check_finite_enabled() && !(value - value == 0.0f)) b.grads_finite = false;
    if (loss_host) *loss_host = value;
}

void backprop_output_grad(BackwardCache &b, ForwardCache &f, const Model &m, const float *grad_host) {
    Backend &be = *b.backend;
    Stream *s = b.stream.get();
    const int64_t n = f.forward_batch;
    be.wait(s, f.stream.get());
    be.wait_mark(s, m.stream.get());
    follow_precision(b, f);
    be.upload(s, b.deltas.back(), grad_host, size_t(n * m.net.output().size()) * sizeof(float));
    if (b.scaler.enabled)
        be.scale(s, b.deltas.back(), float(b.scaler.scale), size_t(n) * size_t(m.net.output().size()));
    backward_layers(b, f, m, n);
    finish_backward(b, f, m);
}

}  // namespace snn
