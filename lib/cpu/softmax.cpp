// Softmax on the CPU (ops/softmax.cpp): over the features of each vector, or
// over the channels of each pixel of an image. Sample s, pixel p, channel c is
// at s*C*P + c*P + p (P = H*W; a vector is C = features, P = 1), so each
// softmax is C values P apart. Sums in double, in channel order.
#include "core/math.h"
#include "ops/op.h"

namespace snn {
namespace {

struct Axis {
    int64_t groups;  // softmaxes in the batch: n * P
    int64_t c, p;    // values per softmax, and their stride
};

Axis axis_of(const OpArgs &a) {
    const Shape &s = a.l->out;
    if (s.is_seq) return {a.n * s.steps(), s.c, 1};  // each step's features
    const int64_t c = s.is_image ? s.c : s.size();
    const int64_t p = s.is_image ? s.h * s.w : 1;
    return {a.n * p, c, p};
}

// The first value of softmax g: sample g / P, pixel g % P.
int64_t first_of(const Axis &ax, int64_t g) { return (g / ax.p) * ax.c * ax.p + g % ax.p; }

// y = e^(x - max) / sum e^(x - max)
void forward(const OpArgs &a) {
    const Axis ax = axis_of(a);
    for (int64_t g = 0; g < ax.groups; ++g) {
        const float *x = a.x[0] + first_of(ax, g);
        float *y = a.y + first_of(ax, g);
        float max = x[0];
        for (int64_t c = 1; c < ax.c; ++c) max = x[c * ax.p] > max ? x[c * ax.p] : max;
        double sum = 0.0;
        for (int64_t c = 0; c < ax.c; ++c) {
            y[c * ax.p] = softmax_exp(x[c * ax.p], max);
            sum += y[c * ax.p];
        }
        const float total = float(sum);
        for (int64_t c = 0; c < ax.c; ++c) y[c * ax.p] = softmax_y(y[c * ax.p], total);
    }
}

// dx = y (dy - sum(dy y))
void backward(const OpArgs &a) {
    if (!a.dx[0]) return;
    const Axis ax = axis_of(a);
    for (int64_t g = 0; g < ax.groups; ++g) {
        const int64_t first = first_of(ax, g);
        const float *y = a.y + first, *dy = a.dy + first;
        float *dx = a.dx[0] + first;
        double dot = 0.0;
        for (int64_t c = 0; c < ax.c; ++c) dot += double(dy[c * ax.p]) * double(y[c * ax.p]);
        const float d = float(dot);
        for (int64_t c = 0; c < ax.c; ++c) dx[c * ax.p] = softmax_dx(y[c * ax.p], dy[c * ax.p], d);
    }
}

}  // namespace

extern const OpKernels cpu_op_softmax{nullptr, nullptr, forward, backward};

}  // namespace snn
