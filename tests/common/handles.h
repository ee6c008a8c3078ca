// Owning C++ wrappers for snn's C handles, shared by the C++ test suites.
#pragma once

#include <snn.h>

#include <memory>

namespace snn_handles {

struct ModelDeleter {
    void operator()(snn_model *m) const { snn_model_destroy(m); }
};
struct ForwardDeleter {
    void operator()(snn_forward_cache *c) const { snn_forward_cache_destroy(c); }
};
struct BackwardDeleter {
    void operator()(snn_backward_cache *c) const { snn_backward_cache_destroy(c); }
};
struct OptimiserDeleter {
    void operator()(snn_optimiser *o) const { snn_optimiser_destroy(o); }
};
struct DatasetDeleter {
    void operator()(snn_dataset *d) const { snn_dataset_destroy(d); }
};
using Model = std::unique_ptr<snn_model, ModelDeleter>;
using Forward = std::unique_ptr<snn_forward_cache, ForwardDeleter>;
using Backward = std::unique_ptr<snn_backward_cache, BackwardDeleter>;
using Optimiser = std::unique_ptr<snn_optimiser, OptimiserDeleter>;
using Dataset = std::unique_ptr<snn_dataset, DatasetDeleter>;

}  // namespace snn_handles
