// Sequence pooling on the CPU (ops/seqpool.cpp): per sample and feature, over
// the valid steps t < length. max keeps, in aux, the step of each maximum.
#include "ops/op.h"
#include "ops/seq_math.h"

namespace snn {
namespace {

// last: y = x[len-1] ; mean: y = sum over t < len of x[t] / len (in double,
// in step order) ; max: y = x[m], m the first step of the maximum
void forward(const OpArgs &a) {
    const Layer &l = *a.l;
    const int64_t steps = l.in.steps(), f_count = l.in.row_size();
    for (int64_t s = 0; s < a.n; ++s) {
        const int64_t len = valid_steps(a.lengths, s, steps);
        const float *x = a.x[0] + s * steps * f_count;
        float *y = a.y + s * f_count;
        for (int64_t f = 0; f < f_count; ++f) {
            if (l.pool == SeqPool::last) {
                y[f] = x[(len - 1) * f_count + f];
            } else if (l.pool == SeqPool::mean) {
                double sum = 0.0;
                for (int64_t t = 0; t < len; ++t) sum += x[t * f_count + f];
                y[f] = float(sum / double(len));
            } else {
                int64_t m = 0;
                for (int64_t t = 1; t < len; ++t)
                    if (seqpool_replaces(x[t * f_count + f], x[m * f_count + f])) m = t;
                y[f] = x[m * f_count + f];
                a.aux[l.aux_fixed + s * f_count + f] = float(m);
            }
        }
    }
}

// dx[t] = dy at the pooled step(s) (seqpool_dx), 0 elsewhere
void backward(const OpArgs &a) {
    const Layer &l = *a.l;
    if (!a.dx[0]) return;
    const int64_t steps = l.in.steps(), f_count = l.in.row_size();
    const float *argmax = a.aux + l.aux_fixed;
    for (int64_t s = 0; s < a.n; ++s) {
        const int64_t len = valid_steps(a.lengths, s, steps);
        const float *dy = a.dy + s * f_count;
        float *dx = a.dx[0] + s * steps * f_count;
        for (int64_t t = 0; t < steps; ++t)
            for (int64_t f = 0; f < f_count; ++f) {
                const int64_t m = l.pool == SeqPool::max ? int64_t(argmax[s * f_count + f]) : 0;
                dx[t * f_count + f] = seqpool_dx(l.pool, t, len, m, dy[f]);
            }
    }
}

}  // namespace

extern const OpKernels cpu_op_seqpool{nullptr, nullptr, forward, backward};

}  // namespace snn
