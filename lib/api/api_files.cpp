// Model files and checkpoints (safetensors; see include/snn.h).
//
// A model file holds "__metadata__" {"format": "snn", "format_version": "1",
// "spec": <canonical spec>} and, per layer i with parameters,
// "layers.<i>.weight" and "layers.<i>.bias". A checkpoint adds the metadata
// "optimiser" (sgd, adam, adamw, rmsprop), "optimiser.steps" and one
// "optimiser.<hyperparameter>" per hyperparameter of that kind, written as the
// shortest decimal text that reads back to the same double, and the tensors
// "optimiser.m" / "optimiser.v" (shape [parameter count]) the kind keeps.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>

#include "api/guard.h"
#include "model/safetensors.h"

using namespace snn;

namespace {

constexpr const char *kFormat = "snn";
constexpr const char *kFormatVersion = "1";

// ---- optimiser metadata ---------------------------------------------------------

const char *kind_key(OptKind k) {
    switch (k) {
        case OptKind::sgd: return "sgd";
        case OptKind::adam: return "adam";
        case OptKind::adamw: return "adamw";
        default: return "rmsprop";
    }
}

// A double hyperparameter, the kinds it applies to, and its valid range
// [lo, hi) (or (lo, hi) with lo_open), as snn_optimiser_set enforces.
struct Hyper {
    const char *name;
    double Optimiser::*field;
    bool sgd, adam, rmsprop;
    double lo;
    bool lo_open;
    double hi;
};
const Hyper kHypers[] = {
    {"learning_rate", &Optimiser::lr, true, true, true, 0.0, false, HUGE_VAL},
    {"momentum", &Optimiser::momentum, true, false, false, 0.0, false, 1.0},
    {"beta1", &Optimiser::beta1, false, true, false, 0.0, false, 1.0},
    {"beta2", &Optimiser::beta2, false, true, false, 0.0, false, 1.0},
    {"epsilon", &Optimiser::eps, false, true, true, 0.0, true, HUGE_VAL},
    {"weight_decay", &Optimiser::weight_decay, true, true, true, 0.0, false, HUGE_VAL},
    {"alpha", &Optimiser::alpha, false, false, true, 0.0, false, 1.0},
};

bool applies(const Hyper &h, OptKind k) {
    return k == OptKind::sgd ? h.sgd : k == OptKind::rmsprop ? h.rmsprop : h.adam;
}
bool has_m(OptKind k) { return k != OptKind::rmsprop; }
bool has_v(OptKind k) { return k != OptKind::sgd; }

std::string exact_text(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, r.ptr);
}

// ---- writing ---------------------------------------------------------------------

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

Plan plan_file(const Model &m, const Optimiser *o, bool with_data) {
    Plan p;
    p.metadata = {{"format", kFormat}, {"format_version", kFormatVersion}, {"spec", describe(m.net)}};
    const float *params = host_view(p, m, m.params.get(), m.net.param_count, with_data);
    for (size_t i = 1; i < m.net.layers.size(); ++i) {
        const Layer &l = m.net.layers[i];
        if (l.kind != LayerKind::dense && l.kind != LayerKind::conv) continue;
        std::vector<int64_t> shape = {l.units, l.in.size()};
        if (l.kind == LayerKind::conv) shape = {l.units, l.in.c, l.kh, l.kw};
        const std::string prefix = "layers." + std::to_string(i);
        auto at = [params](size_t offset) { return params ? params + offset : nullptr; };
        p.tensors.push_back({prefix + ".weight", shape, at(l.weight_offset), l.weight_count});
        if (l.bias_count) p.tensors.push_back({prefix + ".bias", {l.units}, at(l.bias_offset), l.bias_count});
    }
    if (o) {
        p.metadata.emplace_back("optimiser", kind_key(o->kind));
        p.metadata.emplace_back("optimiser.steps", std::to_string(o->steps));
        for (const Hyper &h : kHypers)
            if (applies(h, o->kind))
                p.metadata.emplace_back(std::string("optimiser.") + h.name, exact_text(o->*h.field));
        if (o->kind == OptKind::sgd) p.metadata.emplace_back("optimiser.nesterov", o->nesterov ? "1" : "0");
        // The moments are updated on the model's stream: read them there.
        const int64_t n = int64_t(o->count);
        if (has_m(o->kind)) p.tensors.push_back({"optimiser.m", {n}, host_view(p, m, o->m.get(), o->count, with_data), o->count});
        if (has_v(o->kind)) p.tensors.push_back({"optimiser.v", {n}, host_view(p, m, o->v.get(), o->count, with_data), o->count});
    }
    p.header = safetensors_header(p.metadata, p.tensors);
    p.size = safetensors_size(p.header, p.tensors);
    return p;
}

[[noreturn]] void io_fail(const char *what, const std::string &path, int err) {
    fail(SNN_ERR_IO, "cannot %s '%s': %s", what, path.c_str(), std::strerror(err));
}

std::string random_suffix() {
    static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                            (uint64_t(getpid()) << 32) ^ uint64_t(time(nullptr)));
    char buf[17];
    snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)rng());
    return buf;
}

// Removes the temporary file unless the save went through.
struct TempFile {
    std::string path;
    int fd = -1;
    bool keep = false;
    ~TempFile() {
        if (fd >= 0) close(fd);
        if (!keep && !path.empty()) unlink(path.c_str());
    }
};

void write_all(int fd, const void *data, size_t bytes, const std::string &path) {
    const char *p = static_cast<const char *>(data);
    while (bytes > 0) {
        ssize_t w = write(fd, p, bytes);
        if (w < 0) {
            if (errno == EINTR) continue;
            io_fail("write", path, errno);
        }
        p += w;
        bytes -= size_t(w);
    }
}

// Writes path.tmp-<random>, fsyncs it, renames it over path and fsyncs the
// directory. On failure the temporary file is removed and path untouched.
void save_atomically(const Plan &p, const std::string &path) {
    TempFile tmp;
    for (int attempt = 0; tmp.fd < 0; ++attempt) {
        std::string candidate = path + ".tmp-" + random_suffix();
        int fd = open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            tmp.path = candidate;
            tmp.fd = fd;
        } else if (errno != EEXIST || attempt == 16) {
            io_fail("create a temporary file next to", path, errno);
        }
    }
    safetensors_write(p.header, p.tensors,
                      [&](const void *data, size_t bytes) { write_all(tmp.fd, data, bytes, tmp.path); });
    if (fsync(tmp.fd) != 0) io_fail("sync", tmp.path, errno);
    const int fd = tmp.fd;
    tmp.fd = -1;
    if (close(fd) != 0) io_fail("close", tmp.path, errno);
    if (rename(tmp.path.c_str(), path.c_str()) != 0) io_fail("rename the temporary file to", path, errno);
    tmp.keep = true;
    // Make the rename itself durable. A directory that cannot be opened for
    // reading (permissions) is skipped: the file is already in place.
    const size_t slash = path.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        const int rc = fsync(dfd), err = errno;
        close(dfd);
        if (rc != 0 && err != EINVAL) io_fail("sync the directory of", path, err);
    }
}

// ---- reading ---------------------------------------------------------------------

std::vector<unsigned char> read_file(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) io_fail("open", path, errno);
    std::unique_ptr<int, void (*)(int *)> closer(&fd, [](int *f) { close(*f); });
    struct stat st;
    if (fstat(fd, &st) != 0) io_fail("stat", path, errno);
    if (!S_ISREG(st.st_mode)) fail(SNN_ERR_IO, "cannot read '%s': not a regular file", path.c_str());
    std::vector<unsigned char> bytes(size_t(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t r = read(fd, bytes.data() + done, bytes.size() - done);
        if (r < 0) {
            if (errno == EINTR) continue;
            io_fail("read", path, errno);
        }
        if (r == 0) fail(SNN_ERR_IO, "cannot read '%s': the file shrank while it was read", path.c_str());
        done += size_t(r);
    }
    return bytes;
}

const std::string &metadata_value(const SafetensorsView &v, const std::string &key) {
    auto it = v.metadata.find(key);
    if (it == v.metadata.end()) fail(SNN_ERR_FILE_FORMAT, "__metadata__ has no \"%s\"", key.c_str());
    return it->second;
}

// The tensor exists, is F32, and has exactly the expected shape.
const TensorIn &expect_tensor(const SafetensorsView &v, const std::string &name,
                              const std::vector<int64_t> &shape) {
    auto it = v.tensors.find(name);
    if (it == v.tensors.end()) fail(SNN_ERR_FILE_FORMAT, "tensor '%s' is missing", name.c_str());
    const TensorIn &t = it->second;
    if (t.dtype != "F32")
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s' has dtype %s, expected F32", name.c_str(), t.dtype.c_str());
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

double hyper_value(const SafetensorsView &v, const Hyper &h) {
    const std::string key = std::string("optimiser.") + h.name;
    const std::string &text = metadata_value(v, key);
    double value = 0;
    auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    const bool in_range = !std::isnan(value) && (h.lo_open ? value > h.lo : value >= h.lo) && value < h.hi;
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !in_range)
        fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"%s\" = \"%s\" is not a number in its valid range",
             key.c_str(), text.c_str());
    return value;
}

// Validates the whole file, then builds the model (and the optimiser when
// opt_out is non-null). Nothing is allocated for parameters before the file
// has been checked against the spec.
void load(const unsigned char *bytes, size_t size, std::unique_ptr<snn_model> &model_out,
          std::unique_ptr<snn_optimiser> *opt_out) {
    const SafetensorsView v = safetensors_parse(bytes, size);
    if (!v.has_metadata)
        fail(SNN_ERR_FILE_FORMAT, "the header has no __metadata__: snn needs its \"spec\" to build the model");
    const std::string &format = metadata_value(v, "format");
    if (format != kFormat)
        fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"format\" is \"%s\", expected \"%s\"", format.c_str(), kFormat);
    const std::string &version = metadata_value(v, "format_version");
    if (version != kFormatVersion)
        fail(SNN_ERR_FILE_FORMAT, "format_version \"%s\" is not supported (this library reads \"%s\")",
             version.c_str(), kFormatVersion);
    Network net;
    try {
        net = parse_spec(metadata_value(v, "spec"));
    } catch (const Error &e) {
        fail(e.status(), "the file's spec: %s", e.what());
    }

    // Expected tensors: every parameterised layer, then the optimiser's.
    std::vector<std::pair<std::string, size_t>> destinations;  // tensor name -> parameter offset
    size_t expected = 0;
    for (size_t i = 1; i < net.layers.size(); ++i) {
        const Layer &l = net.layers[i];
        if (l.kind != LayerKind::dense && l.kind != LayerKind::conv) continue;
        std::vector<int64_t> shape = {l.units, l.in.size()};
        if (l.kind == LayerKind::conv) shape = {l.units, l.in.c, l.kh, l.kw};
        const std::string prefix = "layers." + std::to_string(i);
        expect_tensor(v, prefix + ".weight", shape);
        destinations.emplace_back(prefix + ".weight", l.weight_offset);
        ++expected;
        if (l.bias_count) {
            expect_tensor(v, prefix + ".bias", {l.units});
            destinations.emplace_back(prefix + ".bias", l.bias_offset);
            ++expected;
        }
    }
    const bool has_optimiser = v.metadata.count("optimiser") != 0;
    OptKind kind = OptKind::adam;
    if (has_optimiser) {
        const std::string &k = metadata_value(v, "optimiser");
        const OptKind kinds[] = {OptKind::sgd, OptKind::adam, OptKind::adamw, OptKind::rmsprop};
        bool known = false;
        for (OptKind c : kinds)
            if (k == kind_key(c)) kind = c, known = true;
        if (!known)
            fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"optimiser\" is \"%s\", expected sgd, adam, adamw or rmsprop",
                 k.c_str());
        const int64_t n = int64_t(net.param_count);
        if (has_m(kind)) expect_tensor(v, "optimiser.m", {n}), ++expected;
        if (has_v(kind)) expect_tensor(v, "optimiser.v", {n}), ++expected;
    } else if (opt_out) {
        fail(SNN_ERR_FILE_FORMAT, "this is a model file, not a checkpoint: __metadata__ has no \"optimiser\"");
    }
    if (v.tensors.size() != expected)
        for (const auto &kv : v.tensors) {
            bool known = kv.first == "optimiser.m" || kv.first == "optimiser.v";
            for (const auto &d : destinations) known = known || d.first == kv.first;
            if (!known) fail(SNN_ERR_FILE_FORMAT, "unexpected tensor '%s' (the spec has no such parameter)", kv.first.c_str());
        }

    // The optimiser's settings, checked before anything is allocated.
    double hypers[sizeof(kHypers) / sizeof(kHypers[0])] = {};
    bool nesterov = false;
    int64_t steps = -1;
    if (opt_out) {
        for (size_t h = 0; h < sizeof(kHypers) / sizeof(kHypers[0]); ++h)
            if (applies(kHypers[h], kind)) hypers[h] = hyper_value(v, kHypers[h]);
        if (kind == OptKind::sgd) {
            const std::string &text = metadata_value(v, "optimiser.nesterov");
            if (text != "0" && text != "1")
                fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"optimiser.nesterov\" is \"%s\", expected \"0\" or \"1\"",
                     text.c_str());
            nesterov = text == "1";
            if (nesterov && hypers[1] /* momentum */ == 0.0)
                fail(SNN_ERR_FILE_FORMAT, "__metadata__ has Nesterov momentum with momentum 0");
        }
        const std::string &text = metadata_value(v, "optimiser.steps");
        auto r = std::from_chars(text.data(), text.data() + text.size(), steps);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size() || steps < 0)
            fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"optimiser.steps\" = \"%s\" is not a count", text.c_str());
    }

    auto model = std::make_unique<snn_model>();
    model_init_on_cpu(model->m, std::move(net), 0);
    float *params = model->m.params_ptr();
    for (const auto &[name, offset] : destinations) {
        const TensorIn &t = v.tensors.at(name);
        read_le_f32(v.data + t.begin, t.elements, params + offset);
    }
    if (opt_out) {
        auto opt = std::make_unique<snn_optimiser>();
        Optimiser &o = opt->o;
        optimiser_init(o, model->m, kind);
        for (size_t h = 0; h < sizeof(kHypers) / sizeof(kHypers[0]); ++h)
            if (applies(kHypers[h], kind)) o.*kHypers[h].field = hypers[h];
        o.nesterov = nesterov;
        o.steps = steps;
        if (has_m(kind)) {
            const TensorIn &t = v.tensors.at("optimiser.m");
            read_le_f32(v.data + t.begin, t.elements, o.m.f());
        }
        if (has_v(kind)) {
            const TensorIn &t = v.tensors.at("optimiser.v");
            read_le_f32(v.data + t.begin, t.elements, o.v.f());
        }
        *opt_out = std::move(opt);
    }
    model_out = std::move(model);
}

// Loads from a path, naming it in every error.
void load_path(const char *path, std::unique_ptr<snn_model> &model, std::unique_ptr<snn_optimiser> *opt) {
    const std::vector<unsigned char> bytes = read_file(path);
    try {
        load(bytes.data(), bytes.size(), model, opt);
    } catch (const Error &e) {
        fail(e.status(), "'%s': %s", path, e.what());
    }
}

}  // namespace

extern "C" {

SNN_API snn_status snn_model_save(const snn_model *model, const char *path) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(path, "path");
        save_atomically(plan_file(model->m, nullptr, true), path);
    });
}

SNN_API snn_status snn_model_load(const char *path, snn_model **out) {
    return guarded(__func__, [&] {
        need(path, "path");
        need(out, "out");
        std::unique_ptr<snn_model> model;
        load_path(path, model, nullptr);
        *out = model.release();
    });
}

SNN_API snn_status snn_model_save_to_buffer(const snn_model *model, void *buf, size_t capacity,
                                            size_t *size) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(size, "size");
        if (buf == nullptr && capacity == 0) {
            *size = plan_file(model->m, nullptr, false).size;
            return;
        }
        need(buf, "buf");
        const Plan p = plan_file(model->m, nullptr, true);
        if (capacity < p.size)
            fail(SNN_ERR_COUNT, "capacity %zu is below the %zu bytes needed", capacity, p.size);
        unsigned char *dst = static_cast<unsigned char *>(buf);
        safetensors_write(p.header, p.tensors, [&](const void *data, size_t bytes) {
            std::memcpy(dst, data, bytes);
            dst += bytes;
        });
        *size = p.size;
    });
}

SNN_API snn_status snn_model_load_from_buffer(const void *data, size_t size, snn_model **out) {
    return guarded(__func__, [&] {
        need(data, "data");
        need(out, "out");
        std::unique_ptr<snn_model> model;
        load(static_cast<const unsigned char *>(data), size, model, nullptr);
        *out = model.release();
    });
}

SNN_API snn_status snn_checkpoint_save(const snn_model *model, const snn_optimiser *optimiser,
                                       const char *path) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(optimiser, "optimiser");
        need(path, "path");
        // Following the model moves the optimiser's state without changing it.
        check_model(const_cast<Optimiser &>(optimiser->o), model->m, "the optimiser");
        save_atomically(plan_file(model->m, &optimiser->o, true), path);
    });
}

SNN_API snn_status snn_checkpoint_load(const char *path, snn_model **model_out,
                                       snn_optimiser **optimiser_out) {
    return guarded(__func__, [&] {
        need(path, "path");
        need(model_out, "model_out");
        need(optimiser_out, "optimiser_out");
        std::unique_ptr<snn_model> model;
        std::unique_ptr<snn_optimiser> opt;
        load_path(path, model, &opt);
        *model_out = model.release();
        *optimiser_out = opt.release();
    });
}

}  // extern "C"
