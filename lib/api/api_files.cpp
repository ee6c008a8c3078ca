// Model files and checkpoints: the C entry points. The format is
// engine/model_file.cpp, the POSIX file I/O model/file_io.cpp.
#include <memory>

#include "api/guard.h"
#include "engine/model_file.h"

using namespace snn;

extern "C" {

SNN_API snn_status snn_model_save(const snn_model *model, const char *path) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(path, "path");
        model_file_save(model->m, nullptr, nullptr, path);
    });
}

SNN_API snn_status snn_model_load(const char *path, snn_model **out) {
    return guarded(__func__, [&] {
        need(path, "path");
        need(out, "out");
        auto model = std::make_unique<snn_model>();
        model_file_load(path, model->m, nullptr);
        *out = model.release();
    });
}

SNN_API snn_status snn_model_save_to_buffer(const snn_model *model, void *buf, size_t capacity,
                                            size_t *size) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(size, "size");
        if (buf == nullptr && capacity == 0) {
            *size = model_file_size(model->m);
            return;
        }
        need(buf, "buf");
        *size = model_file_write(model->m, buf, capacity);
    });
}

SNN_API snn_status snn_model_load_from_buffer(const void *data, size_t size, snn_model **out) {
    return guarded(__func__, [&] {
        need_buffer(data, "data", size);
        need(out, "out");
        auto model = std::make_unique<snn_model>();
        model_file_load_buffer(static_cast<const unsigned char *>(data), size, model->m);
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
        model_file_save(model->m, &optimiser->o, nullptr, path);
    });
}

SNN_API snn_status snn_checkpoint_load(const char *path, snn_model **model_out,
                                       snn_optimiser **optimiser_out) {
    return guarded(__func__, [&] {
        need(path, "path");
        need(model_out, "model_out");
        need(optimiser_out, "optimiser_out");
        auto model = std::make_unique<snn_model>();
        auto opt = std::make_unique<snn_optimiser>();
        model_file_load(path, model->m, &opt->o);
        *model_out = model.release();
        *optimiser_out = opt.release();
    });
}

}  // extern "C"
