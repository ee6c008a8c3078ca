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
// The most tensors a header may declare: above the 5 per layer (batchnorm)
// of the largest model (SNN_MAX_LAYERS) and an optimiser's 2.
constexpr size_t kMaxSafetensorsTensors = size_t(1) << 20;

using Metadata = std::vector<std::pair<std::string, std::string>>;

// A tensor to write: `count` host floats at `data`, stored as F32, or with
// int64 as I64 (counts such as num_batches_tracked, whole numbers).
struct TensorOut {
    std::string name;
    std::vector<int64_t> shape;
    const float *data = nullptr;
    size_t count = 0;
    bool int64 = false;
    size_t bytes() const { return count * (int64 ? 8 : 4); }
};

// The 8-byte length and the JSON header (padded with spaces to a multiple of
// 8 bytes) for these tensors stored back to back in the given order.
std::string safetensors_header(const Metadata &metadata, const std::vector<TensorOut> &tensors);

// Total size of the file: header plus every tensor's bytes.
size_t safetensors_size(const std::string &header, const std::vector<TensorOut> &tensors);

// Passes the header, then every tensor's data as little-endian F32, to sink.
void safetensors_write(const std::string &header, const std::vector<TensorOut> &tensors,
                       const std::function<void(const void *, size_t)> &sink);

// One tensor as the header describes it: its bytes are [begin, end) of the
// data section.
struct TensorIn {
    std::string dtype;
    std::vector<int64_t> shape;
    size_t elements = 0;
    uint64_t begin = 0, end = 0;
};

// A validated header: the metadata and the tensors, whose offsets count
// from the start of the data section, data_offset bytes into the file.
struct SafetensorsHeader {
    bool has_metadata = false;
    std::map<std::string, std::string> metadata;
    std::map<std::string, TensorIn> tensors;
    uint64_t data_offset = 0;  // 8 + the JSON header's length
    uint64_t data_size = 0;    // the rest of the file
};

// The JSON header's length, from the first 8 bytes of a file of file_size
// bytes (bytes holds min(8, file_size) of them). Throws SNN_ERR_FILE_FORMAT
// when the file is shorter than 8 bytes or the length is above
// kMaxSafetensorsHeader or longer than the rest of the file, so a reader
// checks it before reading the header.
uint64_t safetensors_header_length(const unsigned char *bytes, uint64_t file_size);

// Checks the JSON header (`length` bytes, as safetensors_header_length
// returned for a file of file_size bytes) completely: JSON, no key twice in
// any object, every entry's dtype, shape and offsets, and that the tensors
// cover the data section (the rest of the file) exactly, without overlap,
// gaps or trailing bytes. Nothing of the data section is needed. Throws
// SNN_ERR_FILE_FORMAT naming the tensor or field and the problem.
SafetensorsHeader safetensors_parse_header(const char *json, size_t length, uint64_t file_size);

// Both checks above on a whole file in memory; the data section starts at
// bytes + data_offset.
SafetensorsHeader safetensors_parse(const unsigned char *bytes, size_t size);

// Reads `count` little-endian floats from possibly unaligned memory.
void read_le_f32(const unsigned char *src, size_t count, float *dst);
// Reads `count` little-endian int64 counts as floats, a count above 2^24 as
// 2^24 (a negative one as itself, rounded, for the reader to refuse).
void read_le_i64_count(const unsigned char *src, size_t count, float *dst);

}  // namespace snn
