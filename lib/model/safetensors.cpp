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

// A field of a tensor's entry as the JSON had it: its type, a string's text,
// an array's length and its elements up to the first that is not a
// non-negative integer.
struct RawField {
    enum Type { absent, string, array, other } type = absent;
    std::string text;
    size_t size = 0;
    std::vector<uint64_t> numbers;
};

// One member of the header's top object, as read.
struct RawEntry {
    bool object = false;
    RawField dtype, shape, offsets;
};

std::string numbers_text(const std::vector<uint64_t> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

TensorIn parse_entry(const std::string &name, const RawEntry &e, uint64_t data_size) {
    if (!e.object) fail(SNN_ERR_FILE_FORMAT, "tensor '%s' is not a JSON object", name.c_str());
    const std::pair<const char *, const RawField *> fields[] = {
        {"dtype", &e.dtype}, {"shape", &e.shape}, {"data_offsets", &e.offsets}};
    for (const auto &[field, raw] : fields)
        if (raw->type == RawField::absent) fail(SNN_ERR_FILE_FORMAT, "tensor '%s' has no %s", name.c_str(), field);
    TensorIn t;
    if (e.dtype.type != RawField::string)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': dtype is not a string", name.c_str());
    t.dtype = e.dtype.text;
    const size_t esize = dtype_size(t.dtype);
    if (esize == 0) fail(SNN_ERR_FILE_FORMAT, "tensor '%s': unknown dtype '%s'", name.c_str(), t.dtype.c_str());

    const RawField &shape = e.shape;
    if (shape.type != RawField::array) fail(SNN_ERR_FILE_FORMAT, "tensor '%s': shape is not an array", name.c_str());
    uint64_t elements = 1;
    for (size_t i = 0; i < shape.size; ++i) {
        if (i == shape.numbers.size())
            fail(SNN_ERR_FILE_FORMAT, "tensor '%s': shape holds a value that is not a non-negative integer",
                 name.c_str());
        const uint64_t n = shape.numbers[i];
        if (n > uint64_t(INT64_MAX) || (n != 0 && elements > uint64_t(INT64_MAX) / n))
            fail(SNN_ERR_FILE_FORMAT, "tensor '%s': shape %s is too large", name.c_str(),
                 numbers_text(shape.numbers).c_str());
        t.shape.push_back(int64_t(n));
        elements *= n;
    }

    const RawField &offsets = e.offsets;
    if (offsets.type != RawField::array || offsets.size != 2)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': data_offsets is not an array [begin, end]", name.c_str());
    for (size_t i = offsets.numbers.size(); i < 2; ++i)
        fail(SNN_ERR_FILE_FORMAT, "tensor '%s': data_offsets %s is not a non-negative integer", name.c_str(),
             i == 0 ? "begin" : "end");
    const uint64_t begin = offsets.numbers[0], end = offsets.numbers[1];
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

// Reads the JSON header in one pass of nlohmann's SAX parser, keeping the
// metadata and each top-level member's fields as they are (parse_entry
// checks them once the whole text has parsed). Refuses what nlohmann::json
// would silently accept: an object with the same key twice (it would keep
// one of them) and nesting deeper than kMaxJsonDepth. No JSON tree is built:
// a header of n tensors costs O(n log n).
class HeaderReader : public nlohmann::json_sax<nlohmann::json> {
public:
    bool top_is_object = false;
    std::map<std::string, RawEntry> entries;  // the top object's members
    std::map<std::string, std::string> metadata;
    std::set<std::string> metadata_not_strings;

    bool null() override { return value(RawField::other); }
    bool boolean(bool) override { return value(RawField::other); }
    bool number_integer(number_integer_t v) override { return v >= 0 ? number(uint64_t(v)) : value(RawField::other); }
    bool number_unsigned(number_unsigned_t v) override { return number(v); }
    bool number_float(number_float_t, const string_t &) override { return value(RawField::other); }
    bool binary(binary_t &) override { return value(RawField::other); }
    bool string(string_t &v) override {
        if (depth_ == 2 && in_metadata_) metadata.emplace(key_, v);
        if (depth_ == 2 && field_) field_->text = v;
        return value(RawField::string);
    }
    bool start_object(std::size_t) override {
        value(RawField::other);
        if (depth_ == 0) top_is_object = true;
        if (depth_ == 1 && entry_) {
            entry_->object = true;
            in_metadata_ = member_ == "__metadata__";
        }
        open(false);
        return true;
    }
    bool start_array(std::size_t) override {
        value(RawField::array);
        array_field_ = depth_ == 2 ? field_ : nullptr;
        open(true);
        return true;
    }
    bool key(string_t &k) override {
        if (depth_ == 1) {
            if (entries.size() == kMaxSafetensorsTensors)
                fail(SNN_ERR_FILE_FORMAT, "the JSON header has more than %zu entries", kMaxSafetensorsTensors);
            const auto [it, fresh] = entries.emplace(k, RawEntry{});
            if (!fresh) twice(k);
            member_ = k;
            entry_ = &it->second;
            return true;
        }
        if (!keys_.back().insert(k).second) twice(k);
        key_ = k;
        field_ = nullptr;
        if (depth_ == 2 && entry_ && entry_->object && !in_metadata_)
            field_ = k == "dtype"          ? &entry_->dtype
                     : k == "shape"        ? &entry_->shape
                     : k == "data_offsets" ? &entry_->offsets
                                           : nullptr;
        return true;
    }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &e) override {
        fail(SNN_ERR_FILE_FORMAT, "the JSON header is malformed: %s", e.what());
    }

private:
    // A value (scalar or container) at the current depth.
    bool value(RawField::Type type) {
        if (depth_ == 2 && in_metadata_ && type != RawField::string) metadata_not_strings.insert(key_);
        if (depth_ == 2 && field_) field_->type = type;
        if (depth_ == 3 && array_field_) ++array_field_->size;
        return true;
    }
    // An element of an array of numbers: kept while every element before it was one.
    bool number(uint64_t v) {
        if (depth_ == 3 && array_field_ && array_field_->numbers.size() == array_field_->size)
            array_field_->numbers.push_back(v);
        return value(RawField::other);
    }
    void open(bool array) {
        if (++depth_ > kMaxJsonDepth)
            fail(SNN_ERR_FILE_FORMAT, "the JSON header nests deeper than %d levels", kMaxJsonDepth);
        if (!array && depth_ > 1) keys_.emplace_back();
        is_array_[depth_] = array;
    }
    bool close() {
        if (!is_array_[depth_] && depth_ > 1) keys_.pop_back();
        if (depth_ == 3) array_field_ = nullptr;
        if (depth_ == 2) in_metadata_ = false, field_ = nullptr;
        if (depth_ == 1) entry_ = nullptr;
        --depth_;
        return true;
    }
    [[noreturn]] void twice(const std::string &k) {
        fail(SNN_ERR_FILE_FORMAT, "the JSON header has the key \"%s\" twice in one object", k.c_str());
    }

    int depth_ = 0;                            // containers open
    bool is_array_[kMaxJsonDepth + 1] = {};    // the kind of each
    std::vector<std::set<std::string>> keys_;  // of each object below the top one
    std::string member_, key_;                 // the last key at depth 1 and below
    RawEntry *entry_ = nullptr;                // the member being read
    bool in_metadata_ = false;
    RawField *field_ = nullptr;                // the entry's field being read
    RawField *array_field_ = nullptr;          // the field whose array is open
};

// Appends s as a JSON string: quotes, backslashes and control characters escaped.
void append_quoted(std::string &json, const std::string &s) {
    json += '"';
    for (const char c : s) {
        if (c == '"' || c == '\\') json += '\\';
        if (static_cast<unsigned char>(c) < 0x20)
            json += format("\\u%04x", unsigned(c));
        else
            json += c;
    }
    json += '"';
}

}  // namespace

// Written as text, entry after entry: an ordered JSON object finds each new
// key by a linear search, O(n^2) for a header of n tensors.
std::string safetensors_header(const Metadata &metadata, const std::vector<TensorOut> &tensors) {
    std::string json = "{\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
        if (i) json += ',';
        append_quoted(json, metadata[i].first);
        json += ':';
        append_quoted(json, metadata[i].second);
    }
    json += '}';
    size_t offset = 0;
    for (const TensorOut &t : tensors) {
        json += ',';
        append_quoted(json, t.name);
        json += t.int64 ? ":{\"dtype\":\"I64\",\"shape\":[" : ":{\"dtype\":\"F32\",\"shape\":[";
        for (size_t d = 0; d < t.shape.size(); ++d) {
            if (d) json += ',';
            json += std::to_string(t.shape[d]);
        }
        json += "],\"data_offsets\":[";
        json += std::to_string(offset);
        json += ',';
        offset += t.bytes();
        json += std::to_string(offset);
        json += "]}";
    }
    json += '}';
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
    HeaderReader r;
    nlohmann::json::sax_parse(json, json + length, &r);
    if (!r.top_is_object) fail(SNN_ERR_FILE_FORMAT, "the JSON header is not an object");

    SafetensorsHeader header;
    header.data_offset = 8 + uint64_t(length);
    header.data_size = file_size - header.data_offset;
    for (const auto &[name, entry] : r.entries) {
        if (name == "__metadata__") {
            if (!entry.object) fail(SNN_ERR_FILE_FORMAT, "__metadata__ is not a JSON object");
            if (!r.metadata_not_strings.empty())
                fail(SNN_ERR_FILE_FORMAT, "__metadata__ value '%s' is not a string",
                     r.metadata_not_strings.begin()->c_str());
            header.metadata = std::move(r.metadata);
            header.has_metadata = true;
            continue;
        }
        header.tensors.emplace_hint(header.tensors.end(), name, parse_entry(name, entry, header.data_size));
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
