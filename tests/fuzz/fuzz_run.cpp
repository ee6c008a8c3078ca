// Fuzz target: builds a model spec from the bytes (every op and option of the
// grammar, branches read with from= and joined by add or concat, over odd
// geometries: 1-row and 1-column images, padding wider than the image,
// kernels as large as the padded image, strides longer than the kernel, odd
// channel counts, batches 1 to 4) and runs it: snn_preallocate,
// forward in training and inference mode, backward with an input gradient,
// on the reference kernels, the fast ones and, on a processor with AVX-512,
// the fast ones with the convolutions' products on gemm512 and those of a
// processor without AVX-512 (the AVX2 direct convolutions; chosen through
// cpu/kernel_choice.h: this target links snn statically). The fast runs must
// match the reference run, and a saved and loaded model must run as the
// original. Each run's inference pass runs again with the inference rewrites
// (batchnorm folded into the layer before it) and must match the plain one. The same runs at bf16: the fast bf16 kernels against the
// emulated ones (operands rounded, float32 products). Sizes are bounded so
// that an input runs in milliseconds.
//
// Parameters and inputs lie on a coarse grid (multiples of 1/2, at most 2 in
// size), so a convolution or dense layer whose input is on the grid sums
// exactly, and every path gives the same bits. Past a layer that leaves the
// grid (tanh, a mean, a norm, ...), a convolution's sums round by path: the
// outputs then match within a tolerance, and comparisons that a rounding
// difference can upset (a relu or max pool deciding on such values, a norm
// amplifying them) are skipped. At bf16 the fast kernels are compared with
// the emulated ones in everything, as the fast float32 kernels with the
// reference (both round the same operands). bf16 is not compared with
// float32 here: a sum that cancels (a layernorm's scale-free input gradient,
// a wide convolution over softmax outputs) loses bf16's relative accuracy
// against its largest value, which a fixed tolerance cannot bound; the op
// harness's Bf16 mode bounds each op by its product lengths, and
// test_autocast whole models.
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "cpu/kernel_choice.h"
#include "platform/cpu_features.h"
#include "snn.h"

#include "fuzz_bytes.h"
#include "fuzz_options.h"
#include "fuzz_target.h"

namespace {

const char *const kInits[] = {"glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "lecun_normal", "zeros"};
constexpr int64_t kMaxElements = 2048;    // per sample, per layer
constexpr int64_t kMaxConvMadds = 150000; // per sample, per convolution

// A layer's output as the builder tracks it.
struct Node {
    bool image;
    int64_t c, h, w;
    bool exact;     // on the grid: multiples of 2^-grain, at most bound in size
    double bound;
    int grain;
    bool differs;   // may differ between kernel paths by rounding
    std::string name;
    int64_t size() const { return c * h * w; }
};

struct Spec {
    std::string text;
    std::vector<Node> nodes;
    bool compare_outputs = true, compare_gradients = true;
};

std::string dims(int64_t a, int64_t b, bool square) {
    return square ? std::to_string(a) : std::to_string(a) + "x" + std::to_string(b);
}

// After an op that leaves the grid.
void off_grid(Node &n) { n.exact = false; }

// An activation applied to n: relu keeps the grid, the others leave it;
// relu and leaky_relu decide on their input's sign.
void activate(Spec &s, Node &n, int act) {
    if (act >= 2) off_grid(n);
    if ((act == 1 || act == 2) && n.differs) s.compare_gradients = false;
}

// A convolution or dense layer of `taps` weights per output: exact when its
// input is on the grid and the sum stays within float's 24 bits.
void product(Node &n, int64_t taps) {
    if (n.exact) {
        n.bound = double(taps) * n.bound + 1.0;
        n.grain += 1;
        n.exact = n.bound * ldexp(1.0, n.grain) < 16777216.0;
    }
    if (!n.exact) n.differs = true;
}

// n joined with o by add (same shapes) or concat (images of the same height
// and width, or vectors): false when they do not fit.
bool join(Node &n, const Node &o, bool add) {
    if (o.image != n.image || (o.image && (o.h != n.h || o.w != n.w))) return false;
    if (add ? o.c != n.c : (n.c + o.c) * n.h * n.w > kMaxElements) return false;
    n.bound = add ? n.bound + o.bound : std::max(n.bound, o.bound);
    n.grain = std::max(n.grain, o.grain);
    n.exact = n.exact && o.exact && n.bound * ldexp(1.0, n.grain) < 16777216.0;
    n.differs = n.differs || o.differs;
    if (!add) n.c += o.c;
    return true;
}

// The op whose words and options the next bytes choose, kept to sizes that
// run in milliseconds; nothing when the choice does not fit the shape.
bool choose_op(Bytes &b, Spec &s, Node &n, std::string &t) {
    const unsigned op = b.pick(16);
    if (op < 3 && !n.image) {
        const int64_t units = b.in(1, 40);
        if (units * n.c > 40000) return false;
        const int act = int(b.pick(7));
        t = "dense " + std::to_string(units) + " " + kActs[act];
        if (b.pick(4) == 0) t += " nobias";
        if (b.pick(4) == 0) t += std::string(" init=") + kInits[b.pick(6)];
        const int64_t taps = n.c;
        n.c = units;
        product(n, taps);
        activate(s, n, act);
    } else if (op < 6 && n.image) {
        const int64_t ph = b.in(0, 4), pw = b.pick(2) ? ph : b.in(0, 4);
        const int64_t kh = b.in(1, n.h + 2 * ph);
        const int64_t kw = b.pick(2) ? std::min(kh, n.w + 2 * pw) : b.in(1, n.w + 2 * pw);
        const int64_t sh = b.pick(3) ? 1 : b.in(1, 5), sw = b.pick(2) ? sh : b.in(1, 5);
        const int64_t out = b.in(1, 20);
        const int act = int(b.pick(7));
        t = "conv " + dims(kh, kw, kh == kw && b.pick(2)) + " " + std::to_string(out) + " " + kActs[act];
        if (sh != 1 || sw != 1 || b.pick(4) == 0) t += " stride=" + dims(sh, sw, sh == sw);
        if (ph != 0 || pw != 0 || b.pick(4) == 0) t += " pad=" + dims(ph, pw, ph == pw);
        if (b.pick(4) == 0) t += " nobias";
        if (b.pick(4) == 0) t += std::string(" init=") + kInits[b.pick(6)];
        const int64_t ho = (n.h + 2 * ph - kh) / sh + 1, wo = (n.w + 2 * pw - kw) / sw + 1;
        if (out * ho * wo > kMaxElements || out * n.c * kh * kw * ho * wo > kMaxConvMadds) return false;
        const int64_t taps = n.c * kh * kw;
        n.c = out, n.h = ho, n.w = wo;
        product(n, taps);
        activate(s, n, act);
    } else if (op == 6 && n.image) {
        const bool max = b.pick(2);
        const int64_t kh = b.in(1, std::min<int64_t>(n.h, 4));
        const int64_t kw = b.pick(2) ? std::min(kh, n.w) : b.in(1, std::min<int64_t>(n.w, 4));
        int64_t sh = kh, sw = kw;
        t = std::string(max ? "maxpool " : "avgpool ") + dims(kh, kw, kh == kw && b.pick(2));
        if (b.pick(3) == 0) {
            sh = b.in(1, 5), sw = b.pick(2) ? sh : b.in(1, 5);
            t += " stride=" + dims(sh, sw, sh == sw);
        }
        n.h = (n.h - kh) / sh + 1, n.w = (n.w - kw) / sw + 1;
        const int64_t window = kh * kw;
        if (max && n.differs) s.compare_gradients = false;
        if (!max && (window & (window - 1)) != 0) off_grid(n);
        if (!max && (window & (window - 1)) == 0)
            for (int64_t w = window; w > 1; w /= 2) ++n.grain;  // a mean over 2^j values
    } else if (op == 7 && n.image) {
        if (b.pick(2)) {
            t = "globalavgpool";
            n.h = n.w = 1;
            off_grid(n);
        } else {
            t = "flatten";
            n.c = n.size(), n.h = n.w = 1, n.image = false;
        }
    } else {
        switch (op % 8) {
            case 0: {
                const int act = 1 + int(b.pick(6));
                t = kActs[act];
                activate(s, n, act);
                break;
            }
            case 1:
                t = "softmax";
                off_grid(n);
                break;
            case 2:
                t = "batchnorm";
                if (b.pick(3) == 0) t += b.pick(2) ? " eps=1e-3" : " eps=0.5";
                if (b.pick(3) == 0) t += b.pick(2) ? " momentum=0" : " momentum=1";
                off_grid(n);
                if (n.differs) s.compare_outputs = false;
                break;
            case 3:
                t = b.pick(2) ? "layernorm" : "layernorm eps=1e-2";
                off_grid(n);
                if (n.differs) s.compare_outputs = false;
                break;
            case 4:
                t = b.pick(2) ? "dropout 0.5" : "dropout 0";
                off_grid(n);
                break;
            default: {  // add or concat with an earlier named layer of a fitting shape
                const bool add = b.pick(2);
                const Node &o = s.nodes[b.pick(unsigned(s.nodes.size()))];
                if (o.name.empty() || !join(n, o, add)) return false;
                t = (add ? "add " : "concat ") + o.name;
            }
        }
    }
    return true;
}

// A branch: the next op reads an earlier named layer (from=ID) instead of
// the last one, and an add or concat then joins the branch with the last
// layer (named here if it has no name), so that every layer is read.
// Nothing changes when the choices do not fit.
void add_branch(Bytes &b, Spec &s) {
    const size_t k = b.pick(unsigned(s.nodes.size()));
    if (k + 1 >= s.nodes.size() || s.nodes[k].name.empty()) return;
    Spec t = s;
    Node &last = t.nodes.back();
    if (last.name.empty()) {
        last.name = "n" + std::to_string(t.nodes.size() - 1);
        t.text += " name=" + last.name;
    }
    Node n = t.nodes[k];
    std::string op;
    if (!choose_op(b, t, n, op)) return;
    n.name.clear();
    t.text += "; " + op + " from=" + t.nodes[k].name;
    const Node other = t.nodes.back();
    t.nodes.push_back(n);
    const bool add = b.pick(2);
    if (!join(n, other, add)) return;
    t.text += (add ? "; add " : "; concat ") + other.name;
    t.nodes.push_back(n);
    s = t;
}

void add_layer(Bytes &b, Spec &s) {
    if (s.nodes.size() > 1 && b.pick(5) == 0) return add_branch(b, s);
    Node n = s.nodes.back();
    std::string t;
    if (!choose_op(b, s, n, t)) return;
    if (b.pick(3) == 0) {
        n.name = "n" + std::to_string(s.nodes.size());
        t += " name=" + n.name;
    } else {
        n.name.clear();
    }
    s.text += "; " + t;
    s.nodes.push_back(n);
}

Spec build_spec(Bytes &b) {
    Spec s;
    Node in{};
    in.image = b.pick(4) != 0;
    if (in.image) {
        const int64_t sizes[] = {1, 1, 2, 3, 4, 5, 7, 9, 12, 17};
        in.h = sizes[b.pick(10)], in.w = sizes[b.pick(10)], in.c = b.in(1, 20);
        if (in.size() > kMaxElements) in.c = 1;
        s.text = "input " + std::to_string(in.h) + "x" + std::to_string(in.w) + "x" + std::to_string(in.c);
    } else {
        in.c = b.in(1, 40), in.h = in.w = 1;
        s.text = "input " + std::to_string(in.c);
    }
    in.exact = true, in.bound = 2.0, in.grain = 1, in.differs = false;
    if (b.pick(3) == 0) {
        in.name = "x";
        s.text += " name=x";
    }
    s.nodes.push_back(in);
    const int layers = 1 + int(b.pick(6));
    for (int i = 0; i < layers; ++i) add_layer(b, s);
    return s;
}

// Values on the grid: k/2 with |k| <= 2 (parameters) or 4 (inputs).
std::vector<float> grid(Bytes &b, size_t n, int range) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = 0.5f * float(int(b.pick(unsigned(2 * range + 1))) - range);
    return v;
}

struct Run {
    bool ran = false, trained = false;
    std::vector<float> y_inference, y_rewritten, y_training, grads, dx, state;
};

// One pass of everything on the kernels chosen.
Run run(const std::string &spec, snn::CpuKernels kernels, const std::vector<float> &params, const std::vector<float> &x,
        const std::vector<float> &dy, int64_t batch, int64_t max_batch,
        snn_precision precision = SNN_PRECISION_FLOAT32) {
    snn::cpu_choose_kernels(kernels);
    Run r;
    snn_model *m = nullptr;
    must(snn_model_create(spec.c_str(), &m), "snn_model_create");
    if (!params.empty()) must(snn_set_parameters(m, params.data(), params.size()), "snn_set_parameters");
    size_t in = 0, out = 0, state = 0;
    snn_model_input_size(m, &in);
    snn_model_output_size(m, &out);
    snn_state_count(m, &state);
    snn_forward_cache *f = nullptr;
    snn_backward_cache *g = nullptr;
    if (fuzz_check(snn_preallocate(m, max_batch, &f)) == SNN_OK &&
        fuzz_check(snn_preallocate_grads(m, max_batch, &g)) == SNN_OK) {
        r.ran = true;
        must(snn_cache_set_precision(f, precision), "snn_cache_set_precision");
        must(snn_cache_set_batch(f, int64_t(x.size() / in)), "snn_cache_set_batch");
        must(snn_set_inputs(f, x.data(), x.size()), "snn_set_inputs");
        must(snn_cache_set_training(f, 0), "snn_cache_set_training");
        must(fuzz_check(snn_forward(f, m)), "snn_forward (inference)");
        r.y_inference = outputs(f, size_t(batch) * out);
        // Again with the inference rewrites (batchnorm folded), then off, so
        // that the training pass's backprop runs.
        must(snn_cache_set_inference_rewrites(f, 1), "snn_cache_set_inference_rewrites");
        must(fuzz_check(snn_forward(f, m)), "snn_forward (inference, rewritten)");
        r.y_rewritten = outputs(f, size_t(batch) * out);
        must(snn_cache_set_inference_rewrites(f, 0), "snn_cache_set_inference_rewrites");
        snn_cache_set_training(f, 1);
        must(snn_set_input_gradient(g, 1), "snn_set_input_gradient");
        if (fuzz_check(snn_forward(f, m)) == SNN_OK) {  // SNN_ERR_BATCH: batchnorm over one value
            r.trained = true;
            r.y_training = outputs(f, size_t(batch) * out);
            must(fuzz_check(snn_backprop_with_output_gradient(g, f, m, dy.data(), dy.size())), "snn_backprop");
            size_t count = 0;
            snn_parameter_count(m, &count);
            r.grads.resize(count);
            if (count) must(snn_get_gradients(g, r.grads.data(), count), "snn_get_gradients");
            r.dx.resize(x.size());
            must(snn_get_input_gradients(g, r.dx.data(), r.dx.size()), "snn_get_input_gradients");
        }
        r.state.resize(state);
        if (state) must(snn_get_state(m, r.state.data(), state), "snn_get_state");
    }
    snn_backward_cache_destroy(g);
    snn_forward_cache_destroy(f);
    snn_model_destroy(m);
    snn::cpu_choose_kernels(snn::CpuKernels::environment);
    return r;
}

bool all_finite(const std::vector<float> &v) {
    for (float e : v)
        if (!isfinite(e)) return false;
    return true;
}

// fast == reference: bit for bit when exact, else within 1e-3 of the
// reference's largest magnitude (not compared when either is not finite).
void expect_match(const char *what, const std::string &spec, const std::vector<float> &fast,
                  const std::vector<float> &ref, bool exact) {
    if (fast.size() != ref.size()) abort();
    if (!all_finite(fast) || !all_finite(ref)) return;
    double scale = 0.0;
    // (Both are finite here. An fmax reduction stopped aarch64 GCC 12 with
    // an internal compiler error in its vectoriser.)
    for (float v : ref) {
        const double a = fabs(double(v));
        if (a > scale) scale = a;
    }
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = fabs(double(fast[i]) - double(ref[i]));
        if (exact ? fast[i] != ref[i] : !(d <= 1e-3 * scale + 1e-5)) {
            fprintf(stderr, "%s: %s[%zu] fast %.9g, reference %.9g (scale %g, %s)\n", spec.c_str(), what, i,
                    double(fast[i]), double(ref[i]), scale, exact ? "exact" : "rounded");
            abort();
        }
    }
}

// A rewritten inference pass against the plain one: the same bits where
// nothing is folded (bf16 passes are never rewritten), else within the
// tolerance, unless a layernorm may amplify the folded sums' rounding.
void check_rewrites(const Spec &s, const Run &r, snn_precision precision) {
    if (!r.ran) return;
    const bool folds = s.text.find("batchnorm") != std::string::npos && precision == SNN_PRECISION_FLOAT32;
    if (!folds) {
        expect_match("rewritten inference outputs", s.text, r.y_rewritten, r.y_inference, true);
        return;
    }
    if (s.compare_outputs && s.text.find("layernorm") == std::string::npos)
        expect_match("rewritten inference outputs", s.text, r.y_rewritten, r.y_inference, false);
}

void compare(const Spec &s, const Run &fast, const Run &ref) {
    if (fast.ran != ref.ran || fast.trained != ref.trained) abort();
    bool differs = false;
    for (const Node &n : s.nodes) differs = differs || n.differs;
    if (s.compare_outputs) {
        expect_match("inference outputs", s.text, fast.y_inference, ref.y_inference, !differs);
        expect_match("training outputs", s.text, fast.y_training, ref.y_training, !differs);
        expect_match("state", s.text, fast.state, ref.state, false);
        if (s.compare_gradients) {
            expect_match("parameter gradients", s.text, fast.grads, ref.grads, false);
            expect_match("input gradients", s.text, fast.dx, ref.dx, false);
        }
    }
}

// Saved and loaded, the model holds the same parameters and state and runs
// to the same bits.
void check_save_load(const std::string &spec, const std::vector<float> &params, const std::vector<float> &x,
                     int64_t batch, int64_t max_batch) {
    snn_model *m = nullptr;
    must(snn_model_create(spec.c_str(), &m), "snn_model_create");
    if (!params.empty()) must(snn_set_parameters(m, params.data(), params.size()), "snn_set_parameters");
    snn_model *loaded = save_and_load(m);
    size_t in = 0, out = 0;
    snn_model_input_size(m, &in);
    snn_model_output_size(m, &out);
    std::vector<float> y[2];
    snn_model *both[2] = {m, loaded};
    for (int k = 0; k < 2; ++k) {
        snn_forward_cache *f = nullptr;
        if (fuzz_check(snn_preallocate(both[k], max_batch, &f)) != SNN_OK) break;
        must(snn_cache_set_batch(f, int64_t(x.size() / in)), "snn_cache_set_batch");
        must(snn_set_inputs(f, x.data(), x.size()), "snn_set_inputs");
        must(snn_cache_set_training(f, 0), "snn_cache_set_training");
        must(snn_forward(f, both[k]), "snn_forward (loaded)");
        y[k] = outputs(f, size_t(batch) * out);
        snn_forward_cache_destroy(f);
    }
    if (y[0].size() != y[1].size() || (!y[0].empty() && memcmp(y[0].data(), y[1].data(), y[0].size() * 4) != 0)) {
        fprintf(stderr, "%s: the loaded model runs differently\n", spec.c_str());
        abort();
    }
    snn_model_destroy(loaded);
    snn_model_destroy(m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Bytes b{data, size};
    const int32_t threads = 1 + int32_t(b.pick(2));
    const int64_t max_batch = 1 + b.pick(4), batch = 1 + b.pick(unsigned(max_batch));
    const Spec s = build_spec(b);
    snn_model *m = nullptr;
    fuzz_last_status = fuzz_check(snn_model_create(s.text.c_str(), &m));
    if (fuzz_last_status != SNN_OK) return 0;
    size_t count = 0, in = 0, out = 0;
    snn_parameter_count(m, &count);
    snn_model_input_size(m, &in);
    snn_model_output_size(m, &out);
    snn_model_destroy(m);
    const std::vector<float> params = grid(b, count, 2), x = grid(b, size_t(batch) * in, 4);
    const std::vector<float> dy = grid(b, size_t(batch) * out, 4);
    must(snn_set_num_threads(threads), "snn_set_num_threads");
    const Run ref = run(s.text, snn::CpuKernels::reference, params, x, dy, batch, max_batch);
    check_rewrites(s, ref, SNN_PRECISION_FLOAT32);
    const Run fast = run(s.text, snn::CpuKernels::fast, params, x, dy, batch, max_batch);
    check_rewrites(s, fast, SNN_PRECISION_FLOAT32);
    compare(s, fast, ref);
    if (snn::cpu_features().avx512f)
        compare(s, run(s.text, snn::CpuKernels::fast_gemm512, params, x, dy, batch, max_batch), ref);
    if (snn::cpu_features().avx512f && snn::cpu_features().avx2_fma)  // the AVX2 direct convolutions
        compare(s, run(s.text, snn::CpuKernels::fast_no_conv512, params, x, dy, batch, max_batch), ref);
    const Run bf16 = run(s.text, snn::CpuKernels::reference, params, x, dy, batch, max_batch, SNN_PRECISION_BF16);
    if (bf16.ran != ref.ran || bf16.trained != ref.trained) abort();  // bf16 runs what float32 runs
    check_rewrites(s, bf16, SNN_PRECISION_BF16);
    compare(s, run(s.text, snn::CpuKernels::fast, params, x, dy, batch, max_batch, SNN_PRECISION_BF16), bf16);
    check_save_load(s.text, params, x, batch, max_batch);
    return 0;
}
