// The subset of ONNX's protobuf messages snn reads and writes (onnx.proto3:
// ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto), as plain structs, and a reader and writer of the
// protobuf wire format for them. No protobuf library: the wire format is
// varints, fixed 32/64-bit words and length-delimited bytes, and a field
// may come packed or unpacked (proto2 and proto3 writers differ).
//
// The reader keeps what snn may need and skips every other field, as a
// protobuf parser does; it refuses malformed bytes (a truncated varint or
// field, a length past the end, wire type 3/4/6/7, nesting deeper than
// kMaxDepth) with SNN_ERR_FILE_FORMAT naming the message and field. It
// notes, without refusing them, what import refuses later with a clear
// message: external data, subgraphs (a GRAPH attribute), sparse
// initializers.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace snn {
namespace onnx {

// TensorProto.DataType values snn meets.
enum DataType : int32_t {
    kUndefined = 0,
    kFloat = 1,
    kUint8 = 2,
    kInt8 = 3,
    kInt32 = 6,
    kInt64 = 7,
    kBool = 9,
    kFloat16 = 10,
    kDouble = 11,
    kBfloat16 = 16,
};

// AttributeProto.AttributeType values.
enum AttrType : int32_t {
    kAttrUndefined = 0,
    kAttrFloat = 1,
    kAttrInt = 2,
    kAttrString = 3,
    kAttrTensor = 4,
    kAttrGraph = 5,
    kAttrFloats = 6,
    kAttrInts = 7,
    kAttrStrings = 8,
    kAttrTensors = 9,
    kAttrGraphs = 10,
};

// Deepest nesting of messages the reader follows (a graph in an attribute
// of a node of a graph ... is refused beyond it).
constexpr int kMaxDepth = 32;

struct Tensor {
    std::string name;
    int32_t data_type = kUndefined;
    std::vector<int64_t> dims;          // empty: a scalar (rank 0)
    // The values, as the file holds them: one of these is filled (raw_data
    // little-endian bytes, or the typed repeated field).
    std::string raw_data;
    std::vector<float> float_data;      // FLOAT (and FLOAT16/BFLOAT16 as floats: not used)
    std::vector<int32_t> int32_data;    // INT32, INT8, UINT8, BOOL, FLOAT16 bits
    std::vector<int64_t> int64_data;    // INT64
    std::vector<double> double_data;    // DOUBLE
    bool external = false;              // data_location = EXTERNAL or external_data present

    // Number of elements the dims declare (1 for a scalar); -1 on overflow
    // or a negative dimension.
    int64_t element_count() const;
    // The values as float / int64, converted from whichever field holds
    // them (FLOAT, DOUBLE, INT32/INT64/INT8/UINT8/BOOL, FLOAT16, BFLOAT16;
    // raw_data when it is not empty; a DOUBLE beyond float's range gives an
    // infinity, and to_int64s refuses a value that is not an integer). Throws
    // SNN_ERR_FILE_FORMAT when the count differs from element_count() or
    // the type is not one of these, SNN_ERR_UNSUPPORTED for external data.
    std::vector<float> to_floats() const;
    std::vector<int64_t> to_int64s() const;
};

struct Graph;

struct Attribute {
    std::string name;
    // Set by the writer from what is filled when 0 (t: TENSOR for one
    // tensor, TENSORS for more; floats, ints, strings, s, f; else INT).
    int32_t type = kAttrUndefined;
    float f = 0.0f;
    int64_t i = 0;
    std::string s;
    std::vector<Tensor> t;          // 1 (TENSOR, field t) or any (TENSORS, field tensors)
    std::vector<float> floats;
    std::vector<int64_t> ints;
    std::vector<std::string> strings;
    bool has_graph = false;         // a GRAPH or GRAPHS attribute (If/Loop/Scan): not kept
};

struct Node {
    std::vector<std::string> input;   // "" is an omitted optional input
    std::vector<std::string> output;
    std::string name;
    std::string op_type;
    std::string domain;               // "" or "ai.onnx" for the standard ops
    std::vector<Attribute> attribute;

    // The attribute named `name`, or null.
    const Attribute *attr(const char *name) const;
};

// One dimension of a value's type: a number, a symbolic name, or unknown.
struct Dim {
    int64_t value = -1;   // >= 0 when known
    std::string param;    // the symbol ("batch") when symbolic
};

struct ValueInfo {
    std::string name;
    int32_t elem_type = kUndefined;   // tensor_type.elem_type
    bool has_shape = false;
    std::vector<Dim> shape;
};

struct Graph {
    std::vector<Node> node;
    std::string name;
    std::vector<Tensor> initializer;
    int64_t sparse_initializer_count = 0;  // refused by import
    std::vector<ValueInfo> input;
    std::vector<ValueInfo> output;
    std::vector<ValueInfo> value_info;
};

struct OpsetImport {
    std::string domain;   // "" for the standard ops
    int64_t version = 0;
};

// ModelProto.metadata_props: free key/value strings (export keeps snn's
// spec there, "snn.spec").
struct MetadataEntry {
    std::string key;
    std::string value;
};

struct Model {
    int64_t ir_version = 0;
    std::vector<OpsetImport> opset_import;
    std::string producer_name;
    std::string producer_version;
    std::string doc_string;
    Graph graph;
    std::vector<MetadataEntry> metadata_props;
    // The value of metadata key `key`, or null.
    const std::string *metadata(const char *key) const;
    // Version of the default ("" or "ai.onnx") domain, or 0 when absent.
    int64_t opset() const;
};

// Serialises a model: fields in number order, as protobuf writes them;
// repeated numbers packed; a FLOAT tensor's float_data as raw_data; every
// attribute's type set. Throws SNN_ERR_UNSUPPORTED for a graph attribute
// (not kept) or a result above 2 GiB.
std::string write_model(const Model &m);
// Parses bytes; throws SNN_ERR_FILE_FORMAT on malformed input. Sizes above
// 2 GiB are refused (SNN_ERR_UNSUPPORTED), as protobuf itself does.
Model read_model(const unsigned char *bytes, size_t size);

}  // namespace onnx
}  // namespace snn
