// The description of a network: its layers, their shapes, and where each
// layer's parameters lie in the flat vector. Parsed from and printed back to
// the textual spec (see include/snn.h).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "engine/backend.h"

namespace snn {

enum class LayerKind : int32_t { input, dense, conv, maxpool, avgpool, flatten };

enum class Init : int32_t { glorot_uniform, glorot_normal, he_uniform, he_normal, lecun_normal, zeros };

// Shape of one sample: c x h x w; a vector of n features is n x 1 x 1 with
// is_image false.
struct Shape {
    int64_t c = 0, h = 1, w = 1;
    bool is_image = false;
    int64_t size() const { return c * h * w; }
};

struct Layer {
    LayerKind kind = LayerKind::input;
    // dense: units = outputs; conv: units = output channels
    int64_t units = 0;
    int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
    Act act = Act::identity;
    bool bias = true;
    Init init = Init::glorot_uniform;

    Shape in, out;               // filled by shape inference
    size_t weight_offset = 0, weight_count = 0;
    size_t bias_offset = 0, bias_count = 0;

    DenseDims dense_dims() const { return {in.size(), out.size(), bias, act}; }
    ConvDims conv_dims() const {
        return {in.c, in.h, in.w, out.c, out.h, out.w, kh, kw, sh, sw, ph, pw, bias, act};
    }
    PoolDims pool_dims() const { return {in.c, in.h, in.w, out.h, out.w, kh, kw, sh, sw}; }
};

struct Network {
    std::vector<Layer> layers;  // layers[0] is the input
    size_t param_count = 0;
    size_t max_activation = 0;  // largest per-sample activation size of any layer

    const Shape &input() const { return layers.front().out; }
    const Shape &output() const { return layers.back().out; }
};

// Parses a spec; throws SNN_ERR_SPEC (position and reason) or SNN_ERR_SHAPE.
Network parse_spec(const std::string &spec);
// The canonical spec, which parse_spec turns back into the same network.
std::string describe(const Network &net);

// Deterministic initialisation of every parameter (host memory).
void init_parameters(const Network &net, uint64_t seed, float *params);

const char *act_name(Act a);
const char *init_name(Init i);

}  // namespace snn
