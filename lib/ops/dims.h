// A node's sizes in the forms the dense, convolution and pooling kernels take.
#pragma once

#include "core/backend.h"
#include "ops/spec.h"

namespace snn {

// Dense acts on the last axis: a sequence is rows_of(l, n) = n * T rows.
inline DenseDims dense_dims(const Layer &l) { return {l.in.row_size(), l.out.row_size(), l.bias, l.act}; }
// The rows an op acting on the last axis sees in a batch of n samples.
inline int64_t rows_of(const Layer &l, int64_t n) { return n * l.in.steps(); }
inline ConvDims conv_dims(const Layer &l) {
    return {l.in.c, l.in.h, l.in.w, l.out.c, l.out.h, l.out.w, l.kh, l.kw, l.sh, l.sw, l.ph, l.pw, l.bias, l.act};
}
inline PoolDims pool_dims(const Layer &l) { return {l.in.c, l.in.h, l.in.w, l.out.h, l.out.w, l.kh, l.kw, l.sh, l.sw}; }

}  // namespace snn
