// The protobuf wire format of ONNX's messages (proto.h), without a protobuf
// library. Writing goes twice over each message: once counting its bytes
// (a length-delimited field's length comes before it), once appending them.
// Reading walks each message's fields once, with every length checked
// against the bytes its enclosing message has left, so that no input can
// make it read outside the buffer or allocate more than a constant times
// the input's size.
#include "onnx/proto.h"

#include <math.h>
#include <string.h>

#include <limits>
#include <type_traits>

#include "common/error.h"
#include "core/math_numeric.h"

namespace snn {
namespace onnx {
namespace {

// protobuf's own limit on a message: 2 GiB less one byte.
constexpr size_t kMaxBytes = 0x7fffffff;

enum Wire : unsigned { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

uint32_t le32(const unsigned char *p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t le64(const unsigned char *p) { return uint64_t(le32(p)) | uint64_t(le32(p + 4)) << 32; }

// The float (4 bytes) or double (8 bytes) of these bits.
template <class T> T decode(uint64_t bits) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "float or double");
    T v;
    if (sizeof(T) == 4) {
        const uint32_t b = uint32_t(bits);
        memcpy(&v, &b, 4);
    } else {
        memcpy(&v, &bits, sizeof(T));
    }
    return v;
}

float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | man << 13);
    if (exp != 0) return bits_float(sign | (exp + 112) << 23 | man << 13);
    const float v = float(man) * 0x1p-24f;  // zero or subnormal: exact in float
    return sign ? -v : v;
}

// ---- Writing --------------------------------------------------------------

struct Counter {
    size_t n = 0;
    void put(const void *, size_t k) { n += k; }
};
struct Sink {
    std::string *s;
    void put(const void *p, size_t k) { s->append(static_cast<const char *>(p), k); }
};

size_t varint_size(uint64_t v) {
    size_t n = 1;
    for (; v >= 0x80; v >>= 7) ++n;
    return n;
}
template <class O> void put_varint(O &o, uint64_t v) {
    unsigned char b[10];
    size_t n = 0;
    for (; v >= 0x80; v >>= 7) b[n++] = static_cast<unsigned char>(v | 0x80);
    b[n++] = static_cast<unsigned char>(v);
    o.put(b, n);
}
template <class O> void put_tag(O &o, uint32_t field, Wire wire) { put_varint(o, uint64_t(field) << 3 | wire); }
template <class O> void put_le(O &o, uint64_t v, size_t bytes) {
    unsigned char b[8];
    for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    o.put(b, bytes);
}
// int32 and int64 alike: negative values sign-extended to ten bytes.
template <class O> void put_int(O &o, uint32_t field, int64_t v) {
    put_tag(o, field, kVarint);
    put_varint(o, uint64_t(v));
}
template <class O> void put_bytes(O &o, uint32_t field, const std::string &s) {
    put_tag(o, field, kLength);
    put_varint(o, s.size());
    o.put(s.data(), s.size());
}
template <class O> void put_string_if(O &o, uint32_t field, const std::string &s) {
    if (!s.empty()) put_bytes(o, field, s);
}
template <class O, class T> void put_packed_ints(O &o, uint32_t field, const std::vector<T> &v) {
    if (v.empty()) return;
    size_t len = 0;
    for (T x : v) len += varint_size(uint64_t(int64_t(x)));
    put_tag(o, field, kLength);
    put_varint(o, len);
    for (T x : v) put_varint(o, uint64_t(int64_t(x)));
}
template <class O> void put_packed_floats(O &o, uint32_t field, const std::vector<float> &v) {
    if (v.empty()) return;
    put_tag(o, field, kLength);
    put_varint(o, v.size() * 4);
    for (float x : v) put_le(o, float_bits(x), 4);
}
template <class O> void put_packed_doubles(O &o, uint32_t field, const std::vector<double> &v) {
    if (v.empty()) return;
    put_tag(o, field, kLength);
    put_varint(o, v.size() * 8);
    for (double x : v) {
        uint64_t bits;
        memcpy(&bits, &x, 8);
        put_le(o, bits, 8);
    }
}
// A nested message: its length (counted by a first pass), then its bytes.
template <class O, class Body> void put_message(O &o, uint32_t field, const Body &body) {
    Counter c;
    body(c);
    put_tag(o, field, kLength);
    put_varint(o, c.n);
    body(o);
}

template <class O> void write_tensor(O &o, const Tensor &t) {
    put_packed_ints(o, 1, t.dims);
    put_int(o, 2, t.data_type);
    // FLOAT values go out as raw_data (little-endian), as exporters write them.
    const bool floats_as_raw = t.data_type == kFloat && t.raw_data.empty() && !t.float_data.empty();
    if (!floats_as_raw) put_packed_floats(o, 4, t.float_data);
    put_packed_ints(o, 5, t.int32_data);
    put_packed_ints(o, 7, t.int64_data);
    put_string_if(o, 8, t.name);
    if (floats_as_raw) {
        put_tag(o, 9, kLength);
        put_varint(o, t.float_data.size() * 4);
        for (float x : t.float_data) put_le(o, float_bits(x), 4);
    } else {
        put_string_if(o, 9, t.raw_data);
    }
    put_packed_doubles(o, 10, t.double_data);
    if (t.external) put_int(o, 14, 1);
}

int32_t attribute_type(const Attribute &a) {
    if (a.has_graph && a.type != kAttrGraph && a.type != kAttrGraphs) return kAttrGraph;
    if (a.type != kAttrUndefined) return a.type;
    if (a.t.size() == 1) return kAttrTensor;
    if (!a.t.empty()) return kAttrTensors;
    if (!a.floats.empty()) return kAttrFloats;
    if (!a.ints.empty()) return kAttrInts;
    if (!a.strings.empty()) return kAttrStrings;
    if (!a.s.empty()) return kAttrString;
    if (a.f != 0.0f) return kAttrFloat;
    return kAttrInt;
}

template <class O> void write_attribute(O &o, const Attribute &a) {
    const int32_t type = attribute_type(a);
    if (type == kAttrGraph || type == kAttrGraphs)
        fail(SNN_ERR_UNSUPPORTED, "ONNX: attribute '%s': graph attributes are not kept, so not written",
             a.name.c_str());
    if (type == kAttrTensor && a.t.size() != 1)
        fail(SNN_ERR_INVALID_ARGUMENT, "ONNX: attribute '%s' of type TENSOR holds %zu tensors, not 1",
             a.name.c_str(), a.t.size());
    if (type < kAttrFloat || type > kAttrTensors)
        fail(SNN_ERR_INVALID_ARGUMENT, "ONNX: attribute '%s' has type %d, which snn does not write",
             a.name.c_str(), int(type));
    put_string_if(o, 1, a.name);
    if (type == kAttrFloat) {
        put_tag(o, 2, kFixed32);
        put_le(o, float_bits(a.f), 4);
    }
    if (type == kAttrInt) put_int(o, 3, a.i);
    if (type == kAttrString) put_bytes(o, 4, a.s);
    if (type == kAttrTensor) put_message(o, 5, [&](auto &w) { write_tensor(w, a.t[0]); });
    if (type == kAttrFloats) put_packed_floats(o, 7, a.floats);
    if (type == kAttrInts) put_packed_ints(o, 8, a.ints);
    if (type == kAttrStrings)
        for (const std::string &s : a.strings) put_bytes(o, 9, s);
    if (type == kAttrTensors)
        for (const Tensor &t : a.t) put_message(o, 10, [&](auto &w) { write_tensor(w, t); });
    put_int(o, 20, type);
}

template <class O> void write_node(O &o, const Node &n) {
    for (const std::string &s : n.input) put_bytes(o, 1, s);
    for (const std::string &s : n.output) put_bytes(o, 2, s);
    put_string_if(o, 3, n.name);
    put_string_if(o, 4, n.op_type);
    for (const Attribute &a : n.attribute) put_message(o, 5, [&](auto &w) { write_attribute(w, a); });
    put_string_if(o, 7, n.domain);
}

template <class O> void write_dim(O &o, const Dim &d) {
    if (d.value >= 0)
        put_int(o, 1, d.value);
    else
        put_string_if(o, 2, d.param);
}

template <class O> void write_value_info(O &o, const ValueInfo &v) {
    put_string_if(o, 1, v.name);
    // type (TypeProto) > tensor_type (TypeProto.Tensor) > elem_type, shape.
    put_message(o, 2, [&](auto &type) {
        put_message(type, 1, [&](auto &tensor) {
            put_int(tensor, 1, v.elem_type);
            if (!v.has_shape) return;
            put_message(tensor, 2, [&](auto &shape) {
                for (const Dim &d : v.shape) put_message(shape, 1, [&](auto &w) { write_dim(w, d); });
            });
        });
    });
}

template <class O> void write_graph(O &o, const Graph &g) {
    for (const Node &n : g.node) put_message(o, 1, [&](auto &w) { write_node(w, n); });
    put_string_if(o, 2, g.name);
    for (const Tensor &t : g.initializer) put_message(o, 5, [&](auto &w) { write_tensor(w, t); });
    for (const ValueInfo &v : g.input) put_message(o, 11, [&](auto &w) { write_value_info(w, v); });
    for (const ValueInfo &v : g.output) put_message(o, 12, [&](auto &w) { write_value_info(w, v); });
    for (const ValueInfo &v : g.value_info) put_message(o, 13, [&](auto &w) { write_value_info(w, v); });
}

template <class O> void write_model_to(O &o, const Model &m) {
    put_int(o, 1, m.ir_version);
    put_string_if(o, 2, m.producer_name);
    put_string_if(o, 3, m.producer_version);
    put_string_if(o, 6, m.doc_string);
    put_message(o, 7, [&](auto &w) { write_graph(w, m.graph); });
    for (const OpsetImport &op : m.opset_import)
        put_message(o, 8, [&](auto &w) {
            put_string_if(w, 1, op.domain);
            put_int(w, 2, op.version);
        });
    for (const MetadataEntry &e : m.metadata_props)
        put_message(o, 14, [&](auto &w) {
            put_string_if(w, 1, e.key);
            put_string_if(w, 2, e.value);
        });
}

// ---- Reading --------------------------------------------------------------

struct FieldName {
    uint32_t number;
    const char *name;
};
struct MessageInfo {
    const char *name;
    const FieldName *fields;
    size_t count;
};
template <size_t N> constexpr MessageInfo info(const char *name, const FieldName (&fields)[N]) {
    return {name, fields, N};
}

const FieldName kModelFields[] = {{1, "ir_version"}, {2, "producer_name"}, {3, "producer_version"},
                                  {4, "domain"}, {5, "model_version"}, {6, "doc_string"}, {7, "graph"},
                                  {8, "opset_import"}, {14, "metadata_props"}, {20, "training_info"},
                                  {25, "functions"}};
const FieldName kOpsetFields[] = {{1, "domain"}, {2, "version"}};
const FieldName kMetadataFields[] = {{1, "key"}, {2, "value"}};
const FieldName kGraphFields[] = {{1, "node"}, {2, "name"}, {5, "initializer"}, {10, "doc_string"},
                                  {11, "input"}, {12, "output"}, {13, "value_info"},
                                  {14, "quantization_annotation"}, {15, "sparse_initializer"}};
const FieldName kNodeFields[] = {{1, "input"}, {2, "output"}, {3, "name"}, {4, "op_type"},
                                 {5, "attribute"}, {6, "doc_string"}, {7, "domain"}};
const FieldName kAttributeFields[] = {{1, "name"}, {2, "f"}, {3, "i"}, {4, "s"}, {5, "t"}, {6, "g"},
                                      {7, "floats"}, {8, "ints"}, {9, "strings"}, {10, "tensors"},
                                      {11, "graphs"}, {13, "doc_string"}, {14, "tp"}, {15, "type_protos"},
                                      {20, "type"}, {21, "ref_attr_name"}, {22, "sparse_tensor"},
                                      {23, "sparse_tensors"}};
const FieldName kTensorFields[] = {{1, "dims"}, {2, "data_type"}, {3, "segment"}, {4, "float_data"},
                                   {5, "int32_data"}, {6, "string_data"}, {7, "int64_data"}, {8, "name"},
                                   {9, "raw_data"}, {10, "double_data"}, {11, "uint64_data"},
                                   {12, "doc_string"}, {13, "external_data"}, {14, "data_location"}};
const FieldName kValueInfoFields[] = {{1, "name"}, {2, "type"}, {3, "doc_string"}};
const FieldName kTypeFields[] = {{1, "tensor_type"}, {4, "sequence_type"}, {5, "map_type"}, {6, "denotation"},
                                 {8, "sparse_tensor_type"}, {9, "optional_type"}};
const FieldName kTensorTypeFields[] = {{1, "elem_type"}, {2, "shape"}};
const FieldName kShapeFields[] = {{1, "dim"}};
const FieldName kDimFields[] = {{1, "dim_value"}, {2, "dim_param"}, {3, "denotation"}};

const MessageInfo kModel = info("ModelProto", kModelFields), kOpset = info("OperatorSetIdProto", kOpsetFields),
                  kMetadata = info("StringStringEntryProto", kMetadataFields),
                  kGraph = info("GraphProto", kGraphFields), kNode = info("NodeProto", kNodeFields),
                  kAttribute = info("AttributeProto", kAttributeFields),
                  kTensor = info("TensorProto", kTensorFields),
                  kValueInfo = info("ValueInfoProto", kValueInfoFields), kType = info("TypeProto", kTypeFields),
                  kTensorType = info("TypeProto.Tensor", kTensorTypeFields),
                  kShape = info("TensorShapeProto", kShapeFields),
                  kDim = info("TensorShapeProto.Dimension", kDimFields);

// One field as the wire holds it.
struct Field {
    uint32_t number = 0;  // 0 while the tag itself is read
    unsigned wire = 0;
    uint64_t value = 0;                  // varint, fixed32 or fixed64
    const unsigned char *data = nullptr;  // length-delimited bytes
    size_t len = 0;
};

// The fields of one message: [p, end) and its place in the nesting.
struct Cursor {
    const MessageInfo *msg;
    const unsigned char *p, *end;
    int depth;
};

// Error offsets count from the start of the input; "of N" is the end of the
// enclosing message.
class Reader {
public:
    Reader(const unsigned char *base, size_t size) : base_(base), size_(size) {}

    void model(Model &m) {
        Cursor c{&kModel, base_, base_ + size_, 1};
        Field f;
        while (next(c, f)) switch (f.number) {
            case 1: m.ir_version = integer(c, f); break;
            case 2: m.producer_name = bytes(c, f); break;
            case 3: m.producer_version = bytes(c, f); break;
            case 6: m.doc_string = bytes(c, f); break;
            case 7: graph(open(c, f, kGraph), m.graph); break;
            case 8: {
                m.opset_import.emplace_back();
                Cursor o = open(c, f, kOpset);
                Field g;
                while (next(o, g)) {
                    if (g.number == 1) m.opset_import.back().domain = bytes(o, g);
                    if (g.number == 2) m.opset_import.back().version = integer(o, g);
                }
                break;
            }
            case 14: {
                m.metadata_props.emplace_back();
                Cursor o = open(c, f, kMetadata);
                Field g;
                while (next(o, g)) {
                    if (g.number == 1) m.metadata_props.back().key = bytes(o, g);
                    if (g.number == 2) m.metadata_props.back().value = bytes(o, g);
                }
                break;
            }
            default: break;
        }
    }

private:
    const unsigned char *base_;
    size_t size_;

    size_t at(const unsigned char *p) const { return size_t(p - base_); }

    [[noreturn]] void bad(const Cursor &c, uint32_t field, const std::string &what) const {
        const char *name = nullptr;
        for (size_t i = 0; i < c.msg->count; ++i)
            if (c.msg->fields[i].number == field) name = c.msg->fields[i].name;
        if (field == 0)
            fail(SNN_ERR_FILE_FORMAT, "ONNX: %s: %s", c.msg->name, what.c_str());
        if (name)
            fail(SNN_ERR_FILE_FORMAT, "ONNX: %s.%s: %s", c.msg->name, name, what.c_str());
        fail(SNN_ERR_FILE_FORMAT, "ONNX: %s field %u: %s", c.msg->name, unsigned(field), what.c_str());
    }

    uint64_t varint(const Cursor &c, uint32_t field, const unsigned char *&p, const unsigned char *end) const {
        const unsigned char *start = p;
        uint64_t v = 0;
        for (int i = 0; i < 10; ++i) {
            if (p == end)
                bad(c, field, format("truncated varint (byte %zu of %zu)", at(start), at(end)));
            const unsigned char b = *p++;
            v |= uint64_t(b & 0x7f) << (7 * i);
            if (!(b & 0x80)) return v;
        }
        bad(c, field, format("varint longer than 10 bytes (byte %zu)", at(start)));
    }

    // The next field of c into f; false at the end of the message.
    bool next(Cursor &c, Field &f) const {
        if (c.p == c.end) return false;
        const unsigned char *start = c.p;
        const uint64_t tag = varint(c, 0, c.p, c.end);
        if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
            bad(c, 0, format("field number %llu is not valid (byte %zu)", (unsigned long long)(tag >> 3), at(start)));
        f.number = uint32_t(tag >> 3);
        f.wire = unsigned(tag & 7);
        const size_t left = size_t(c.end - c.p);
        switch (f.wire) {
            case kVarint: f.value = varint(c, f.number, c.p, c.end); break;
            case kFixed64:
            case kFixed32: {
                const size_t n = f.wire == kFixed64 ? 8 : 4;
                if (left < n) bad(c, f.number, format("truncated %zu-byte value (byte %zu of %zu)", n, at(c.p), at(c.end)));
                f.value = n == 8 ? le64(c.p) : le32(c.p);
                c.p += n;
                break;
            }
            case kLength: {
                const uint64_t len = varint(c, f.number, c.p, c.end);
                if (len > uint64_t(c.end - c.p))
                    bad(c, f.number, format("length %llu runs past the end (byte %zu of %zu)",
                                            (unsigned long long)len, at(c.p), at(c.end)));
                f.data = c.p;
                f.len = size_t(len);
                c.p += f.len;
                break;
            }
            case 3:
            case 4: bad(c, f.number, format("groups (wire type %u) are not supported (byte %zu)", f.wire, at(start)));
            default: bad(c, f.number, format("wire type %u is not valid (byte %zu)", f.wire, at(start)));
        }
        return true;
    }

    void expect(const Cursor &c, const Field &f, unsigned wire) const {
        if (f.wire != wire) bad(c, f.number, format("wire type %u where %u belongs", f.wire, wire));
    }
    int64_t integer(const Cursor &c, const Field &f) const {
        expect(c, f, kVarint);
        return int64_t(f.value);
    }
    // An int32 field: the low 32 bits, as protobuf reads them.
    int32_t int32(const Cursor &c, const Field &f) const { return int32_t(uint32_t(integer(c, f))); }
    std::string bytes(const Cursor &c, const Field &f) const {
        expect(c, f, kLength);
        return std::string(reinterpret_cast<const char *>(f.data), f.len);
    }
    Cursor open(const Cursor &c, const Field &f, const MessageInfo &inner) const {
        expect(c, f, kLength);
        if (c.depth >= kMaxDepth) bad(c, f.number, format("messages nested deeper than %d", kMaxDepth));
        return Cursor{&inner, f.data, f.data + f.len, c.depth + 1};
    }
    // Repeated varints, unpacked (one per field) or packed (one field of
    // bytes): a packed field reserves no more elements than it has bytes.
    template <class T> void integers(const Cursor &c, const Field &f, std::vector<T> &out) const {
        if (f.wire == kVarint) {
            out.push_back(T(int64_t(f.value)));
            return;
        }
        expect(c, f, kLength);
        if (out.empty()) {
            size_t count = 0;
            for (size_t i = 0; i < f.len; ++i) count += !(f.data[i] & 0x80);
            out.reserve(count);
        }
        const unsigned char *p = f.data, *end = f.data + f.len;
        while (p != end) out.push_back(T(int64_t(varint(c, f.number, p, end))));
    }
    // Repeated float (4 bytes) or double (8 bytes), unpacked or packed.
    template <class T> void fixed(const Cursor &c, const Field &f, std::vector<T> &out) const {
        constexpr size_t n = sizeof(T);
        if (f.wire == (n == 4 ? kFixed32 : kFixed64)) {
            out.push_back(decode<T>(f.value));
            return;
        }
        expect(c, f, kLength);
        if (f.len % n != 0) bad(c, f.number, format("packed length %zu is not a multiple of %zu", f.len, n));
        if (out.empty()) out.reserve(f.len / n);
        for (size_t i = 0; i < f.len; i += n) out.push_back(decode<T>(n == 4 ? le32(f.data + i) : le64(f.data + i)));
    }

    void graph(Cursor c, Graph &g) const {
        Field f;
        while (next(c, f)) switch (f.number) {
            case 1: g.node.emplace_back(); node(open(c, f, kNode), g.node.back()); break;
            case 2: g.name = bytes(c, f); break;
            case 5: g.initializer.emplace_back(); tensor(open(c, f, kTensor), g.initializer.back()); break;
            case 11: g.input.emplace_back(); value_info(open(c, f, kValueInfo), g.input.back()); break;
            case 12: g.output.emplace_back(); value_info(open(c, f, kValueInfo), g.output.back()); break;
            case 13: g.value_info.emplace_back(); value_info(open(c, f, kValueInfo), g.value_info.back()); break;
            case 15: expect(c, f, kLength); ++g.sparse_initializer_count; break;
            default: break;
        }
    }

    void node(Cursor c, Node &n) const {
        Field f;
        while (next(c, f)) switch (f.number) {
            case 1: n.input.push_back(bytes(c, f)); break;
            case 2: n.output.push_back(bytes(c, f)); break;
            case 3: n.name = bytes(c, f); break;
            case 4: n.op_type = bytes(c, f); break;
            case 5: n.attribute.emplace_back(); attribute(open(c, f, kAttribute), n.attribute.back()); break;
            case 7: n.domain = bytes(c, f); break;
            default: break;
        }
    }

    void attribute(Cursor c, Attribute &a) const {
        Field f;
        while (next(c, f)) switch (f.number) {
            case 1: a.name = bytes(c, f); break;
            case 2: expect(c, f, kFixed32); a.f = decode<float>(f.value); break;
            case 3: a.i = integer(c, f); break;
            case 4: a.s = bytes(c, f); break;
            case 5:   // t
            case 10:  // tensors
                a.t.emplace_back();
                tensor(open(c, f, kTensor), a.t.back());
                break;
            case 6:   // g
            case 11:  // graphs: noted, not kept
                expect(c, f, kLength);
                a.has_graph = true;
                break;
            case 7: fixed(c, f, a.floats); break;
            case 8: integers(c, f, a.ints); break;
            case 9: a.strings.push_back(bytes(c, f)); break;
            case 20: a.type = int32(c, f); break;
            default: break;
        }
    }

    void tensor(Cursor c, Tensor &t) const {
        Field f;
        while (next(c, f)) switch (f.number) {
            case 1: integers(c, f, t.dims); break;
            case 2: t.data_type = int32(c, f); break;
            case 4: fixed(c, f, t.float_data); break;
            case 5: integers(c, f, t.int32_data); break;
            case 7: integers(c, f, t.int64_data); break;
            case 8: t.name = bytes(c, f); break;
            case 9: t.raw_data = bytes(c, f); break;
            case 10: fixed(c, f, t.double_data); break;
            case 13: expect(c, f, kLength); t.external = true; break;  // external_data entries
            case 14: if (int32(c, f) != 0) t.external = true; break;   // data_location
            default: break;
        }
    }

    void value_info(Cursor c, ValueInfo &v) const {
        Field f;
        while (next(c, f)) {
            if (f.number == 1) v.name = bytes(c, f);
            if (f.number != 2) continue;
            Cursor type = open(c, f, kType);
            Field g;
            while (next(type, g)) {
                if (g.number != 1) continue;  // not a tensor type: elem_type stays undefined
                Cursor tensor = open(type, g, kTensorType);
                Field h;
                while (next(tensor, h)) {
                    if (h.number == 1) v.elem_type = int32(tensor, h);
                    if (h.number == 2) {
                        v.has_shape = true;
                        shape(open(tensor, h, kShape), v.shape);
                    }
                }
            }
        }
    }

    void shape(Cursor c, std::vector<Dim> &dims) const {
        Field f;
        while (next(c, f)) {
            if (f.number != 1) continue;
            dims.emplace_back();
            Dim &d = dims.back();
            Cursor dim = open(c, f, kDim);
            Field g;
            while (next(dim, g)) {
                if (g.number == 1) {
                    d.value = integer(dim, g);
                    d.param.clear();
                    if (d.value < 0) bad(dim, 1, format("negative size %lld", (long long)d.value));
                } else if (g.number == 2) {
                    d.param = bytes(dim, g);
                    d.value = -1;
                }
            }
        }
    }
};

// ---- Values ---------------------------------------------------------------

const char *type_name(int32_t t) {
    switch (t) {
        case kFloat: return "FLOAT";
        case kUint8: return "UINT8";
        case kInt8: return "INT8";
        case kInt32: return "INT32";
        case kInt64: return "INT64";
        case kBool: return "BOOL";
        case kFloat16: return "FLOAT16";
        case kDouble: return "DOUBLE";
        case kBfloat16: return "BFLOAT16";
        default: return nullptr;
    }
}

// The values of t, each converted by conv from an int64_t (the integer
// types) or a double (the others).
template <class T, class Conv> std::vector<T> values(const Tensor &t, Conv &&conv) {
    const char *name = t.name.c_str();
    if (t.external)
        fail(SNN_ERR_UNSUPPORTED, "ONNX: tensor '%s' keeps its values in an external file, which snn does not read",
             name);
    const char *type = type_name(t.data_type);
    if (!type) fail(SNN_ERR_FILE_FORMAT, "ONNX: tensor '%s' has data type %d, which snn does not read", name,
                    int(t.data_type));
    const int64_t n = t.element_count();
    if (n < 0) fail(SNN_ERR_FILE_FORMAT, "ONNX: tensor '%s': its dims are negative or overflow", name);
    const size_t width = t.data_type == kDouble || t.data_type == kInt64 ? 8
                         : t.data_type == kFloat || t.data_type == kInt32 ? 4
                         : t.data_type == kFloat16 || t.data_type == kBfloat16 ? 2 : 1;
    const unsigned char *raw = reinterpret_cast<const unsigned char *>(t.raw_data.data());
    const bool use_raw = !t.raw_data.empty();
    size_t have;
    if (use_raw) {
        if (t.raw_data.size() % width != 0)
            fail(SNN_ERR_FILE_FORMAT, "ONNX: tensor '%s': raw_data holds %zu bytes, not a whole number of %s values",
                 name, t.raw_data.size(), type);
        have = t.raw_data.size() / width;
    } else {
        have = t.data_type == kFloat ? t.float_data.size()
               : t.data_type == kDouble ? t.double_data.size()
               : t.data_type == kInt64 ? t.int64_data.size() : t.int32_data.size();
    }
    if (uint64_t(have) != uint64_t(n))
        fail(SNN_ERR_FILE_FORMAT, "ONNX: tensor '%s' holds %zu %s values where its dims declare %lld", name, have,
             type, (long long)n);
    std::vector<T> out;
    out.reserve(have);
    auto emit = [&](auto v) { out.push_back(conv(v)); };
    for (size_t i = 0; i < have; ++i) {
        switch (t.data_type) {
            case kFloat: emit(double(use_raw ? bits_float(le32(raw + 4 * i)) : t.float_data[i])); break;
            case kDouble: emit(use_raw ? decode<double>(le64(raw + 8 * i)) : t.double_data[i]); break;
            case kInt64: emit(use_raw ? int64_t(le64(raw + 8 * i)) : t.int64_data[i]); break;
            case kInt32: emit(int64_t(use_raw ? int32_t(le32(raw + 4 * i)) : t.int32_data[i])); break;
            case kInt8: emit(int64_t(use_raw ? int8_t(raw[i]) : t.int32_data[i])); break;
            case kUint8: emit(int64_t(use_raw ? raw[i] : t.int32_data[i])); break;
            case kBool: emit(int64_t((use_raw ? raw[i] : t.int32_data[i]) != 0)); break;
            case kFloat16:
            case kBfloat16: {
                const uint16_t bits = use_raw ? uint16_t(raw[2 * i] | raw[2 * i + 1] << 8)
                                              : uint16_t(uint32_t(t.int32_data[i]));
                emit(double(t.data_type == kFloat16 ? half_to_float(bits) : bf16_to_float(bits)));
                break;
            }
        }
    }
    return out;
}

}  // namespace

// ---- The interface ----------------------------------------------------------

int64_t Tensor::element_count() const {
    for (int64_t d : dims)
        if (d < 0) return -1;
    for (int64_t d : dims)
        if (d == 0) return 0;
    int64_t n = 1;
    for (int64_t d : dims) {
        if (n > std::numeric_limits<int64_t>::max() / d) return -1;
        n *= d;
    }
    return n;
}

std::vector<float> Tensor::to_floats() const {
    return values<float>(*this, [](auto v) {
        const double d = double(v);
        // A double beyond float's range rounds to an infinity, as IEEE has it
        // (C++ leaves that conversion undefined).
        if (std::is_floating_point<decltype(v)>::value && fabs(d) >= 0x1.ffffffp+127)
            return d < 0 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
        return float(v);
    });
}

std::vector<int64_t> Tensor::to_int64s() const {
    return values<int64_t>(*this, [this](auto v) {
        if (std::is_integral<decltype(v)>::value) return int64_t(v);
        const double d = double(v);
        if (!(d >= -0x1p63 && d < 0x1p63) || d != floor(d))
            fail(SNN_ERR_FILE_FORMAT, "ONNX: tensor '%s' holds %g where an integer belongs", name.c_str(), d);
        return int64_t(d);
    });
}

const Attribute *Node::attr(const char *wanted) const {
    for (const Attribute &a : attribute)
        if (a.name == wanted) return &a;
    return nullptr;
}

const std::string *Model::metadata(const char *key) const {
    const std::string *found = nullptr;
    for (const MetadataEntry &e : metadata_props)
        if (e.key == key) found = &e.value;  // the last one, as a map field's parser keeps
    return found;
}

int64_t Model::opset() const {
    int64_t version = 0;
    for (const OpsetImport &o : opset_import)
        if ((o.domain.empty() || o.domain == "ai.onnx") && o.version > version) version = o.version;
    return version;
}

std::string write_model(const Model &m) {
    Counter c;
    write_model_to(c, m);
    if (c.n > kMaxBytes)
        fail(SNN_ERR_UNSUPPORTED, "ONNX: the model takes %zu bytes; an ONNX file holds at most 2 GiB", c.n);
    std::string out;
    out.reserve(c.n);
    Sink s{&out};
    write_model_to(s, m);
    return out;
}

Model read_model(const unsigned char *bytes, size_t size) {
    if (size > kMaxBytes)
        fail(SNN_ERR_UNSUPPORTED, "ONNX: the file holds %zu bytes; ONNX files (protobuf) hold at most 2 GiB", size);
    static const unsigned char empty = 0;
    Model m;
    Reader(size == 0 ? &empty : bytes, size).model(m);
    return m;
}

}  // namespace onnx
}  // namespace snn
