// Model files and checkpoints (safetensors; see include/snn.h).
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <set>

#include "api/guard.h"
#include "engine/hyperparameters.h"
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
    const float *state = host_view(p, m, m.state.get(), m.net.state_count, with_data);
    for (size_t i = 1; i < m.net.layers.size(); ++i)
        for (const TensorSlot &t : m.net.layers[i].tensors) {
            const float *base = t.state ? state : params;
            p.tensors.push_back({"layers." + std::to_string(i) + "." + t.suffix, t.shape,
                                 base ? base + t.offset : nullptr, t.count, t.int64});
        }
    if (o) {
        p.metadata.emplace_back("optimiser", kind_key(o->kind));
        p.metadata.emplace_back("optimiser.steps", std::to_string(o->steps));
        for (const Hyperparameter &h : kHyperparameters)
            if (hyperparameter_applies(h.id, o->kind))
                p.metadata.emplace_back(std::string("optimiser.") + h.key, exact_text(get_hyperparameter(*o, h.id)));
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

// 16 hex digits from the kernel's entropy source, fresh on every call: forked
// processes never repeat each other's names (a generator seeded once would
// be copied into every child).
std::string random_suffix() {
    uint64_t r = 0;
    ssize_t got = -1;
    do {
        got = getrandom(&r, sizeof(r), GRND_NONBLOCK);
    } while (got < 0 && errno == EINTR);
    if (got != ssize_t(sizeof(r))) {  // no getrandom(2), or its pool not yet ready
        const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd < 0) io_fail("open", "/dev/urandom", errno);
        do {
            got = read(fd, &r, sizeof(r));
        } while (got < 0 && errno == EINTR);
        const int err = errno;
        close(fd);
        if (got != ssize_t(sizeof(r))) io_fail("read", "/dev/urandom", got < 0 ? err : EIO);
    }
    char buf[17];
    snprintf(buf, sizeof(buf), "%016llx", (unsigned long long)r);
    return buf;
}

constexpr const char *kTempInfix = ".tmp-";
constexpr size_t kTempDigits = 16;
constexpr time_t kStaleSeconds = 60;

// The directory part of path ("." or "/" when it has none).
std::string directory_of(const std::string &path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// name is exactly what save_atomically names a temporary file of base:
// base + ".tmp-" + 16 lowercase hex digits.
bool is_temp_name_of(const char *name, const std::string &base) {
    const size_t prefix = base.size() + std::strlen(kTempInfix);
    if (std::strlen(name) != prefix + kTempDigits || base.compare(0, base.size(), name, base.size()) != 0 ||
        std::strncmp(name + base.size(), kTempInfix, std::strlen(kTempInfix)) != 0)
        return false;
    return std::all_of(name + prefix, name + prefix + kTempDigits,
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Removes the temporary files of path that killed saves left behind: regular
// files named as save_atomically names them, unmodified for more than a
// minute (a younger one may be another process's save in progress). Best
// effort: what cannot be listed or removed stays.
void remove_stale_temp_files(const std::string &path) {
    const size_t slash = path.find_last_of('/');
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty()) return;
    DIR *dir = opendir(directory_of(path).c_str());
    if (!dir) return;
    const time_t now = time(nullptr);
    while (const dirent *e = readdir(dir)) {
        if (!is_temp_name_of(e->d_name, base)) continue;
        struct stat st;
        if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            now - st.st_mtime > kStaleSeconds)
            unlinkat(dirfd(dir), e->d_name, 0);
    }
    closedir(dir);
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
// Stale temporary files of path are removed first.
void save_atomically(const Plan &p, const std::string &path) {
    remove_stale_temp_files(path);
    TempFile tmp;
    for (int attempt = 0; tmp.fd < 0; ++attempt) {
        std::string candidate = path + kTempInfix + random_suffix();
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
    int dfd = open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        const int rc = fsync(dfd), err = errno;
        close(dfd);
        if (rc != 0 && err != EINVAL) io_fail("sync the directory of", path, err);
    }
}

// ---- reading ---------------------------------------------------------------------

// What a file that is not a regular file is, for messages.
const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

[[noreturn]] void not_regular(const std::string &path, mode_t mode) {
    fail(SNN_ERR_IO, "cannot read '%s': it is %s, not a regular file", path.c_str(), file_kind(mode));
}

// A regular file opened for reading. Anything else is refused before it is
// read: stat first, so a FIFO or a device is never opened; O_NONBLOCK, so a
// FIFO put in its place meanwhile cannot block open(); fstat to be sure.
class InputFile {
public:
    explicit InputFile(const std::string &path) : path_(path) {
        struct stat st;
        if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) not_regular(path, st.st_mode);
        fd_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd_ < 0) io_fail("open", path, errno);
        if (fstat(fd_, &st) != 0) io_fail("stat", path, errno);
        if (!S_ISREG(st.st_mode)) not_regular(path, st.st_mode);
        size_ = uint64_t(st.st_size);
    }
    ~InputFile() { close(fd_); }
    InputFile(const InputFile &) = delete;
    InputFile &operator=(const InputFile &) = delete;

    uint64_t size() const { return size_; }

    // Exactly `bytes` bytes at `offset`.
    void read(uint64_t offset, void *dst, size_t bytes) const {
        char *p = static_cast<char *>(dst);
        while (bytes > 0) {
            const ssize_t r = pread(fd_, p, bytes, off_t(offset));
            if (r < 0) {
                if (errno == EINTR) continue;
                io_fail("read", path_, errno);
            }
            if (r == 0) fail(SNN_ERR_IO, "cannot read '%s': the file shrank while it was read", path_.c_str());
            p += r;
            offset += uint64_t(r);
            bytes -= size_t(r);
        }
    }

private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

// Copies one validated tensor's values into dst (F32 as they are, I64 counts
// converted to floats).
using TensorReader = std::function<void(const std::string &name, const TensorIn &, float *)>;

const std::string &metadata_value(const SafetensorsHeader &h, const std::string &key) {
    auto it = h.metadata.find(key);
    if (it == h.metadata.end()) fail(SNN_ERR_FILE_FORMAT, "__metadata__ has no \"%s\"", key.c_str());
    return it->second;
}

// The tensor exists, has the dtype, and has exactly the expected shape.
const TensorIn &expect_tensor(const SafetensorsHeader &h, const std::string &name,
                              const std::vector<int64_t> &shape, const char *dtype = "F32") {
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

bool starts_with(const std::string &s, const char *prefix) { return s.compare(0, std::strlen(prefix), prefix) == 0; }

// The optimiser part of a file's metadata, validated into `settings` (an
// optimiser without state): the kind, every hyperparameter of the kind
// through the same check as snn_optimiser_set, and the step count. Keys
// "optimiser.*" the kind does not have are refused.
void read_optimiser_settings(const SafetensorsHeader &h, Optimiser &settings) {
    const std::string &k = metadata_value(h, "optimiser");
    bool known = false;
    for (OptKind c : {OptKind::sgd, OptKind::adam, OptKind::adamw, OptKind::rmsprop})
        if (k == kind_key(c)) settings.kind = c, known = true;
    if (!known)
        fail(SNN_ERR_FILE_FORMAT, "__metadata__ \"optimiser\" is \"%s\", expected sgd, adam, adamw or rmsprop",
             k.c_str());
    for (const Hyperparameter &hp : kHyperparameters) {
        const std::string key = std::string("optimiser.") + hp.key;
        if (!hyperparameter_applies(hp.id, settings.kind)) {
            if (h.metadata.count(key))
                fail(SNN_ERR_FILE_FORMAT, "__metadata__ has \"%s\", which %s does not have", key.c_str(),
                     optimiser_kind_name(settings.kind));
            continue;
        }
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

// Validates the whole header, then builds the model (and the optimiser when
// opt_out is non-null), reading the tensors through read_tensor. Nothing is
// allocated for parameters, and no data read, before the header has been
// checked against the spec.
void load(const SafetensorsHeader &h, const TensorReader &read_tensor, std::unique_ptr<snn_model> &model_out,
          std::unique_ptr<snn_optimiser> *opt_out) {
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
    const bool has_optimiser = h.metadata.count("optimiser") != 0;
    if (has_optimiser) {
        read_optimiser_settings(h, settings);
        const int64_t n = int64_t(net.param_count);
        if (has_m(settings.kind)) expect_tensor(h, "optimiser.m", {n}), expected.insert("optimiser.m");
        if (has_v(settings.kind)) expect_tensor(h, "optimiser.v", {n}), expected.insert("optimiser.v");
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

    auto model = std::make_unique<snn_model>();
    model_init_on_cpu(model->m, std::move(net), 0);
    float *params = model->m.params_ptr(), *state = model->m.state_ptr();
    for (const Destination &d : destinations)
        read_tensor(d.name, h.tensors.at(d.name), (d.slot->state ? state : params) + d.slot->offset);
    const std::string problem = state_problem(model->m.net, state, "the file's state");
    if (!problem.empty()) fail(SNN_ERR_FILE_FORMAT, "%s", problem.c_str());
    if (opt_out) {
        auto opt = std::make_unique<snn_optimiser>();
        Optimiser &o = opt->o;
        optimiser_init(o, model->m, settings.kind);
        for (const Hyperparameter &hp : kHyperparameters)
            if (hyperparameter_applies(hp.id, o.kind)) set_hyperparameter(o, hp.id, get_hyperparameter(settings, hp.id));
        o.steps = settings.steps;
        if (has_m(o.kind)) read_tensor("optimiser.m", h.tensors.at("optimiser.m"), o.m.f());
        if (has_v(o.kind)) read_tensor("optimiser.v", h.tensors.at("optimiser.v"), o.v.f());
        *opt_out = std::move(opt);
    }
    model_out = std::move(model);
}

// Loads from a path, naming it in every error: the 8-byte header length is
// checked against the file's size before the header is read, the header
// completely before any data is read, and only the tensors it declares
// (which cover the rest of the file exactly) are read.
void load_path(const char *path, std::unique_ptr<snn_model> &model, std::unique_ptr<snn_optimiser> *opt) {
    const InputFile file(path);
    try {
        unsigned char first[8] = {};
        file.read(0, first, size_t(std::min<uint64_t>(8, file.size())));
        const uint64_t length = safetensors_header_length(first, file.size());
        std::string json(size_t(length), '\0');
        file.read(8, &json[0], json.size());
        const SafetensorsHeader h = safetensors_parse_header(json.data(), json.size(), file.size());
        load(h, [&](const std::string &, const TensorIn &t, float *dst) {
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
        fail(e.status(), "'%s': %s", path, e.what());
    }
}

// Loads from memory.
void load_buffer(const unsigned char *bytes, size_t size, std::unique_ptr<snn_model> &model) {
    const SafetensorsHeader h = safetensors_parse(bytes, size);
    load(h, [&](const std::string &, const TensorIn &t, float *dst) {
            if (t.dtype == "I64")
                read_le_i64_count(bytes + h.data_offset + t.begin, t.elements, dst);
            else
                read_le_f32(bytes + h.data_offset + t.begin, t.elements, dst);
        }, model, nullptr);
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
        load_buffer(static_cast<const unsigned char *>(data), size, model);
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
