// Model files and checkpoints: round trips, resumed training, atomic saves,
// malformed files, and files written by PyTorch without the library.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "snn.h"

namespace {

const char *kMlp = "input 5; dense 7 tanh; dense 6 relu nobias; dense 3";
const char *kCnn = "input 6x6x2; conv 3x3 4 relu pad=1; maxpool 2; conv 2x2 3; flatten; dense 3";

using Bytes = std::vector<unsigned char>;

snn_model *make_model(const char *spec, uint64_t seed) {
    snn_model *m = nullptr;
    EXPECT_EQ(snn_model_create(spec, &m), SNN_OK) << snn_last_error();
    EXPECT_EQ(snn_model_init(m, seed), SNN_OK);
    return m;
}

std::vector<float> params_of(const snn_model *m) {
    size_t n = 0;
    snn_parameter_count(m, &n);
    std::vector<float> p(n);
    EXPECT_EQ(snn_get_parameters(m, p.data(), n), SNN_OK);
    return p;
}

std::string describe(const snn_model *m) {
    size_t len = 0;
    snn_model_describe(m, nullptr, 0, &len);
    std::string s(len + 1, '\0');
    snn_model_describe(m, &s[0], s.size(), &len);
    s.resize(len);
    return s;
}

bool bit_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

Bytes read_bytes(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string &path, const Bytes &b) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
}

std::vector<std::string> list_dir(const std::string &dir) {
    std::vector<std::string> names;
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d))
            if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
        closedir(d);
    }
    return names;
}

// A fresh scratch directory per test, removed afterwards.
class Files : public ::testing::Test {
protected:
    void SetUp() override {
        const char *base = getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/snn-files-XXXXXX";
        ASSERT_NE(mkdtemp(&tmpl[0]), nullptr);
        dir = tmpl;
    }
    void TearDown() override {
        chmod(dir.c_str(), 0755);
        for (const auto &name : list_dir(dir)) {
            std::string p = dir + "/" + name;
            if (rmdir(p.c_str()) != 0) unlink(p.c_str());
        }
        rmdir(dir.c_str());
    }
    std::string path(const char *name) const { return dir + "/" + name; }
    std::string dir;
};

// ---- round trips -----------------------------------------------------------------

TEST_F(Files, SaveThenLoadGivesBitIdenticalParametersAndSpec) {
    for (const char *spec : {kMlp, kCnn}) {
        snn_model *m = make_model(spec, 42);
        ASSERT_EQ(snn_model_save(m, path("model.safetensors").c_str()), SNN_OK) << snn_last_error();
        snn_model *loaded = nullptr;
        ASSERT_EQ(snn_model_load(path("model.safetensors").c_str(), &loaded), SNN_OK) << snn_last_error();
        EXPECT_TRUE(bit_equal(params_of(m), params_of(loaded))) << spec;
        EXPECT_EQ(describe(m), describe(loaded));
        int32_t device = 0;
        snn_model_device(loaded, &device);
        EXPECT_EQ(device, SNN_DEVICE_CPU);
        snn_model_destroy(loaded);
        snn_model_destroy(m);
    }
}

// A model whose spec reads earlier layers with from= (a downsampling block
// with a projection shortcut, batchnorm state moved by a training pass): the
// file holds the spec with from=, and the loaded model has the same
// parameters and state and gives the same outputs, bit for bit, in both
// modes.
TEST_F(Files, AModelWithBranchesReadByFromRoundTripsBitForBit) {
    const char *spec = "input 8x8x3; conv 3 8 relu pad=1 name=a; conv 3 16 stride=2 pad=1 nobias; batchnorm; relu; "
                       "conv 3 16 pad=1 name=main; conv 1 16 stride=2 from=a; add main; relu; globalavgpool; "
                       "flatten; dense 4";
    snn_model *m = make_model(spec, 11);
    std::vector<float> x(3 * 8 * 8 * 3);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 29 % 31) - 15) / 8.0f;
    auto outputs = [&](snn_model *model, int training) {
        snn_forward_cache *f = nullptr;
        EXPECT_EQ(snn_preallocate(model, 3, &f), SNN_OK) << snn_last_error();
        EXPECT_EQ(snn_cache_set_training(f, training), SNN_OK);
        EXPECT_EQ(snn_set_inputs(f, x.data(), x.size()), SNN_OK);
        EXPECT_EQ(snn_forward(f, model), SNN_OK) << snn_last_error();
        std::vector<float> y(3 * 4);
        EXPECT_EQ(snn_get_outputs(f, y.data(), y.size()), SNN_OK);
        snn_forward_cache_destroy(f);
        return y;
    };
    outputs(m, 1);  // moves the running statistics away from their initial values
    ASSERT_EQ(snn_model_save(m, path("from.safetensors").c_str()), SNN_OK) << snn_last_error();
    const Bytes file = read_bytes(path("from.safetensors"));
    const std::string text(file.begin(), file.end());
    EXPECT_NE(text.find("conv 1 16 stride=2 from=a; add main"), std::string::npos);
    snn_model *loaded = nullptr;
    ASSERT_EQ(snn_model_load(path("from.safetensors").c_str(), &loaded), SNN_OK) << snn_last_error();
    EXPECT_EQ(describe(loaded), describe(m));
    EXPECT_TRUE(bit_equal(params_of(loaded), params_of(m)));
    size_t state = 0;
    ASSERT_EQ(snn_state_count(m, &state), SNN_OK);
    std::vector<float> sa(state), sb(state);
    ASSERT_EQ(snn_get_state(m, sa.data(), state), SNN_OK);
    ASSERT_EQ(snn_get_state(loaded, sb.data(), state), SNN_OK);
    EXPECT_TRUE(bit_equal(sa, sb));
    EXPECT_NE(sa[0], 0.0f);
    const std::vector<float> ya = outputs(m, 0), yb = outputs(loaded, 0);
    EXPECT_TRUE(bit_equal(ya, yb));
    bool varied = false;
    for (float v : ya) varied = varied || v != ya[0];
    EXPECT_TRUE(varied);
    EXPECT_TRUE(bit_equal(outputs(m, 1), outputs(loaded, 1)));
    snn_model_destroy(loaded);
    snn_model_destroy(m);
}

TEST_F(Files, BufferRoundTripMatchesTheFileByteForByte) {
    snn_model *m = make_model(kCnn, 7);
    size_t size = 0;
    ASSERT_EQ(snn_model_save_to_buffer(m, nullptr, 0, &size), SNN_OK);
    Bytes buf(size);
    size_t written = 0;
    EXPECT_EQ(snn_model_save_to_buffer(m, buf.data(), size - 1, &written), SNN_ERR_COUNT);
    EXPECT_EQ(written, 0u);  // a failed call leaves out parameters untouched
    ASSERT_EQ(snn_model_save_to_buffer(m, buf.data(), buf.size(), &written), SNN_OK);
    EXPECT_EQ(written, size);
    ASSERT_EQ(snn_model_save(m, path("m.safetensors").c_str()), SNN_OK);
    EXPECT_EQ(read_bytes(path("m.safetensors")), buf);

    snn_model *loaded = nullptr;
    ASSERT_EQ(snn_model_load_from_buffer(buf.data(), buf.size(), &loaded), SNN_OK) << snn_last_error();
    EXPECT_TRUE(bit_equal(params_of(m), params_of(loaded)));
    snn_model_destroy(loaded);
    snn_model_destroy(m);
}

TEST_F(Files, TheFileIsSafetensorsWithAnEightByteAlignedHeader) {
    snn_model *m = make_model("input 3; dense 2", 1);
    size_t size = 0;
    snn_model_save_to_buffer(m, nullptr, 0, &size);
    Bytes buf(size);
    ASSERT_EQ(snn_model_save_to_buffer(m, buf.data(), size, &size), SNN_OK);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | buf[size_t(i)];
    EXPECT_EQ(n % 8, 0u);
    EXPECT_EQ(size, 8 + n + (2 * 3 + 2) * 4);  // weight [2, 3] and bias [2], F32
    std::string json(buf.begin() + 8, buf.begin() + 8 + long(n));
    EXPECT_NE(json.find("\"format\":\"snn\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"spec\":\"input 3; dense 2\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"layers.1.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}"),
              std::string::npos) << json;
    EXPECT_NE(json.find("\"layers.1.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}"),
              std::string::npos) << json;
    snn_model_destroy(m);
}

// ---- checkpoints -----------------------------------------------------------------

// Deterministic training data: inputs in [-1, 1), labels in [0, classes).
struct Data {
    std::vector<float> x;
    std::vector<int32_t> y;
};
Data make_data(size_t samples, size_t features, int32_t classes) {
    Data d;
    uint32_t s = 12345;
    auto next = [&] { return s = s * 1664525u + 1013904223u; };
    for (size_t i = 0; i < samples * features; ++i) d.x.push_back(float(next() >> 8) / float(1 << 23) - 1.0f);
    for (size_t i = 0; i < samples; ++i) d.y.push_back(int32_t(next() >> 16) % classes);
    return d;
}

// Trains `steps` mini-batches of 4 starting at batch `first`.
void train(snn_model *m, snn_optimiser *opt, const Data &d, int first, int steps) {
    size_t features = 0;
    snn_model_input_size(m, &features);
    snn_forward_cache *f = nullptr;
    snn_backward_cache *b = nullptr;
    ASSERT_EQ(snn_preallocate(m, 4, &f), SNN_OK);
    ASSERT_EQ(snn_preallocate_grads(m, 4, &b), SNN_OK);
    const size_t samples = d.y.size();
    for (int step = first; step < first + steps; ++step) {
        int64_t idx[4];
        for (int k = 0; k < 4; ++k) idx[k] = int64_t((size_t(step) * 4 + size_t(k)) % samples);
        ASSERT_EQ(snn_set_inputs_gather(f, d.x.data(), samples, idx, 4), SNN_OK);
        ASSERT_EQ(snn_set_labels_gather(b, d.y.data(), samples, idx, 4), SNN_OK);
        ASSERT_EQ(snn_forward(f, m), SNN_OK);
        ASSERT_EQ(snn_backprop(b, f, m, SNN_LOSS_LOGIT_CROSSENTROPY, nullptr), SNN_OK) << snn_last_error();
        ASSERT_EQ(snn_optimiser_step(opt, m, b), SNN_OK) << snn_last_error();
    }
    snn_backward_cache_destroy(b);
    snn_forward_cache_destroy(f);
}

struct ResumeCase {
    const char *spec;
    snn_optimiser_kind kind;
    double momentum;  // SGD only
};

TEST_F(Files, TrainingResumedFromACheckpointIsBitIdentical) {
    const ResumeCase cases[] = {{kMlp, SNN_OPTIMISER_ADAM, 0},
                                {kMlp, SNN_OPTIMISER_SGD, 0.9},
                                {kCnn, SNN_OPTIMISER_ADAM, 0},
                                {kCnn, SNN_OPTIMISER_SGD, 0.9},
                                {kMlp, SNN_OPTIMISER_ADAMW, 0},
                                {kMlp, SNN_OPTIMISER_RMSPROP, 0}};
    for (const ResumeCase &c : cases) {
        SCOPED_TRACE(std::string(c.spec) + " / optimiser " + std::to_string(c.kind));
        size_t features = 0;
        snn_model *probe = make_model(c.spec, 0);
        snn_model_input_size(probe, &features);
        snn_model_destroy(probe);
        const Data d = make_data(24, features, 3);
        auto make_opt = [&](snn_model *m) {
            snn_optimiser *o = nullptr;
            EXPECT_EQ(snn_optimiser_create(m, c.kind, &o), SNN_OK);
            // Hyperparameters that do not print exactly in few digits.
            EXPECT_EQ(snn_optimiser_set(o, SNN_HP_LEARNING_RATE, 0.01 / 3), SNN_OK);
            if (c.kind == SNN_OPTIMISER_SGD) {
                EXPECT_EQ(snn_optimiser_set(o, SNN_HP_MOMENTUM, c.momentum), SNN_OK);
                EXPECT_EQ(snn_optimiser_set(o, SNN_HP_NESTEROV, 1), SNN_OK);
            }
            if (c.kind == SNN_OPTIMISER_ADAM) {
                EXPECT_EQ(snn_optimiser_set(o, SNN_HP_BETA1, 0.85 + 1e-9), SNN_OK);
            }
            return o;
        };

        snn_model *whole = make_model(c.spec, 9);
        snn_optimiser *whole_opt = make_opt(whole);
        train(whole, whole_opt, d, 0, 8);

        snn_model *first = make_model(c.spec, 9);
        snn_optimiser *first_opt = make_opt(first);
        train(first, first_opt, d, 0, 3);
        ASSERT_EQ(snn_checkpoint_save(first, first_opt, path("ckpt.safetensors").c_str()), SNN_OK)
            << snn_last_error();
        snn_optimiser_destroy(first_opt);
        snn_model_destroy(first);

        snn_model *resumed = nullptr;
        snn_optimiser *resumed_opt = nullptr;
        ASSERT_EQ(snn_checkpoint_load(path("ckpt.safetensors").c_str(), &resumed, &resumed_opt), SNN_OK)
            << snn_last_error();
        int64_t steps = 0;
        snn_optimiser_step_count(resumed_opt, &steps);
        EXPECT_EQ(steps, 3);
        double lr = 0;
        snn_optimiser_get(resumed_opt, SNN_HP_LEARNING_RATE, &lr);
        EXPECT_EQ(lr, 0.01 / 3);
        train(resumed, resumed_opt, d, 3, 5);
        EXPECT_TRUE(bit_equal(params_of(whole), params_of(resumed)));

        // A checkpoint also loads as a plain model.
        snn_model *plain = nullptr;
        EXPECT_EQ(snn_model_load(path("ckpt.safetensors").c_str(), &plain), SNN_OK) << snn_last_error();
        snn_model_destroy(plain);

        snn_optimiser_destroy(resumed_opt);
        snn_model_destroy(resumed);
        snn_optimiser_destroy(whole_opt);
        snn_model_destroy(whole);
    }
}

TEST_F(Files, CheckpointOfAnotherModelsOptimiserIsAMismatch) {
    snn_model *a = make_model(kMlp, 1), *b = make_model(kMlp, 1);
    snn_optimiser *o = nullptr;
    snn_optimiser_create(a, SNN_OPTIMISER_ADAM, &o);
    EXPECT_EQ(snn_checkpoint_save(b, o, path("c").c_str()), SNN_ERR_MODEL_MISMATCH);
    EXPECT_TRUE(list_dir(dir).empty());
    snn_optimiser_destroy(o);
    snn_model_destroy(b);
    snn_model_destroy(a);
}

// ---- atomic saves ------------------------------------------------------------------

TEST_F(Files, SaveIntoAMissingDirectoryIsAnIoErrorNamingThePath) {
    snn_model *m = make_model(kMlp, 1);
    const std::string target = path("no-such-dir/model.safetensors");
    EXPECT_EQ(snn_model_save(m, target.c_str()), SNN_ERR_IO);
    EXPECT_NE(std::string(snn_last_error()).find(target), std::string::npos) << snn_last_error();
    EXPECT_NE(std::string(snn_last_error()).find("No such file or directory"), std::string::npos);
    snn_model_destroy(m);
}

TEST_F(Files, AFailedWriteLeavesTheOldFileAndNoTemporaryFile) {
    snn_model *old_model = make_model("input 2; dense 1", 3);
    ASSERT_EQ(snn_model_save(old_model, path("model").c_str()), SNN_OK);
    const Bytes before = read_bytes(path("model"));
    snn_model *big = make_model(kCnn, 4);

    // Limit the size of files this process may write: the save's write fails
    // with EFBIG (even for root, unlike permissions).
    signal(SIGXFSZ, SIG_IGN);
    rlimit saved;
    getrlimit(RLIMIT_FSIZE, &saved);
    rlimit small = saved;
    small.rlim_cur = 256;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    const snn_status st = snn_model_save(big, path("model").c_str());
    setrlimit(RLIMIT_FSIZE, &saved);
    EXPECT_EQ(st, SNN_ERR_IO);
    EXPECT_NE(std::string(snn_last_error()).find("File too large"), std::string::npos) << snn_last_error();

    EXPECT_EQ(read_bytes(path("model")), before);
    EXPECT_EQ(list_dir(dir), std::vector<std::string>{"model"});
    snn_model_destroy(big);
    snn_model_destroy(old_model);
}

TEST_F(Files, SavingOverADirectoryFailsAndRemovesTheTemporaryFile) {
    ASSERT_EQ(mkdir(path("taken").c_str(), 0755), 0);
    ASSERT_EQ(mkdir(path("taken/inside").c_str(), 0755), 0);
    snn_model *m = make_model(kMlp, 1);
    EXPECT_EQ(snn_model_save(m, path("taken").c_str()), SNN_ERR_IO);
    EXPECT_EQ(list_dir(dir), std::vector<std::string>{"taken"});
    EXPECT_EQ(list_dir(path("taken")), std::vector<std::string>{"inside"});
    rmdir(path("taken/inside").c_str());
    snn_model_destroy(m);
}

TEST_F(Files, SaveIntoAReadOnlyDirectoryFailsAndKeepsTheOldFile) {
    if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
    snn_model *m = make_model(kMlp, 1);
    ASSERT_EQ(snn_model_save(m, path("model").c_str()), SNN_OK);
    const Bytes before = read_bytes(path("model"));
    snn_model_init(m, 2);
    ASSERT_EQ(chmod(dir.c_str(), 0555), 0);
    EXPECT_EQ(snn_model_save(m, path("model").c_str()), SNN_ERR_IO);
    EXPECT_NE(std::string(snn_last_error()).find("Permission denied"), std::string::npos);
    chmod(dir.c_str(), 0755);
    EXPECT_EQ(read_bytes(path("model")), before);
    EXPECT_EQ(list_dir(dir), std::vector<std::string>{"model"});
    snn_model_destroy(m);
}

TEST_F(Files, LoadingAMissingFileIsAnIoError) {
    snn_model *m = nullptr;
    EXPECT_EQ(snn_model_load(path("absent").c_str(), &m), SNN_ERR_IO);
    EXPECT_NE(std::string(snn_last_error()).find("absent"), std::string::npos);
    EXPECT_EQ(m, nullptr);
    EXPECT_EQ(snn_model_load(dir.c_str(), &m), SNN_ERR_IO);  // a directory
}

// ---- killed saves ------------------------------------------------------------------

// Names of temporary files of `target` in dir: target + ".tmp-" + 16 hex digits.
std::vector<std::string> temp_files_of(const std::string &dir, const std::string &target) {
    std::vector<std::string> names;
    for (const auto &name : list_dir(dir))
        if (name.size() == target.size() + 5 + 16 && name.compare(0, target.size() + 5, target + ".tmp-") == 0)
            names.push_back(name);
    std::sort(names.begin(), names.end());
    return names;
}

void set_age(const std::string &path, int seconds) {
    const timespec now = {time(nullptr) - seconds, 0};
    const timespec times[2] = {now, now};
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW), 0) << path;
}

void kill_myself(int) { kill(getpid(), SIGKILL); }

// 20 processes forked after a save are each killed with SIGKILL in the
// middle of their own save (their write crosses a file size limit, whose
// signal kills them). Each leaves its own temporary file: no two chose the
// same name, so none failed with "File exists", and the parent still saves.
TEST_F(Files, SavesKilledInForkedChildrenNeverShareATemporaryName) {
    snn_model *m = make_model(kCnn, 5);
    const std::string target = path("model");
    ASSERT_EQ(snn_model_save(m, target.c_str()), SNN_OK) << snn_last_error();
    for (int child = 0; child < 20; ++child) {
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            signal(SIGXFSZ, kill_myself);
            const rlimit small = {256, 256};
            setrlimit(RLIMIT_FSIZE, &small);
            _exit(snn_model_save(m, target.c_str()) == SNN_OK ? 2 : 1);  // never reached if killed
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
            << "child " << child << " was not killed mid-save: exit code "
            << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << " (1: its save failed)";
    }
    const std::vector<std::string> left = temp_files_of(dir, "model");
    EXPECT_EQ(left.size(), 20u);
    for (const auto &name : left) {
        struct stat st;
        ASSERT_EQ(stat(path(name.c_str()).c_str(), &st), 0);
        EXPECT_EQ(st.st_size, 256) << name;  // cut off where the limit stopped it
    }
    // Fresh temporary files may belong to saves in progress: kept.
    snn_model_init(m, 6);
    ASSERT_EQ(snn_model_save(m, target.c_str()), SNN_OK) << snn_last_error();
    EXPECT_EQ(temp_files_of(dir, "model"), left);
    snn_model *loaded = nullptr;
    ASSERT_EQ(snn_model_load(target.c_str(), &loaded), SNN_OK) << snn_last_error();
    EXPECT_TRUE(bit_equal(params_of(m), params_of(loaded)));
    snn_model_destroy(loaded);
    snn_model_destroy(m);
}

// A save removes its target's temporary files that are more than a minute
// old, and nothing else: not a younger one (another save in progress), not
// one of another target, not a name snn would not write, not a directory.
TEST_F(Files, ASaveRemovesStaleTemporaryFilesOfItsTargetOnly) {
    const std::string hex = "0123456789abcdef";
    std::vector<std::string> stale;
    for (int i = 0; i < 32; ++i) {
        std::string name = "model.tmp-";
        for (int d = 0; d < 16; ++d) name += hex[size_t((i * 7 + d * 3) % 16)];
        stale.push_back(name);
    }
    const std::vector<std::string> kept = {
        "model.tmp-00000000000000ff",   // a save in progress: 10 s old
        "other.tmp-0123456789abcdef",   // another target
        "model.tmp-0123456789ABCDEF",   // not a name snn writes (upper case)
        "model.tmp-0123456789abcde",    // 15 digits
        "model.tmp-0123456789abcdef0",  // 17 digits
        "model.tmp-0123456789abcdeg",   // not hex
        "xmodel.tmp-0123456789abcdef",  // another target's prefix
        "model.tmp-fedcba9876543210",   // a directory
        "model",
    };
    for (const auto &name : stale) {
        write_bytes(path(name.c_str()), Bytes(100, 1));
        set_age(path(name.c_str()), 61 + int(name[10] - '0') % 7);
    }
    for (const auto &name : kept) {
        if (name == "model.tmp-fedcba9876543210") {
            ASSERT_EQ(mkdir(path(name.c_str()).c_str(), 0755), 0);
        } else {
            write_bytes(path(name.c_str()), Bytes(10, 2));
        }
        set_age(path(name.c_str()), name == "model.tmp-00000000000000ff" ? 10 : 3600);
    }
    snn_model *m = make_model(kMlp, 1);
    ASSERT_EQ(snn_model_save(m, path("model").c_str()), SNN_OK) << snn_last_error();
    std::vector<std::string> now = list_dir(dir), expected = kept;
    std::sort(now.begin(), now.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(now, expected);
    snn_model *loaded = nullptr;
    EXPECT_EQ(snn_model_load(path("model").c_str(), &loaded), SNN_OK) << snn_last_error();
    snn_model_destroy(loaded);
    snn_model_destroy(m);
}

// ---- malformed files -----------------------------------------------------------------

// A file from a JSON header (padded here) and data bytes.
Bytes make_file(const std::string &json, size_t data_bytes, uint64_t header_length = UINT64_MAX) {
    std::string text = json;
    text.append((8 - text.size() % 8) % 8, ' ');
    const uint64_t n = header_length == UINT64_MAX ? text.size() : header_length;
    Bytes b;
    for (int i = 0; i < 8; ++i) b.push_back((unsigned char)(n >> (8 * i)));
    b.insert(b.end(), text.begin(), text.end());
    b.resize(b.size() + data_bytes, 0);
    return b;
}

const std::string kMeta = R"("__metadata__":{"format":"snn","format_version":"1","spec":"input 3; dense 2"})";
std::string entry(const char *name, const char *dtype, const char *shape, size_t begin, size_t end) {
    return std::string("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}
const std::string kWeight = entry("layers.1.weight", "F32", "[2,3]", 0, 24);
const std::string kBias = entry("layers.1.bias", "F32", "[2]", 24, 32);

struct Malformed {
    const char *what;
    Bytes file;
    snn_status status;
    const char *message;  // part of snn_last_error()
};

TEST(MalformedFiles, EachProblemIsReportedWithItsCause) {
    const Malformed cases[] = {
        {"valid", make_file("{" + kMeta + "," + kWeight + "," + kBias + "}", 32), SNN_OK, ""},
        {"shorter than 8 bytes", Bytes(5, 0), SNN_ERR_FILE_FORMAT, "truncated: 5 bytes"},
        {"huge header length", make_file("{}", 0, uint64_t(1) << 40), SNN_ERR_FILE_FORMAT, "above the limit"},
        {"header past the end", make_file("{}", 0, 64), SNN_ERR_FILE_FORMAT, "truncated: header length 64"},
        {"bad JSON", make_file("{\"a\":", 0), SNN_ERR_FILE_FORMAT, "JSON header is malformed"},
        {"JSON array", make_file("[1,2]", 0), SNN_ERR_FILE_FORMAT, "not an object"},
        {"deep JSON", make_file("{\"a\":[[[[1]]]]}", 0), SNN_ERR_FILE_FORMAT, "nests deeper"},
        {"no metadata", make_file("{" + kWeight + "," + kBias + "}", 32), SNN_ERR_FILE_FORMAT, "no __metadata__"},
        {"metadata not string",
         make_file(R"({"__metadata__":{"format":1},)" + kWeight + "," + kBias + "}", 32), SNN_ERR_FILE_FORMAT,
         "'format' is not a string"},
        {"other format",
         make_file(R"({"__metadata__":{"format":"pt","format_version":"1","spec":"input 3; dense 2"},)" + kWeight +
                       "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "\"format\" is \"pt\""},
        {"future version",
         make_file(R"({"__metadata__":{"format":"snn","format_version":"2","spec":"input 3; dense 2"},)" + kWeight +
                       "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "format_version \"2\" is not supported"},
        {"no spec", make_file(R"({"__metadata__":{"format":"snn","format_version":"1"},)" + kWeight + "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "no \"spec\""},
        {"bad spec", make_file(R"({"__metadata__":{"format":"snn","format_version":"1","spec":"input 3; dens 2"}})", 0),
         SNN_ERR_SPEC, "the file's spec"},
        {"missing tensor", make_file("{" + kMeta + "," + kWeight + "}", 24), SNN_ERR_FILE_FORMAT,
         "tensor 'layers.1.bias' is missing"},
        {"wrong dtype",
         make_file("{" + kMeta + "," + entry("layers.1.weight", "F64", "[2,3]", 0, 48) + "," +
                       entry("layers.1.bias", "F32", "[2]", 48, 56) + "}", 56),
         SNN_ERR_FILE_FORMAT, "'layers.1.weight' has dtype F64, expected F32"},
        {"unknown dtype", make_file("{" + kMeta + "," + entry("layers.1.weight", "F33", "[2,3]", 0, 24) + "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "unknown dtype 'F33'"},
        {"wrong shape", make_file("{" + kMeta + "," + entry("layers.1.weight", "F32", "[3,2]", 0, 24) + "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "'layers.1.weight' has shape [3, 2], the spec implies [2, 3]"},
        {"negative shape", make_file("{" + kMeta + "," + entry("layers.1.weight", "F32", "[-2,3]", 0, 24) + "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "not a non-negative integer"},
        {"overlap",
         make_file("{" + kMeta + "," + kWeight + "," + entry("layers.1.bias", "F32", "[2]", 16, 24) + "}", 24),
         SNN_ERR_FILE_FORMAT, "overlap"},
        {"out of range", make_file("{" + kMeta + "," + kWeight + "," + kBias + "}", 28), SNN_ERR_FILE_FORMAT,
         "'layers.1.bias': data_offsets [24, 32) is out of range"},
        {"begin after end", make_file("{" + kMeta + "," + kWeight + "," + entry("layers.1.bias", "F32", "[2]", 32, 24) + "}", 32),
         SNN_ERR_FILE_FORMAT, "begin 32 is after end 24"},
        {"span differs from shape",
         make_file("{" + kMeta + "," + kWeight + "," + entry("layers.1.bias", "F32", "[2]", 24, 36) + "}", 36),
         SNN_ERR_FILE_FORMAT, "span 12 bytes but shape [2] of F32 needs 8"},
        {"gap",
         make_file("{" + kMeta + "," + kWeight + "," + entry("layers.1.bias", "F32", "[2]", 28, 36) + "}", 36),
         SNN_ERR_FILE_FORMAT, "bytes [24, 28) of the data belong to no tensor"},
        {"trailing bytes", make_file("{" + kMeta + "," + kWeight + "," + kBias + "}", 40), SNN_ERR_FILE_FORMAT,
         "8 trailing bytes"},
        {"extra tensor",
         make_file("{" + kMeta + "," + kWeight + "," + kBias + "," + entry("extra", "F32", "[1]", 32, 36) + "}", 36),
         SNN_ERR_FILE_FORMAT, "unexpected tensor 'extra'"},
        {"offsets not integers",
         make_file("{" + kMeta + "," + kWeight + R"(,"layers.1.bias":{"dtype":"F32","shape":[2],"data_offsets":[24.0,32]}})", 32),
         SNN_ERR_FILE_FORMAT, "data_offsets begin is not a non-negative integer"},
        {"entry without shape",
         make_file("{" + kMeta + "," + kWeight + R"(,"layers.1.bias":{"dtype":"F32","data_offsets":[24,32]}})", 32),
         SNN_ERR_FILE_FORMAT, "'layers.1.bias' has no shape"},
        // Sizes whose product overflows: the input's 2^64 elements wrapped
        // to 0 and this file loaded, with a network taking 0 inputs.
        {"spec whose sizes overflow",
         make_file(R"({"__metadata__":{"format":"snn","format_version":"1","spec":)"
                   R"("input 16777216x16777216x65536; maxpool 16777216; flatten; dense 1"},)" +
                       entry("layers.3.weight", "F32", "[1,65536]", 0, 262144) + "," +
                       entry("layers.3.bias", "F32", "[1]", 262144, 262148) + "}", 262148),
         SNN_ERR_SHAPE, "the file's spec: layer 0 (input): input 16777216x16777216x65536 is too large"},
        // nlohmann::json keeps one of two equal keys: refused at every level.
        {"key twice in __metadata__",
         make_file(R"({"__metadata__":{"format":"snn","format_version":"1","spec":"input 3; dense 2",)"
                   R"("spec":"input 3; dense 2"},)" + kWeight + "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "the JSON header has the key \"spec\" twice in one object"},
        {"tensor twice", make_file("{" + kMeta + "," + kWeight + "," + kWeight + "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "the key \"layers.1.weight\" twice"},
        {"field twice in a tensor",
         make_file("{" + kMeta + "," + kWeight +
                       R"(,"layers.1.bias":{"dtype":"F64","dtype":"F32","shape":[2],"data_offsets":[24,32]}})", 32),
         SNN_ERR_FILE_FORMAT, "the key \"dtype\" twice"},
        // A model file has no optimiser state or settings.
        {"optimiser.m in a model file",
         make_file("{" + kMeta + "," + kWeight + "," + kBias + "," + entry("optimiser.m", "F32", "[8]", 32, 64) + "}", 64),
         SNN_ERR_FILE_FORMAT, "unexpected tensor 'optimiser.m' (optimiser state in a file whose __metadata__ has no"},
        {"optimiser.v in a model file",
         make_file("{" + kMeta + "," + kWeight + "," + kBias + "," + entry("optimiser.v", "F32", "[8]", 32, 64) + "}", 64),
         SNN_ERR_FILE_FORMAT, "unexpected tensor 'optimiser.v'"},
        {"optimiser setting in a model file",
         make_file(R"({"__metadata__":{"format":"snn","format_version":"1","spec":"input 3; dense 2",)"
                   R"("optimiser.learning_rate":"0.1"},)" + kWeight + "," + kBias + "}", 32),
         SNN_ERR_FILE_FORMAT, "__metadata__ has \"optimiser.learning_rate\" but no \"optimiser\""},
    };
    for (const Malformed &c : cases) {
        snn_model *m = nullptr;
        EXPECT_EQ(snn_model_load_from_buffer(c.file.data(), c.file.size(), &m), c.status) << c.what;
        EXPECT_NE(std::string(snn_last_error()).find(c.message), std::string::npos)
            << c.what << ": " << snn_last_error();
        EXPECT_EQ(m == nullptr, c.status != SNN_OK) << c.what;
        snn_model_destroy(m);
    }
}

// ---- what is not a regular file ------------------------------------------------------

// A load run in a child process, so that a call that blocks fails the test
// instead of hanging it: its status, message and duration.
struct ChildLoad {
    bool finished = false;
    snn_status status = SNN_OK;
    std::string message;
    double seconds = 0;
};

ChildLoad load_in_child(const std::string &file, double limit_seconds) {
    ChildLoad r;
    int fds[2];
    if (pipe(fds) != 0) return r;
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        snn_model *m = nullptr;
        const snn_status st = snn_model_load(file.c_str(), &m);
        const std::string out = std::to_string(st) + "\n" + snn_last_error();
        ssize_t ignored = write(fds[1], out.data(), out.size());
        (void)ignored;
        _exit(0);
    }
    close(fds[1]);
    std::string out;
    for (;;) {
        const double left = limit_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        pollfd p = {fds[0], POLLIN, 0};
        if (left <= 0 || poll(&p, 1, int(left * 1000) + 1) == 0) break;
        char buf[4096];
        const ssize_t n = read(fds[0], buf, sizeof(buf));
        if (n <= 0) {
            r.finished = true;
            break;
        }
        out.append(buf, size_t(n));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!r.finished) kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(fds[0]);
    const size_t nl = out.find('\n');
    if (r.finished && nl != std::string::npos) {
        r.status = snn_status(std::stoi(out.substr(0, nl)));
        r.message = out.substr(nl + 1);
    }
    return r;
}

TEST_F(Files, AFifoWithoutAWriterIsRefusedAtOnce) {
    ASSERT_EQ(mkfifo(path("pipe").c_str(), 0600), 0);
    const ChildLoad r = load_in_child(path("pipe"), 5.0);
    ASSERT_TRUE(r.finished) << "snn_model_load blocked on a FIFO for " << r.seconds << " s";
    EXPECT_EQ(r.status, SNN_ERR_IO);
    EXPECT_NE(r.message.find("it is a FIFO (named pipe), not a regular file"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find(path("pipe")), std::string::npos) << r.message;
}

TEST_F(Files, DirectoriesDevicesAndSocketsAreRefusedNamingWhatTheyAre) {
    snn_model *m = nullptr;
    snn_optimiser *o = nullptr;
    EXPECT_EQ(snn_model_load(dir.c_str(), &m), SNN_ERR_IO);
    EXPECT_NE(std::string(snn_last_error()).find("it is a directory, not a regular file"), std::string::npos)
        << snn_last_error();
    EXPECT_EQ(snn_checkpoint_load(dir.c_str(), &m, &o), SNN_ERR_IO);
    EXPECT_NE(std::string(snn_last_error()).find("a directory"), std::string::npos) << snn_last_error();
    for (const char *device : {"/dev/zero", "/dev/null"}) {
        EXPECT_EQ(snn_model_load(device, &m), SNN_ERR_IO) << device;
        EXPECT_NE(std::string(snn_last_error()).find("it is a character device"), std::string::npos)
            << snn_last_error();
    }
    const int s = socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(s, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    const std::string sock = path("sock");
    ASSERT_LT(sock.size(), sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
    ASSERT_EQ(bind(s, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(snn_model_load(sock.c_str(), &m), SNN_ERR_IO);
    EXPECT_NE(std::string(snn_last_error()).find("it is a socket"), std::string::npos) << snn_last_error();
    close(s);
    EXPECT_EQ(m, nullptr);
    EXPECT_EQ(o, nullptr);
}

// A file of 20 GB (sparse: it takes no disk) is refused from its header
// alone: the 8-byte length, then the JSON, are checked before any data is
// read, and only what the header declares would be. The bound is generous;
// reading the file would take far longer.
TEST_F(Files, AHugeFileIsRefusedFromItsHeaderWithoutReadingTheRest) {
    const off_t huge = off_t(20) << 30;
    auto sparse = [&](const char *name, const Bytes &start) {
        write_bytes(path(name), start);
        return truncate(path(name).c_str(), huge) == 0;
    };
    struct Case {
        const char *name;
        Bytes start;
        const char *message;
    };
    snn_model *small = make_model("input 3; dense 2", 1);
    size_t size = 0;
    ASSERT_EQ(snn_model_save_to_buffer(small, nullptr, 0, &size), SNN_OK);
    Bytes valid(size);
    ASSERT_EQ(snn_model_save_to_buffer(small, valid.data(), valid.size(), &size), SNN_OK);
    snn_model_destroy(small);
    const Case cases[] = {
        {"bad-json", make_file("{\"a\":", 0), "JSON header is malformed"},
        {"huge-length", make_file("{}", 0, uint64_t(1) << 40), "header length 1099511627776 is above the limit"},
        {"zero-length", make_file("", 0, 0), "JSON header is malformed"},
        {"valid-model-then-zeros", valid, "trailing bytes"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        if (!sparse(c.name, c.start)) GTEST_SKIP() << "this file system has no sparse 20 GB files";
        const ChildLoad r = load_in_child(path(c.name), 5.0);
        ASSERT_TRUE(r.finished) << "still loading after " << r.seconds << " s";
        EXPECT_EQ(r.status, SNN_ERR_FILE_FORMAT) << r.message;
        EXPECT_NE(r.message.find(c.message), std::string::npos) << r.message;
        unlink(path(c.name).c_str());
    }
}

TEST_F(Files, AHeaderLengthBeyondTheFileIsRefusedBeforeReadingIt) {
    write_bytes(path("long"), make_file("{}", 0, 99999992));  // below the limit, beyond the file
    snn_model *m = nullptr;
    EXPECT_EQ(snn_model_load(path("long").c_str(), &m), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(std::string(snn_last_error()).find("truncated: header length 99999992 but only 8 bytes follow it"),
              std::string::npos) << snn_last_error();
    write_bytes(path("short"), Bytes(5, 0));
    EXPECT_EQ(snn_model_load(path("short").c_str(), &m), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(std::string(snn_last_error()).find("truncated: 5 bytes"), std::string::npos) << snn_last_error();
    EXPECT_EQ(m, nullptr);
}

TEST_F(Files, ACheckpointNeedsOptimiserStateAndValidHyperparameters) {
    snn_model *m = make_model("input 3; dense 2", 1);
    ASSERT_EQ(snn_model_save(m, path("model").c_str()), SNN_OK);
    snn_model *mo = nullptr;
    snn_optimiser *oo = nullptr;
    EXPECT_EQ(snn_checkpoint_load(path("model").c_str(), &mo, &oo), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(std::string(snn_last_error()).find("not a checkpoint"), std::string::npos) << snn_last_error();

    // A beta1 of 1.5 (out of [0, 1)) written by someone else.
    const std::string meta =
        R"("__metadata__":{"format":"snn","format_version":"1","spec":"input 3; dense 2","optimiser":"adam",)"
        R"("optimiser.steps":"2","optimiser.learning_rate":"0.001","optimiser.beta1":"1.5",)"
        R"("optimiser.beta2":"0.999","optimiser.epsilon":"1e-08","optimiser.weight_decay":"0"})";
    write_bytes(path("ckpt"), make_file("{" + meta + "," + kWeight + "," + kBias + "," +
                                            entry("optimiser.m", "F32", "[8]", 32, 64) + "," +
                                            entry("optimiser.v", "F32", "[8]", 64, 96) + "}", 96));
    EXPECT_EQ(snn_checkpoint_load(path("ckpt").c_str(), &mo, &oo), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(std::string(snn_last_error()).find("\"optimiser.beta1\" = \"1.5\""), std::string::npos)
        << snn_last_error();
    EXPECT_EQ(mo, nullptr);
    EXPECT_EQ(oo, nullptr);
    snn_model_destroy(m);
}

// An Adam checkpoint of "input 3; dense 2" (8 parameters) with the given
// metadata: weight, bias, then the moments m and v.
using Meta = std::vector<std::pair<std::string, std::string>>;

Meta adam_meta() {
    return {{"format", "snn"},           {"format_version", "1"},          {"spec", "input 3; dense 2"},
            {"optimiser", "adam"},       {"optimiser.steps", "2"},         {"optimiser.learning_rate", "0.001"},
            {"optimiser.beta1", "0.9"},  {"optimiser.beta2", "0.999"},     {"optimiser.epsilon", "1e-08"},
            {"optimiser.weight_decay", "0"}};
}

Meta with(Meta meta, const std::string &key, const std::string &value) {
    for (auto &kv : meta)
        if (kv.first == key) {
            kv.second = value;
            return meta;
        }
    meta.emplace_back(key, value);
    return meta;
}

Bytes checkpoint_file(const Meta &meta) {
    std::string json = "{\"__metadata__\":{";
    for (size_t i = 0; i < meta.size(); ++i)
        json += (i ? "," : "") + ("\"" + meta[i].first + "\":\"" + meta[i].second + "\"");
    json += "}," + kWeight + "," + kBias + "," + entry("optimiser.m", "F32", "[8]", 32, 64) + "," +
            entry("optimiser.v", "F32", "[8]", 64, 96) + "}";
    return make_file(json, 96);
}

// A checkpoint is validated as snn_optimiser_set validates: values that are
// not finite in float32, a step count whose t + 1 would overflow, settings
// the kind does not have. snn_model_load checks the same part of a
// checkpoint, since it is the same file.
TEST_F(Files, CheckpointsWithSettingsSnnWouldRefuseAreFileFormatErrors) {
    struct Case {
        Meta meta;
        const char *message;
    };
    const Case cases[] = {
        {with(adam_meta(), "optimiser.steps", "9223372036854775807"),
         "\"optimiser.steps\" = \"9223372036854775807\" is not a step count in [0, 2^53]"},
        {with(adam_meta(), "optimiser.steps", "9007199254740993"), "is not a step count in [0, 2^53]"},
        {with(adam_meta(), "optimiser.steps", "99999999999999999999"), "is not a step count"},
        {with(adam_meta(), "optimiser.steps", "-1"), "is not a step count"},
        {with(adam_meta(), "optimiser.learning_rate", "1e300"),
         "\"optimiser.learning_rate\" = \"1e300\" is refused: learning rate must be in [0, 3.40282347e+38]"},
        {with(adam_meta(), "optimiser.learning_rate", "3.5e38"), "learning rate must be in [0, 3.40282347e+38]"},
        {with(adam_meta(), "optimiser.learning_rate", "1e400"), "\"optimiser.learning_rate\" = \"1e400\" is not a number"},
        {with(adam_meta(), "optimiser.learning_rate", "inf"), "learning rate must be finite"},
        {with(adam_meta(), "optimiser.weight_decay", "1e300"), "weight decay must be in [0, 3.40282347e+38]"},
        {with(with(adam_meta(), "optimiser.learning_rate", "1e20"), "optimiser.weight_decay", "1e20"),
         "weight decay 1e+20 times learning rate 1e+20 is above the largest float32"},
        {with(adam_meta(), "optimiser.epsilon", "1e-320"), "epsilon must be in [1.17549435e-38, 3.40282347e+38]"},
        {with(adam_meta(), "optimiser.beta2", "nan"), "beta2 must be in [0, 1)"},
        {with(adam_meta(), "optimiser.beta1", "1"), "beta1 must be in [0, 1)"},
        {with(adam_meta(), "optimiser.momentum", "0.9"), "\"optimiser.momentum\", which Adam does not have"},
        {with(adam_meta(), "optimiser.lr", "0.1"), "unknown key \"optimiser.lr\""},
        {with(adam_meta(), "optimiser", "lbfgs"), "\"optimiser\" is \"lbfgs\""},
    };
    for (const Case &c : cases) {
        const Bytes file = checkpoint_file(c.meta);
        write_bytes(path("ckpt"), file);
        snn_model *m = nullptr;
        snn_optimiser *o = nullptr;
        EXPECT_EQ(snn_checkpoint_load(path("ckpt").c_str(), &m, &o), SNN_ERR_FILE_FORMAT) << c.message;
        EXPECT_NE(std::string(snn_last_error()).find(c.message), std::string::npos) << snn_last_error();
        EXPECT_EQ(snn_model_load_from_buffer(file.data(), file.size(), &m), SNN_ERR_FILE_FORMAT) << c.message;
        EXPECT_NE(std::string(snn_last_error()).find(c.message), std::string::npos) << snn_last_error();
        EXPECT_EQ(m, nullptr);
        EXPECT_EQ(o, nullptr);
    }
    // A metadata key twice: nlohmann::json would keep one of them.
    Meta twice = adam_meta();
    twice.emplace_back("optimiser.learning_rate", "1e300");
    write_bytes(path("ckpt"), checkpoint_file(twice));
    snn_model *m = nullptr;
    snn_optimiser *o = nullptr;
    EXPECT_EQ(snn_checkpoint_load(path("ckpt").c_str(), &m, &o), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(std::string(snn_last_error()).find("the key \"optimiser.learning_rate\" twice"), std::string::npos)
        << snn_last_error();
}

// adam_meta() with a loss scaling (scale 1024, growth 2, backoff 0.5,
// interval 2000, 3 good steps).
Meta scaled_meta() {
    Meta meta = adam_meta();
    meta.insert(meta.end(), {{"loss_scaling.scale", "1024"},
                             {"loss_scaling.growth_factor", "2"},
                             {"loss_scaling.backoff_factor", "0.5"},
                             {"loss_scaling.growth_interval", "2000"},
                             {"loss_scaling.good_steps", "3"}});
    return meta;
}

// The loss scaling's counts are decimal integers, read as such: a number
// that does not fit in 64 bits, or fits but is above what
// snn_set_loss_scaling_state accepts (2^53 + 1, which a double would round to
// 2^53), is refused by both loaders; so is a scale that is 0 as a float.
TEST_F(Files, LossScalingCountsAreReadAsIntegers) {
    struct Case {
        Meta meta;
        const char *message;
    };
    const Case cases[] = {
        {with(scaled_meta(), "loss_scaling.growth_interval", "1e300"),
         "\"loss_scaling.growth_interval\" = \"1e300\" is not a decimal integer in [-2^63, 2^63)"},
        {with(scaled_meta(), "loss_scaling.growth_interval", "nan"), "= \"nan\" is not a decimal integer"},
        {with(scaled_meta(), "loss_scaling.growth_interval", "18446744073709551616"),
         "= \"18446744073709551616\" is not a decimal integer"},
        {with(scaled_meta(), "loss_scaling.growth_interval", "2000.5"), "= \"2000.5\" is not a decimal integer"},
        {with(scaled_meta(), "loss_scaling.good_steps", "-1e19"),
         "\"loss_scaling.good_steps\" = \"-1e19\" is not a decimal integer"},
        {with(scaled_meta(), "loss_scaling.growth_interval", "9007199254740993"),
         "the growth interval 9007199254740993 is not in [1, 2^53]"},
        {with(scaled_meta(), "loss_scaling.good_steps", "-1"), "the count of good steps -1 is not in"},
        {with(scaled_meta(), "loss_scaling.scale", "1e-46"), "the loss scale 1e-46 is 0 as a float"},
    };
    snn_model *model = make_model("input 3; dense 2", 1);
    snn_backward_cache *cache = nullptr;
    ASSERT_EQ(snn_preallocate_grads(model, 1, &cache), SNN_OK);
    for (const Case &c : cases) {
        write_bytes(path("ckpt"), checkpoint_file(c.meta));
        snn_model *m = nullptr;
        snn_optimiser *o = nullptr;
        EXPECT_EQ(snn_checkpoint_load(path("ckpt").c_str(), &m, &o), SNN_ERR_FILE_FORMAT) << c.message;
        EXPECT_NE(std::string(snn_last_error()).find(c.message), std::string::npos) << snn_last_error();
        EXPECT_EQ(m, nullptr);
        EXPECT_EQ(snn_checkpoint_load_loss_scaling(path("ckpt").c_str(), cache), SNN_ERR_FILE_FORMAT) << c.message;
        EXPECT_NE(std::string(snn_last_error()).find(c.message), std::string::npos) << snn_last_error();
    }
    // The largest interval, and the most good steps below it, load.
    write_bytes(path("ckpt"), checkpoint_file(with(with(scaled_meta(), "loss_scaling.growth_interval",
                                                        "9007199254740992"),
                                                   "loss_scaling.good_steps", "9007199254740991")));
    ASSERT_EQ(snn_checkpoint_load_loss_scaling(path("ckpt").c_str(), cache), SNN_OK) << snn_last_error();
    int64_t interval = 0, good = 0;
    ASSERT_EQ(snn_loss_scaling_state(cache, nullptr, nullptr, nullptr, nullptr, &interval, &good, nullptr), SNN_OK);
    EXPECT_EQ(interval, int64_t(1) << 53);
    EXPECT_EQ(good, (int64_t(1) << 53) - 1);
    snn_backward_cache_destroy(cache);
    snn_model_destroy(model);
}

// snn_checkpoint_load_loss_scaling refuses what snn_checkpoint_load refuses,
// the optimiser part included, and leaves the cache's scaling as it was.
TEST_F(Files, LoadingTheLossScalingChecksTheWholeCheckpoint) {
    snn_model *model = make_model("input 3; dense 2", 1);
    snn_backward_cache *cache = nullptr;
    ASSERT_EQ(snn_preallocate_grads(model, 1, &cache), SNN_OK);
    ASSERT_EQ(snn_set_loss_scaling_state(cache, 8.0, 2.0, 0.5, 10, 4), SNN_OK);
    write_bytes(path("ckpt"), checkpoint_file(with(scaled_meta(), "optimiser.beta1", "1.5")));
    snn_model *m = nullptr;
    snn_optimiser *o = nullptr;
    EXPECT_EQ(snn_checkpoint_load(path("ckpt").c_str(), &m, &o), SNN_ERR_FILE_FORMAT);
    EXPECT_EQ(snn_checkpoint_load_loss_scaling(path("ckpt").c_str(), cache), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(std::string(snn_last_error()).find("\"optimiser.beta1\" = \"1.5\""), std::string::npos)
        << snn_last_error();
    double scale = 0;
    int64_t good = 0;
    ASSERT_EQ(snn_loss_scaling_state(cache, nullptr, &scale, nullptr, nullptr, nullptr, &good, nullptr), SNN_OK);
    EXPECT_EQ(scale, 8.0);
    EXPECT_EQ(good, 4);
    // The same file with a valid optimiser part gives the file's scaling.
    write_bytes(path("ckpt"), checkpoint_file(scaled_meta()));
    ASSERT_EQ(snn_checkpoint_load_loss_scaling(path("ckpt").c_str(), cache), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_loss_scaling_state(cache, nullptr, &scale, nullptr, nullptr, nullptr, &good, nullptr), SNN_OK);
    EXPECT_EQ(scale, 1024.0);
    EXPECT_EQ(good, 3);
    snn_backward_cache_destroy(cache);
    snn_model_destroy(model);
}

// The largest step count a checkpoint may hold, 2^53, loads; the optimiser
// then refuses to count further until it is reset.
TEST_F(Files, AnOptimiserStopsAtTheLargestStepCount) {
    write_bytes(path("ckpt"), checkpoint_file(with(adam_meta(), "optimiser.steps", "9007199254740992")));
    snn_model *m = nullptr;
    snn_optimiser *o = nullptr;
    ASSERT_EQ(snn_checkpoint_load(path("ckpt").c_str(), &m, &o), SNN_OK) << snn_last_error();
    int64_t steps = 0;
    ASSERT_EQ(snn_optimiser_step_count(o, &steps), SNN_OK);
    EXPECT_EQ(steps, int64_t(1) << 53);
    snn_backward_cache *b = nullptr;
    ASSERT_EQ(snn_preallocate_grads(m, 1, &b), SNN_OK);
    const std::vector<float> g(8, 0.5f);
    ASSERT_EQ(snn_set_gradients(b, g.data(), g.size()), SNN_OK);
    const std::vector<float> before = params_of(m);
    EXPECT_EQ(snn_optimiser_step(o, m, b), SNN_ERR_STATE);
    EXPECT_NE(std::string(snn_last_error()).find("2^53 steps"), std::string::npos) << snn_last_error();
    EXPECT_TRUE(bit_equal(params_of(m), before));
    ASSERT_EQ(snn_optimiser_reset(o), SNN_OK);
    EXPECT_EQ(snn_optimiser_step(o, m, b), SNN_OK) << snn_last_error();
    snn_optimiser_step_count(o, &steps);
    EXPECT_EQ(steps, 1);
    snn_backward_cache_destroy(b);
    snn_optimiser_destroy(o);
    snn_model_destroy(m);
}

// ---- files written by PyTorch ------------------------------------------------------------

std::vector<float> read_floats(const std::string &path) {
    Bytes b = read_bytes(path);
    std::vector<float> f(b.size() / 4);
    for (size_t i = 0; i < f.size(); ++i) {
        uint32_t u = uint32_t(b[4 * i]) | uint32_t(b[4 * i + 1]) << 8 | uint32_t(b[4 * i + 2]) << 16 |
                     uint32_t(b[4 * i + 3]) << 24;
        std::memcpy(&f[i], &u, 4);
    }
    return f;
}

TEST(TorchFiles, ModelsWrittenByPyTorchGiveItsOutputs) {
    const char *data_dir = getenv("SNN_TEST_DATA");
    ASSERT_NE(data_dir, nullptr) << "SNN_TEST_DATA must name tests/files/data";
    for (const char *name : {"torch_mlp", "torch_cnn", "torch_seq", "torch_attention", "torch_recurrent"}) {
        SCOPED_TRACE(name);
        const std::string base = std::string(data_dir) + "/" + name;
        snn_model *m = nullptr;
        ASSERT_EQ(snn_model_load((base + ".safetensors").c_str(), &m), SNN_OK) << snn_last_error();
        const std::vector<float> x = read_floats(base + "_inputs.f32");
        const std::vector<float> expected = read_floats(base + "_outputs.f32");
        size_t features = 0, outputs = 0;
        snn_model_input_size(m, &features);
        snn_model_output_size(m, &outputs);
        const int64_t batch = int64_t(x.size() / features);
        ASSERT_EQ(expected.size(), size_t(batch) * outputs);
        snn_forward_cache *f = nullptr;
        ASSERT_EQ(snn_preallocate(m, batch, &f), SNN_OK);
        ASSERT_EQ(snn_set_inputs(f, x.data(), x.size()), SNN_OK);
        ASSERT_EQ(snn_forward(f, m), SNN_OK);
        std::vector<float> y(expected.size());
        ASSERT_EQ(snn_get_outputs(f, y.data(), y.size()), SNN_OK);
        for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-5) << "output " << i;
        snn_forward_cache_destroy(f);
        snn_model_destroy(m);
    }
}

// The JSON header of a safetensors file: each tensor's name, dtype and shape
// (offsets dropped), as one sorted text per tensor.
std::set<std::string> tensor_entries(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
    std::string json = bytes.substr(8, size_t(n));
    json.erase(std::remove(json.begin(), json.end(), ' '), json.end());
    std::set<std::string> out;
    // Entries look like "name":{"dtype":"F32","shape":[..],"data_offsets":[..]}
    size_t at = 0;
    while ((at = json.find("\"dtype\"", at)) != std::string::npos) {
        const size_t name_end = json.rfind("\":{", at);
        const size_t name_begin = json.rfind('"', name_end - 1) + 1;
        const size_t shape_end = json.find(']', at);
        out.insert(json.substr(name_begin, name_end - name_begin) + json.substr(at, shape_end + 1 - at));
        at = shape_end;
    }
    return out;
}

// A residual block with batchnorm, layernorm and dropout written by PyTorch
// (its module's state_dict, running statistics after three training steps):
// snn reads it, gives PyTorch's eval-mode outputs in inference mode, and
// saves a file with exactly the state_dict's names, dtypes and shapes, which
// the module loads with load_state_dict(strict=True).
TEST_F(Files, APyTorchResidualNetWithBatchnormRoundTrips) {
    const char *data_dir = getenv("SNN_TEST_DATA");
    ASSERT_NE(data_dir, nullptr) << "SNN_TEST_DATA must name tests/files/data";
    const std::string base = std::string(data_dir) + "/torch_residual";
    snn_model *m = nullptr;
    ASSERT_EQ(snn_model_load((base + ".safetensors").c_str(), &m), SNN_OK) << snn_last_error();
    size_t state = 0;
    ASSERT_EQ(snn_state_count(m, &state), SNN_OK);
    ASSERT_EQ(state, 2u * (4 + 4 + 1));
    std::vector<float> s(state);
    ASSERT_EQ(snn_get_state(m, s.data(), s.size()), SNN_OK);
    EXPECT_EQ(s[8], 3.0f) << "num_batches_tracked of layer 2";
    EXPECT_EQ(s[17], 3.0f) << "num_batches_tracked of layer 5";
    EXPECT_NE(s[0], 0.0f) << "running_mean moved from its initial value";
    const std::vector<float> x = read_floats(base + "_inputs.f32");
    const std::vector<float> expected = read_floats(base + "_outputs.f32");
    const int64_t batch = int64_t(x.size() / 72);
    snn_forward_cache *f = nullptr;
    ASSERT_EQ(snn_preallocate(m, batch, &f), SNN_OK);
    ASSERT_EQ(snn_cache_set_training(f, 0), SNN_OK);
    ASSERT_EQ(snn_set_inputs(f, x.data(), x.size()), SNN_OK);
    ASSERT_EQ(snn_forward(f, m), SNN_OK);
    std::vector<float> y(expected.size());
    ASSERT_EQ(snn_get_outputs(f, y.data(), y.size()), SNN_OK);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 2e-5) << "output " << i;

    const std::string saved = path("residual.safetensors");
    ASSERT_EQ(snn_model_save(m, saved.c_str()), SNN_OK) << snn_last_error();
    const std::set<std::string> torch_names = tensor_entries(base + ".safetensors");
    EXPECT_EQ(tensor_entries(saved), torch_names);
    EXPECT_EQ(torch_names.count("layers.2.num_batches_tracked\"dtype\":\"I64\",\"shape\":[]"), 1u);
    snn_model *again = nullptr;
    ASSERT_EQ(snn_model_load(saved.c_str(), &again), SNN_OK) << snn_last_error();
    std::vector<float> s2(state);
    ASSERT_EQ(snn_get_state(again, s2.data(), s2.size()), SNN_OK);
    EXPECT_EQ(s2, s);
    snn_model_destroy(again);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
}

// nn.Embedding with a padding row, nn.Conv1d and mean pooling written by
// PyTorch: snn reads it, gives its outputs for the same token ids, and saves
// the same tensor names, dtypes and shapes.
TEST_F(Files, APyTorchTokenModelGivesItsOutputsAndNames) {
    const char *data_dir = getenv("SNN_TEST_DATA");
    ASSERT_NE(data_dir, nullptr) << "SNN_TEST_DATA must name tests/files/data";
    const std::string base = std::string(data_dir) + "/torch_tokens";
    snn_model *m = nullptr;
    ASSERT_EQ(snn_model_load((base + ".safetensors").c_str(), &m), SNN_OK) << snn_last_error();
    const std::vector<float> ids = read_floats(base + "_inputs.f32");
    const std::vector<float> expected = read_floats(base + "_outputs.f32");
    std::vector<int32_t> tokens(ids.begin(), ids.end());
    const int64_t batch = int64_t(tokens.size() / 6);
    snn_forward_cache *f = nullptr;
    ASSERT_EQ(snn_preallocate(m, batch, &f), SNN_OK);
    ASSERT_EQ(snn_set_tokens(f, tokens.data(), tokens.size()), SNN_OK) << snn_last_error();
    ASSERT_EQ(snn_forward(f, m), SNN_OK) << snn_last_error();
    std::vector<float> y(expected.size());
    ASSERT_EQ(snn_get_outputs(f, y.data(), y.size()), SNN_OK);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-5) << "output " << i;
    const std::string saved = path("tokens.safetensors");
    ASSERT_EQ(snn_model_save(m, saved.c_str()), SNN_OK) << snn_last_error();
    const std::set<std::string> torch_names = tensor_entries(base + ".safetensors");
    EXPECT_EQ(tensor_entries(saved), torch_names);
    EXPECT_EQ(torch_names.count("layers.2.weight\"dtype\":\"F32\",\"shape\":[3,5,2]"), 1u);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
}

// torch.nn.MultiheadAttention's state_dict as snn names its tensors: a file
// saved by snn has exactly the names, dtypes and shapes of PyTorch's.
TEST_F(Files, APyTorchAttentionFileKeepsItsNames) {
    const char *data_dir = getenv("SNN_TEST_DATA");
    ASSERT_NE(data_dir, nullptr) << "SNN_TEST_DATA must name tests/files/data";
    const std::string base = std::string(data_dir) + "/torch_attention";
    snn_model *m = nullptr;
    ASSERT_EQ(snn_model_load((base + ".safetensors").c_str(), &m), SNN_OK) << snn_last_error();
    const std::string saved = path("attention.safetensors");
    ASSERT_EQ(snn_model_save(m, saved.c_str()), SNN_OK) << snn_last_error();
    const std::set<std::string> torch_names = tensor_entries(base + ".safetensors");
    EXPECT_EQ(tensor_entries(saved), torch_names);
    EXPECT_EQ(torch_names.count("layers.1.out_proj.weight\"dtype\":\"F32\",\"shape\":[8,8]"), 1u);
    snn_model_destroy(m);
}

// A bidirectional LSTM and a GRU written by PyTorch (above: its outputs):
// saved again by snn, the file has exactly the modules' state_dict names,
// dtypes and shapes (weight_ih_l0, ..., bias_hh_l0_reverse).
TEST_F(Files, PyTorchRecurrentLayersKeepTheirNames) {
    const char *data_dir = getenv("SNN_TEST_DATA");
    ASSERT_NE(data_dir, nullptr) << "SNN_TEST_DATA must name tests/files/data";
    const std::string base = std::string(data_dir) + "/torch_recurrent";
    snn_model *m = nullptr;
    ASSERT_EQ(snn_model_load((base + ".safetensors").c_str(), &m), SNN_OK) << snn_last_error();
    const std::string saved = path("recurrent.safetensors");
    ASSERT_EQ(snn_model_save(m, saved.c_str()), SNN_OK) << snn_last_error();
    const std::set<std::string> torch_names = tensor_entries(base + ".safetensors");
    EXPECT_EQ(tensor_entries(saved), torch_names);
    EXPECT_EQ(torch_names.count("layers.1.bias_hh_l0_reverse\"dtype\":\"F32\",\"shape\":[16]"), 1u);
    EXPECT_EQ(torch_names.count("layers.2.weight_hh_l0\"dtype\":\"F32\",\"shape\":[9,3]"), 1u);
    snn_model_destroy(m);
}

}  // namespace
