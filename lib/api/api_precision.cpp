// Mixed precision at the C boundary: a forward cache's precision, what a
// device can run, and dynamic loss scaling of a backward cache (with its
// place in checkpoints).
#include <memory>

#include "api/guard.h"
#include "device/devices.h"
#include "engine/model_file.h"

using namespace snn;

namespace {

Precision precision_of(snn_precision p) {
    if (p != SNN_PRECISION_FLOAT32 && p != SNN_PRECISION_BF16 && p != SNN_PRECISION_FP16)
        fail(SNN_ERR_INVALID_ARGUMENT,
             "precision is %d; expected SNN_PRECISION_FLOAT32 (0), SNN_PRECISION_BF16 (1) or SNN_PRECISION_FP16 (2)",
             p);
    return Precision(p);
}

// PyTorch's GradScaler defaults.
constexpr double kInitScale = 65536.0, kGrowth = 2.0, kBackoff = 0.5;
constexpr int64_t kGrowthInterval = 2000;

}  // namespace

extern "C" {

SNN_API snn_status snn_cache_set_precision(snn_forward_cache *cache, snn_precision precision) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        forward_cache_set_precision(cache->c, precision_of(precision));
    });
}

SNN_API snn_status snn_cache_precision(const snn_forward_cache *cache, snn_precision *precision) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        need(precision, "precision");
        *precision = snn_precision(cache->c.precision);
    });
}

SNN_API snn_status snn_precision_support(int32_t device, snn_precision precision, int32_t *native) {
    return guarded(__func__, [&] {
        const Precision p = precision_of(precision);
        if (device < SNN_DEVICE_CPU)
            fail(SNN_ERR_GPU_INDEX, "device must be SNN_DEVICE_CPU or a GPU index >= 0, got %d", device);
        Backend &be = device == SNN_DEVICE_CPU ? cpu_backend() : backend_for(device);
        const char *why = nullptr;
        const PrecisionSupport support = be.precision_support(p, &why);
        if (support == PrecisionSupport::none)
            fail(SNN_ERR_UNSUPPORTED, "%s cannot compute in %s: %s", be.name(), precision_name(p), why ? why : "");
        if (native) *native = support == PrecisionSupport::native ? 1 : 0;
    });
}

SNN_API snn_status snn_set_loss_scaling(snn_backward_cache *cache, int32_t on) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        if (on != 0 && on != 1) fail(SNN_ERR_INVALID_ARGUMENT, "on is %d; expected 0 or 1", on);
        LossScaler &sc = cache->c.scaler;
        if (!on)
            sc = LossScaler();
        else if (!sc.enabled)
            loss_scaler_set(sc, kInitScale, kGrowth, kBackoff, kGrowthInterval, 0);
    });
}

SNN_API snn_status snn_set_loss_scaling_state(snn_backward_cache *cache, double scale, double growth_factor,
                                              double backoff_factor, int64_t growth_interval,
                                              int64_t good_steps) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        loss_scaler_set(cache->c.scaler, scale, growth_factor, backoff_factor, growth_interval, good_steps);
    });
}

SNN_API snn_status snn_loss_scaling_state(const snn_backward_cache *cache, int32_t *on, double *scale,
                                          double *growth_factor, double *backoff_factor,
                                          int64_t *growth_interval, int64_t *good_steps, int32_t *skipped) {
    return guarded(__func__, [&] {
        need(cache, "cache");
        const LossScaler &sc = cache->c.scaler;
        if (on) *on = sc.enabled ? 1 : 0;
        if (scale) *scale = sc.enabled ? sc.scale : 1.0;
        if (growth_factor) *growth_factor = sc.growth;
        if (backoff_factor) *backoff_factor = sc.backoff;
        if (growth_interval) *growth_interval = sc.growth_interval;
        if (good_steps) *good_steps = sc.good_steps;
        if (skipped) *skipped = sc.enabled && sc.found_inf ? 1 : 0;
    });
}

SNN_API snn_status snn_checkpoint_save_v2(const snn_model *model, const snn_optimiser *optimiser,
                                          const snn_backward_cache *cache, const char *path) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(optimiser, "optimiser");
        need(path, "path");
        check_model(const_cast<Optimiser &>(optimiser->o), model->m, "the optimiser");
        if (cache) check_model_id(cache->c, model->m, "the backward cache");
        model_file_save(model->m, &optimiser->o, cache ? &cache->c.scaler : nullptr, path);
    });
}

SNN_API snn_status snn_checkpoint_load_loss_scaling(const char *path, snn_backward_cache *cache) {
    return guarded(__func__, [&] {
        need(path, "path");
        need(cache, "cache");
        cache->c.scaler = model_file_loss_scaling(path);
    });
}

}  // extern "C"
