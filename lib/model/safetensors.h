// The safetensors container (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON, then the raw
// little-endian tensor data. This file knows the container only; what the
// tensors of a model or checkpoint are is decided in lib/api/api_files.cpp.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace snn {

// The largest JSON header accepted when reading (safetensors' own limit).
constexpr uint64_t kMaxSafetensorsHeader = 100u * 1000u * 1000u;

using Metadata = std::vector<std::pair<std::string, std::string>>;

// A float32 tensor to write: `count` host floats at `data`.
struct TensorOut {
    std::string name;
    std::vector<int64_t> shape;
    const float *data = nullptr;
    size_t count = 0;
};

// The 8-byte length and the JSON header (padded with spaces to a multiple of
// 8 bytes) for these tensors stored back to back in the given order.
std::string safetensors_header(const Metadata &metadata, const std::vector<TensorOut> &tensors);

// Total size of the file: header plus 4 bytes per float.
size_t safetensors_size(const std::string &header, const std::vector<TensorOut> &tensors);

// Passes the header, then every tensor's data as little-endian F32, to sink.
void safetensors_write(const std::string &header, const std::vector<TensorOut> &tensors,
                       const std::function<void(const void *, size_t)> &sink);

// One tensor as the header describes it; its bytes are
// data + begin .. data + end of the parsed file.
struct TensorIn {
    std::string dtype;
    std::vector<int64_t> shape;
    size_t elements = 0;
    size_t begin = 0, end = 0;
};

// A validated view of a safetensors file in memory (the bytes are not copied
// and must outlive it).
struct SafetensorsView {
    bool has_metadata = false;
    std::map<std::string, std::string> metadata;
    std::map<std::string, TensorIn> tensors;
    const unsigned char *data = nullptr;  // start of the data section
    size_t data_size = 0;
};

// Checks the container completely: sizes, header length, JSON, every entry's
// dtype, shape and offsets, and that the tensors cover the data section
// exactly, without overlap or gaps. Throws SNN_ERR_FILE_FORMAT naming the
// tensor or field and the problem.
SafetensorsView safetensors_parse(const unsigned char *bytes, size_t size);

// Reads `count` little-endian floats from possibly unaligned memory.
void read_le_f32(const unsigned char *src, size_t count, float *dst);

}  // namespace snn
