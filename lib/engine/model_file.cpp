// Model files and checkpoints: the snn file format (safetensors; see include/snn.h).
//
// A model file holds "__metadata__" {"format": "snn", "format_version": "1",
// "spec": <canonical spec>} and each layer's tensors as a PyTorch state_dict
// names them: "layers.<i>.weight", ".bias", ".running_mean", ".running_var"
// (F32) and ".num_batches_tracked" (I64). A checkpoint adds the metadata
// "optimiser" (sgd, adam, adamw, rmsprop), "optimiser.steps" and one
// "optimiser.<hyperparameter>" per hyperparameter of that kind, written as the
// shortest decimal text that reads back to the same double, and the tensors
// "optimiser.m" / "optimiser.v" (shape [parameter count]) the kind keeps.
// Whatever loads a file validates all of it, optimiser part included, the
// hyperparameters exactly as snn_optimiser_set does.
#include "engine/model_file.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <memory>
#include <set>

#include "common/error.h"
#include "engine/hyperparameters.h"
#include "engine/transfers.h"
#include "model/file_io.h"
#include "model/safetensors.h"

namespace snn {
namespace {

constexpr const char *kFormat = "snn";
constexpr const char *kFormatVersion = "1";

const std::string &metadata_value(const SafetensorsHeader &h, const std::string &key) {
    auto it = h.metadata.find(key);
    if (it == h.metadata.end()) fail(SNN_ERR_FILE_FORMAT, "__metadata__ has no \"%s\"", key.c_str());
    return it->second;
}

bool starts_with(const std::string &s, const char *prefix) { return s.compare(0, std::strlen(prefix), prefix) == 0; }

// Everything a file needs, with host copies of device memory.
struct Plan {
    Metadata metadata;
    std::vector<TensorOut> tensors;
    std::vector<std::vector<float>> host;  // downloads of GPU buffers
    std::string header;
    size_t size = 0;
};

// Host memory holding `count` floats of a model's buffer; nullptr when only
// the layout is wanted (with_data false).
const float *host_view(Plan &p, const Model &m, const void *src, size_t count, bool with_data) {
    if (!with_data) return nullptr;
    if (m.device() == SNN_DEVICE_CPU || count == 0) return static_cast<const float *>(src);
    p.host.emplace_back(count);
    m.backend->download(m.stream.get(), p.host.back().data(), src, count * sizeof(float));
    return p.host.back().data();
}

// ---- optimiser metadata ---------------------------------------------------------

// The kind's key and state buffers come from its descriptor
// (core/optimisers.h).
bool has_m(OptKind k) { return optimiser_desc(k).has_m; }
bool has_v(OptKind k) { return optimiser_desc(k).has_v; }

std::string exact_text(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, r.ptr);
}

// The optimiser's metadata and tensors, added to a file's plan.
void plan_optimiser(Plan &p, const Model &m, const Optimiser &o, bool with_data) {
    p.metadata.emplace_back("optimiser", optimiser_desc(o.kind).key);
    p.metadata.emplace_back("optimiser.steps", std::to_string(o.steps));
    for (const Hyperparameter &h : kHyperparameters)
        if (hyperparameter_applies(h.id, o.kind))
            p.metadata.emplace_back(std::string("optimiser.") + h.key, exact_text(get_hyperparameter(o, h.id)));
    // The moments are updated on the model's stream: read them there.
    const int64_t n = int64_t(o.count);
    if (has_m(o.kind)) p.tensors.push_back({"optimiser.m", {n}, host_view(p, m, o.m.get(), o.count, with_data), o.count});
    if (has_v(o.kind)) p.tensors.push_back({"optimiser.v", {n}, host_view(p, m, o.v.get(), o.count, with_data), o.count});
}

// The optimiser part of a file's metadata, validated into `settings` (an
// optimiser without state): the kind, every hyperparameter of the kind
// through the same check as snn_optimiser_set, and the step count. Keys
// "optimiser.*" the kind does not have are refused.
void read_optimiser_settings(const SafetensorsHeader &h, Optimiser &settings) {
    const std::string &k = metadata_value(h, "optimiser");
    const OptimiserDesc *d = find_optimiser_key(k.c_str());
    if (!d)
        fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"optimiser\" is \"%s\", expected one of %s", k.c_str(),
             optimiser_keys());
    settings.kind = d->kind;
    set_default_hyperparameters(settings);
    for (const Hyperparameter &hp : kHyperparameters) {
        const std::string key = std::string("optimiser.") + hp.key;
        if (!hyperparameter_applies(hp.id, settings.kind)) {
            if (h.metadata.count(key))
                fail(SNN_ERR_FILE_FORMAT, "__metadata__ has \"%s\", which %s does not have", key.c_str(),
                     optimiser_kind_name(settings.kind));
            continue;
        }
        if (hp.may_be_absent && !h.metadata.count(key)) continue;  // an older checkpoint: the default
        const std::string &text = metadata_value(h, key);
        double value = 0;
        auto r = std::from_chars(text.data(), text.data() + text.size(), value);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size())
            fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"%s\" = \"%s\" is not a number", key.c_str(), text.c_str());
        try {
            set_hyperparameter(settings, hp.id, value);
        } catch (const Error &e) {
            fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"%s\" = \"%s\" is refused: %s", key.c_str(), text.c_str(),
                 e.what());
        }
    }
    const std::string &text = metadata_value(h, "optimiser.steps");
    int64_t steps = -1;
    auto r = std::from_chars(text.data(), text.data() + text.size(), steps);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() || steps < 0 || steps > kMaxOptimiserSteps)
        fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"optimiser.steps\" = \"%s\" is not a step count in [0, 2^53]",
             text.c_str());
    settings.steps = steps;
    for (const auto &kv : h.metadata)
        if (starts_with(kv.first, "optimiser.") && kv.first != "optimiser.steps") {
            bool known_key = false;
            for (const Hyperparameter &hp : kHyperparameters)
                known_key = known_key || kv.first == std::string("optimiser.") + hp.key;
            if (!known_key) fail(SNN_ERR_FILE_FORMAT, "__metadata__ has an unknown key \"%s\"", kv.first.c_str());
        }
}

// Copies one validated tensor's values into dst (F32 as they are, I64 counts
// converted to floats).
using TensorReader = std::function<void(const std::string &name, const TensorIn &, float *)>;

// The tensor exists, has the dtype, and has exactly the expected shape.
const TensorIn &expect_tensor(const SafetensorsHeader &h, const std::string &name,
                              const std::vector<int64_t> &shape, const char *dtype = "F32");

// Checks the moment tensors the kind of `settings` keeps (for param_count
// parameters) and adds their names to `expected`.
void expect_optimiser_tensors(const SafetensorsHeader &h, const Optimiser &settings, size_t param_count,
                              std::set<std::string> &expected) {
    const int64_t n = int64_t(param_count);
    if (has_m(settings.kind)) expect_tensor(h, "optimiser.m", {n}), expected.insert("optimiser.m");
    if (has_v(settings.kind)) expect_tensor(h, "optimiser.v", {n}), expected.insert("optimiser.v");
}

// Makes o for the loaded model from the validated settings and the moments.
void read_optimiser(const SafetensorsHeader &h, const Optimiser &settings, const TensorReader &read_tensor,
                    Optimiser &o, const Model &model) {
    optimiser_init(o, model, settings.kind);
    for (const Hyperparameter &hp : kHyperparameters)
        if (hyperparameter_applies(hp.id, o.kind)) set_hyperparameter(o, hp.id, get_hyperparameter(settings, hp.id));
    o.steps = settings.steps;
    if (has_m(o.kind)) read_tensor("optimiser.m", h.tensors.at("optimiser.m"), o.m.f());
    if (has_v(o.kind)) read_tensor("optimiser.v", h.tensors.at("optimiser.v"), o.v.f());
}

// ---- loss scaling ------------------------------------------------------------------

// A backward cache's dynamic loss scaling, as metadata "loss_scaling.*".
void plan_loss_scaling(Plan &p, const LossScaler &sc) {
    p.metadata.emplace_back("loss_scaling.scale", exact_text(sc.scale));
    p.metadata.emplace_back("loss_scaling.growth_factor", exact_text(sc.growth));
    p.metadata.emplace_back("loss_scaling.backoff_factor", exact_text(sc.backoff));
    p.metadata.emplace_back("loss_scaling.growth_interval", std::to_string(sc.growth_interval));
    p.metadata.emplace_back("loss_scaling.good_steps", std::to_string(sc.good_steps));
}

// The file's loss scaling, all five keys or none, checked as
// snn_set_loss_scaling_state checks them.
LossScaler read_loss_scaling(const SafetensorsHeader &h) {
    static const char *const keys[] = {"loss_scaling.scale", "loss_scaling.growth_factor",
                                       "loss_scaling.backoff_factor", "loss_scaling.growth_interval",
                                       "loss_scaling.good_steps"};
    size_t present = 0;
    for (const auto &kv : h.metadata)
        if (starts_with(kv.first, "loss_scaling.")) {
            if (std::find_if(std::begin(keys), std::end(keys), [&](const char *k) { return kv.first == k; }) ==
                std::end(keys))
                fail(SNN_ERR_FILE_FORMAT, "__metadata__ has \"%s\", which is not a loss scaling key", kv.first.c_str());
            ++present;
        }
    LossScaler sc;
    if (present == 0) return sc;
    double v[3] = {};
    for (size_t i = 0; i < 3; ++i) {
        const std::string &text = metadata_value(h, keys[i]);
        auto r = std::from_chars(text.data(), text.data() + text.size(), v[i]);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size())
            fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"%s\" = \"%s\" is not a number", keys[i], text.c_str());
    }
    // The counts are read as integers, never through a double.
    int64_t counts[2] = {};
    for (size_t i = 0; i < 2; ++i) {
        const std::string &text = metadata_value(h, keys[3 + i]);
        auto r = std::from_chars(text.data(), text.data() + text.size(), counts[i]);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size())
            fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"%s\" = \"%s\" is not a decimal integer in [-2^63, 2^63)",
                 keys[3 + i], text.c_str());
    }
    try {
        loss_scaler_set(sc, v[0], v[1], v[2], counts[0], counts[1]);
    } catch (const Error &e) {
        fail(SNN_ERR_FILE_FORMAT, "the loss scaling in __metadata__ is refused: %s", e.what());
    }
    return sc;
}

// ---- the rest of the format -------------------------------------------------------

Plan plan_file(const Model &m, const Optimiser *o, const LossScaler *scaler, bool with_data) {
    Plan p;
    p.metadata = {{"format", kFormat}, {"format_version", kFormatVersion}, {"spec", describe(m.net)}};
    const float *params = host_view(p, m, m.params.get(), m.net.param_count, with_data);
    const float *state = host_view(p, m, m.state.get(), m.net.state_count, with_data);
    for (size_t i = 1; i < m.net.layers.size(); ++i)
        for (const TensorSlot &t : m.net.layers[i].tensors) {
            const float *base = t.state ? state : params;
            p.tensors.push_back({"layers." + std::to_string(i) + "." + t.suffix, t.shape,
                                 base ? base + t.offset : nullptr, t.count, t.int64});
        }
    if (o) plan_optimiser(p, m, *o, with_data);
    if (scaler && scaler->enabled) plan_loss_scaling(p, *scaler);
    p.header = safetensors_header(p.metadata, p.tensors);
    p.size = safetensors_size(p.header, p.tensors);
    return p;
}

const TensorIn &expect_tensor(const SafetensorsHeader &h, const std::string &name,
                              const std::vector<int64_t> &shape, const char *dtype) {
    auto it = h.tensors.find(name);
    if (it == h.tensors.end()) fail(SNN_ERR_FILE_FORMAT, "tensor '%s' is missing", name.c_str());
    const TensorIn &t = it->second;
    if (t.dtype != dtype)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s' has dtype %s, expected %s", name.c_str(), t.dtype.c_str(), dtype);
    if (t.shape != shape) {
        auto text = [](const std::vector<int64_t> &s) {
            std::string r = "[";
            for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
            return r + "]";
        };
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s' has shape %s, the spec implies %s", name.c_str(),
             text(t.shape).c_str(), text(shape).c_str());
    }
    return t;
}

// Validates the whole header, then builds the model (and the optimiser when
// opt_out is non-null), reading the tensors through read_tensor. Nothing is
// allocated for parameters, and no data read, before the header has been
// checked against the spec. Returns the checkpoint's loss scaling (off when
// it holds none).
LossScaler load(const SafetensorsHeader &h, const TensorReader &read_tensor, Model &model, Optimiser *opt_out) {
    if (!h.has_metadata)
        fail(SNN_ERR_FILE_FORMAT, "the header has no __metadata__: snn needs its \"spec\" to build the model");
    const std::string &format = metadata_value(h, "format");
    if (format != kFormat)
        fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"format\" is \"%s\", expected \"%s\"", format.c_str(), kFormat);
    const std::string &version = metadata_value(h, "format_version");
    if (version != kFormatVersion)
        fail(SNN_ERR_FILE_FORMAT, "format_version \"%s\" is not supported (this library reads \"%s\")",
             version.c_str(), kFormatVersion);
    Network net;
    try {
        net = parse_spec(metadata_value(h, "spec"));
    } catch (const Error &e) {
        fail(e.status(), "the file's spec: %s", e.what());
    }

    // Expected tensors: every layer's parameters and state, then the optimiser's.
    struct Destination {
        std::string name;
        const TensorSlot *slot;
    };
    std::vector<Destination> destinations;
    for (size_t i = 1; i < net.layers.size(); ++i)
        for (const TensorSlot &t : net.layers[i].tensors) {
            const std::string name = "layers." + std::to_string(i) + "." + t.suffix;
            expect_tensor(h, name, t.shape, t.int64 ? "I64" : "F32");
            destinations.push_back({name, &t});
        }
    std::set<std::string> expected;
    for (const auto &d : destinations) expected.insert(d.name);
    Optimiser settings;
    LossScaler scaler;
    const bool has_optimiser = h.metadata.count("optimiser") != 0;
    if (has_optimiser) {
        read_optimiser_settings(h, settings);
        expect_optimiser_tensors(h, settings, net.param_count, expected);
        scaler = read_loss_scaling(h);
    } else if (opt_out) {
        fail(SNN_ERR_FILE_FORMAT, "this is a model file, not a checkpoint: __metadata__ has no \"optimiser\"");
    } else {
        for (const auto &kv : h.metadata)
            if (starts_with(kv.first, "optimiser."))
                fail(SNN_ERR_FILE_FORMAT, "__metadata__ has \"%s\" but no \"optimiser\"", kv.first.c_str());
    }
    for (const auto &kv : h.tensors)
        if (!expected.count(kv.first))
            fail(SNN_ERR_FILE_FORMAT, "unexpected tensor '%s' (%s)", kv.first.c_str(),
                 starts_with(kv.first, "optimiser.") && !has_optimiser
                     ? "optimiser state in a file whose __metadata__ has no \"optimiser\""
                     : "the spec and the optimiser have no such tensor");

    model_init_on_cpu(model, std::move(net), 0);
    float *params = model.params_ptr(), *state = model.state_ptr();
    for (const Destination &d : destinations)
        read_tensor(d.name, h.tensors.at(d.name), (d.slot->state ? state : params) + d.slot->offset);
    const std::string problem = state_problem(model.net, state, "the file's state");
    if (!problem.empty()) fail(SNN_ERR_FILE_FORMAT, "%s", problem.c_str());
    if (opt_out) read_optimiser(h, settings, read_tensor, *opt_out, model);
    return scaler;
}

// A file's validated header: the 8-byte header length is checked against
// the file's size before the header is read.
SafetensorsHeader read_header(const InputFile &file) {
    unsigned char first[8] = {};
    file.read(0, first, size_t(std::min<uint64_t>(8, file.size())));
    const uint64_t length = safetensors_header_length(first, file.size());
    std::string json(size_t(length), '\0');
    file.read(8, &json[0], json.size());
    return safetensors_parse_header(json.data(), json.size(), file.size());
}

// Loads from a path, naming it in every error: the header completely before
// any data is read, and only the tensors it declares (which cover the rest of
// the file exactly) are read.
LossScaler load_path(const std::string &path, Model &model, Optimiser *opt) {
    const InputFile file(path);
    try {
        const SafetensorsHeader h = read_header(file);
        return load(h, [&](const std::string &, const TensorIn &t, float *dst) {
            unsigned char chunk[1 << 16];
            const size_t size = t.dtype == "I64" ? 8 : 4;
            for (size_t done = 0; done < t.elements;) {
                const size_t n = std::min(t.elements - done, sizeof(chunk) / size);
                file.read(h.data_offset + t.begin + done * size, chunk, n * size);
                if (size == 8)
                    read_le_i64_count(chunk, n, dst + done);
                else
                    read_le_f32(chunk, n, dst + done);
                done += n;
            }
        }, model, opt);
    } catch (const Error &e) {
        fail(e.status(), "'%s': %s", path.c_str(), e.what());
    }
}

// Loads from memory.
void load_buffer(const unsigned char *bytes, size_t size, Model &model) {
    const SafetensorsHeader h = safetensors_parse(bytes, size);
    load(h, [&](const std::string &, const TensorIn &t, float *dst) {
            if (t.dtype == "I64")
                read_le_i64_count(bytes + h.data_offset + t.begin, t.elements, dst);
            else
                read_le_f32(bytes + h.data_offset + t.begin, t.elements, dst);
        }, model, nullptr);
}

}  // namespace

void model_file_save(const Model &m, const Optimiser *o, const LossScaler *scaler, const std::string &path) {
    const Plan p = plan_file(m, o, scaler, true);
    save_atomically(path, [&](const ByteSink &sink) { safetensors_write(p.header, p.tensors, sink); });
}

size_t model_file_size(const Model &m) { return plan_file(m, nullptr, nullptr, false).size; }

size_t model_file_write(const Model &m, void *buf, size_t capacity) {
    const Plan p = plan_file(m, nullptr, nullptr, true);
    if (capacity < p.size) fail(SNN_ERR_COUNT, "capacity %zu is below the %zu bytes needed", capacity, p.size);
    unsigned char *dst = static_cast<unsigned char *>(buf);
    safetensors_write(p.header, p.tensors, [&](const void *data, size_t bytes) {
        std::memcpy(dst, data, bytes);
        dst += bytes;
    });
    return p.size;
}

void model_file_load(const std::string &path, Model &m, Optimiser *opt) { load_path(path, m, opt); }

void model_file_load_buffer(const unsigned char *bytes, size_t size, Model &m) { load_buffer(bytes, size, m); }

LossScaler model_file_loss_scaling(const std::string &path) {
    Model model;
    Optimiser optimiser;
    return load_path(path, model, &optimiser);
}

}  // namespace snn
