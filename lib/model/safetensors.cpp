// The safetensors container: writing and validating reading.
#include "model/safetensors.h"

#include <algorithm>
#include <set>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/error.h"

namespace snn {
namespace {

constexpr bool kBigEndianHost = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__;

// Bytes per element of the dtypes safetensors defines; 0 for others.
size_t dtype_size(const std::string &dtype) {
    static const std::map<std::string, size_t> sizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
        {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
        {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
    auto it = sizes.find(dtype);
    return it == sizes.end() ? 0 : it->second;
}

std::string shape_text(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// The header's JSON nests at most three levels: the top object, a tensor's
// object, its shape and offsets. Deeper input is rejected while parsing.
constexpr int kMaxJsonDepth = 3;

uint64_t json_offset(const nlohmann::json &v, const std::string &name, const char *which) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': data_offsets %s is not a non-negative integer",
             name.c_str(), which);
    return v.get<uint64_t>();
}

TensorIn parse_entry(const std::string &name, const nlohmann::json &e, uint64_t data_size) {
    if (!e.is_object()) fail(SNN_ERR_FILE_FORMAT, "tensor '%s' is not a JSON object", name.c_str());
    for (const char *field : {"dtype", "shape", "data_offsets"})
        if (!e.contains(field)) fail(SNN_ERR_FILE_FORMAT, "tensor '%s' has no %s", name.c_str(), field);
    TensorIn t;
    const auto &dtype = e["dtype"];
    if (!dtype.is_string()) fail(SNN_ERR_FILE_FORMAT, "tensor '%s': dtype is not a string", name.c_str());
    t.dtype = dtype.get<std::string>();
    const size_t esize = dtype_size(t.dtype);
    if (esize == 0) fail(SNN_ERR_FILE_FORMAT, "tensor '%s': unknown dtype '%s'", name.c_str(), t.dtype.c_str());

    const auto &shape = e["shape"];
    if (!shape.is_array()) fail(SNN_ERR_FILE_FORMAT, "tensor '%s': shape is not an array", name.c_str());
    uint64_t elements = 1;
    for (const auto &d : shape) {
        if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0))
            fail(SNN_ERR_FILE_FORMAT, "tensor '%s': shape holds a value that is not a non-negative integer",
                 name.c_str());
        const uint64_t n = d.get<uint64_t>();
        if (n > uint64_t(INT64_MAX) || (n != 0 && elements > uint64_t(INT64_MAX) / n))
            fail(SNN_ERR_FILE_FORMAT, "tensor '%s': shape %s is too large", name.c_str(), shape.dump().c_str());
        t.shape.push_back(int64_t(n));
        elements *= n;
    }

    const auto &offsets = e["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': data_offsets is not an array [begin, end]", name.c_str());
    const uint64_t begin = json_offset(offsets[0], name, "begin");
    const uint64_t end = json_offset(offsets[1], name, "end");
    if (begin > end)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': data_offsets begin %llu is after end %llu", name.c_str(),
             (unsigned long long)begin, (unsigned long long)end);
    if (end > data_size)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': data_offsets [%llu, %llu) is out of range: the data section has %llu bytes",
             name.c_str(), (unsigned long long)begin, (unsigned long long)end, (unsigned long long)data_size);
    if (elements > (end - begin) / esize || elements * esize != end - begin)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': data_offsets span %llu bytes but shape %s of %s needs %llu",
             name.c_str(), (unsigned long long)(end - begin), shape_text(t.shape).c_str(), t.dtype.c_str(),
             elements > (UINT64_MAX / esize) ? (unsigned long long)UINT64_MAX
                                            : (unsigned long long)(elements * esize));
    if (elements > SIZE_MAX)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': %llu elements do not fit in memory", name.c_str(),
             (unsigned long long)elements);
    t.elements = size_t(elements);
    t.begin = begin;
    t.end = end;
    return t;
}

// The tensors must tile the data section: sorted by offset, each begins
// where the previous one ended, and the last ends at the end of the data.
void check_coverage(const std::map<std::string, TensorIn> &tensors, uint64_t data_size) {
    std::vector<std::pair<const std::string *, const TensorIn *>> order;
    for (const auto &kv : tensors) order.emplace_back(&kv.first, &kv.second);
    std::sort(order.begin(), order.end(), [](const auto &a, const auto &b) {
        return a.second->begin != b.second->begin ? a.second->begin < b.second->begin
                                                  : a.second->end < b.second->end;
    });
    uint64_t cursor = 0;
    const std::string *previous = nullptr;
    for (const auto &[name, t] : order) {
        if (t->begin < cursor)
            fail(SNN_ERR_FILE_FORMAT, "tensors '%s' and '%s' overlap (byte %llu of the data belongs to both)",
                 previous->c_str(), name->c_str(), (unsigned long long)t->begin);
        if (t->begin > cursor)
            fail(SNN_ERR_FILE_FORMAT, "bytes [%llu, %llu) of the data belong to no tensor (a gap before '%s')",
                 (unsigned long long)cursor, (unsigned long long)t->begin, name->c_str());
        cursor = t->end;
        previous = name;
    }
    if (cursor != data_size)
        fail(SNN_ERR_FILE_FORMAT, "the data section has %llu bytes but the tensors cover %llu: %llu trailing bytes",
             (unsigned long long)data_size, (unsigned long long)cursor, (unsigned long long)(data_size - cursor));
}

// Parses JSON text refusing what nlohmann::json would silently accept: an
// object with the same key twice (it would keep one of them) and nesting
// deeper than kMaxJsonDepth.
nlohmann::json parse_json(const char *text, size_t length) {
    std::vector<std::set<std::string>> keys;  // of each object being parsed
    auto check = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
        if (depth > kMaxJsonDepth)
            fail(SNN_ERR_FILE_FORMAT, "the JSON header nests deeper than %d levels", kMaxJsonDepth);
        using E = nlohmann::json::parse_event_t;
        if (event == E::object_start) keys.emplace_back();
        if (event == E::object_end) keys.pop_back();
        if (event == E::key && !keys.back().insert(parsed.get<std::string>()).second)
            fail(SNN_ERR_FILE_FORMAT, "the JSON header has the key \"%s\" twice in one object",
                 parsed.get<std::string>().c_str());
        return true;
    };
    try {
        return nlohmann::json::parse(text, text + length, check);
    } catch (const nlohmann::json::exception &e) {
        fail(SNN_ERR_FILE_FORMAT, "the JSON header is malformed: %s", e.what());
    }
}

}  // namespace

std::string safetensors_header(const Metadata &metadata, const std::vector<TensorOut> &tensors) {
    nlohmann::ordered_json j;
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto &[key, value] : metadata) meta[key] = value;
    j["__metadata__"] = meta;
    size_t offset = 0;
    for (const TensorOut &t : tensors) {
        const size_t bytes = t.bytes();
        j[t.name] = {{"dtype", t.int64 ? "I64" : "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string json = j.dump();
    json.append((8 - json.size() % 8) % 8, ' ');
    std::string out(8, '\0');
    uint64_t n = json.size();
    for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
    return out + json;
}

size_t safetensors_size(const std::string &header, const std::vector<TensorOut> &tensors) {
    size_t size = header.size();
    for (const TensorOut &t : tensors) size += t.bytes();
    return size;
}

void safetensors_write(const std::string &header, const std::vector<TensorOut> &tensors,
                       const std::function<void(const void *, size_t)> &sink) {
    sink(header.data(), header.size());
    for (const TensorOut &t : tensors) {
        if (t.count == 0) continue;
        if (t.int64) {
            for (size_t i = 0; i < t.count; ++i) {
                const uint64_t v = uint64_t(int64_t(t.data[i]));
                unsigned char b[8];
                for (int q = 0; q < 8; ++q) b[q] = (unsigned char)((v >> (8 * q)) & 0xff);
                sink(b, 8);
            }
            continue;
        }
        if (!kBigEndianHost) {
            sink(t.data, t.count * sizeof(float));
            continue;
        }
        unsigned char chunk[4096];
        for (size_t i = 0; i < t.count;) {
            size_t n = std::min(t.count - i, sizeof(chunk) / 4);
            for (size_t k = 0; k < n; ++k) {
                unsigned char b[4];
                std::memcpy(b, &t.data[i + k], 4);
                for (int q = 0; q < 4; ++q) chunk[4 * k + size_t(q)] = b[3 - q];
            }
            sink(chunk, 4 * n);
            i += n;
        }
    }
}

void read_le_f32(const unsigned char *src, size_t count, float *dst) {
    if (!kBigEndianHost) {
        if (count) std::memcpy(dst, src, count * sizeof(float));
        return;
    }
    for (size_t i = 0; i < count; ++i) {
        unsigned char b[4] = {src[4 * i + 3], src[4 * i + 2], src[4 * i + 1], src[4 * i]};
        std::memcpy(&dst[i], b, 4);
    }
}

uint64_t safetensors_header_length(const unsigned char *bytes, uint64_t file_size) {
    if (file_size < 8)
        fail(SNN_ERR_FILE_FORMAT, "truncated: %llu bytes, shorter than the 8-byte header length",
             (unsigned long long)file_size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
    if (n > kMaxSafetensorsHeader)
        fail(SNN_ERR_FILE_FORMAT, "header length %llu is above the limit of %llu bytes",
             (unsigned long long)n, (unsigned long long)kMaxSafetensorsHeader);
    if (n > file_size - 8)
        fail(SNN_ERR_FILE_FORMAT, "truncated: header length %llu but only %llu bytes follow it",
             (unsigned long long)n, (unsigned long long)(file_size - 8));
    return n;
}

SafetensorsHeader safetensors_parse_header(const char *json, size_t length, uint64_t file_size) {
    const nlohmann::json j = parse_json(json, length);
    if (!j.is_object()) fail(SNN_ERR_FILE_FORMAT, "the JSON header is not an object");

    SafetensorsHeader header;
    header.data_offset = 8 + uint64_t(length);
    header.data_size = file_size - header.data_offset;
    for (const auto &[name, entry] : j.items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) fail(SNN_ERR_FILE_FORMAT, "__metadata__ is not a JSON object");
            for (const auto &[key, value] : entry.items()) {
                if (!value.is_string())
                    fail(SNN_ERR_FILE_FORMAT, "__metadata__ value '%s' is not a string", key.c_str());
                header.metadata[key] = value.get<std::string>();
            }
            header.has_metadata = true;
            continue;
        }
        header.tensors[name] = parse_entry(name, entry, header.data_size);
    }
    check_coverage(header.tensors, header.data_size);
    return header;
}

SafetensorsHeader safetensors_parse(const unsigned char *bytes, size_t size) {
    const uint64_t n = safetensors_header_length(bytes, size);
    return safetensors_parse_header(reinterpret_cast<const char *>(bytes + 8), size_t(n), size);
}

void read_le_i64_count(const unsigned char *src, size_t count, float *dst) {
    for (size_t i = 0; i < count; ++i) {
        uint64_t v = 0;
        for (int q = 7; q >= 0; --q) v = (v << 8) | src[8 * i + size_t(q)];
        const int64_t c = int64_t(v);
        dst[i] = c > (int64_t(1) << 24) ? 16777216.0f : float(c);
    }
}

}  // namespace snn
