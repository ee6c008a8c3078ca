// A node's sizes in the forms the dense, convolution and pooling kernels take.
#pragma once

#include "engine/backend.h"
#include "model/spec.h"

namespace snn {

inline DenseDims dense_dims(const Layer &l) { return {l.in.size(), l.out.size(), l.bias, l.act}; }
inline ConvDims conv_dims(const Layer &l) {
    return {l.in.c, l.in.h, l.in.w, l.out.c, l.out.h, l.out.w, l.kh, l.kw, l.sh, l.sw, l.ph, l.pw, l.bias, l.act};
}
inline PoolDims pool_dims(const Layer &l) { return {l.in.c, l.in.h, l.in.w, l.out.h, l.out.w, l.kh, l.kw, l.sh, l.sw}; }

}  // namespace snn
