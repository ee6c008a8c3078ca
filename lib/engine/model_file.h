// The snn file format: model files and checkpoints (safetensors; see
// include/snn.h and model_file.cpp). It lives in the engine, not lib/model,
// because writing reads a Model's and an Optimiser's buffers on their device
// and reading builds both; lib/model holds what it needs below the engine
// (the safetensors container, POSIX file I/O), lib/ops the spec.
#pragma once

#include <stddef.h>

#include <string>

#include "engine/network.h"

namespace snn {

// Writes the model (and the optimiser when non-null: a checkpoint; and a
// backward cache's loss scaling when `scaler` is non-null and on) to path,
// atomically (see save_atomically).
void model_file_save(const Model &m, const Optimiser *o, const LossScaler *scaler, const std::string &path);
// The loss scaling a checkpoint holds (validated as loss_scaler_set), or a
// scaler turned off when it holds none, after loading and checking the
// whole checkpoint as model_file_load does.
LossScaler model_file_loss_scaling(const std::string &path);
// The size in bytes of the model's file, without reading its values.
size_t model_file_size(const Model &m);
// Writes the model's file into buf when capacity suffices (SNN_ERR_COUNT
// otherwise); returns its size.
size_t model_file_write(const Model &m, void *buf, size_t capacity);

// Reads a model file (opt null) or a checkpoint (opt non-null) from path
// into freshly constructed handles' contents. Every error names the path.
// The whole header is validated before anything is allocated or read.
void model_file_load(const std::string &path, Model &m, Optimiser *opt);
// Reads a model file from memory.
void model_file_load_buffer(const unsigned char *bytes, size_t size, Model &m);

}  // namespace snn
