// ONNX's protobuf wire layer (lib/onnx/proto.cpp): bytes written against
// bytes worked out by hand from the wire format; the files onnx's own
// Python writer made (wire/, from make_wire_goldens.py) read to every value;
// malformed input refused with messages naming message and field; every
// prefix of a valid file refused or read consistently; and write then read
// of random models giving the model back.
#include "onnx/proto.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cfloat>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"

using namespace snn::onnx;

namespace {

using Bytes = std::vector<unsigned char>;

Model read(const Bytes &b) { return read_model(b.data(), b.size()); }
Model read(const std::string &s) { return read_model(reinterpret_cast<const unsigned char *>(s.data()), s.size()); }
Bytes bytes_of(const std::string &s) { return Bytes(s.begin(), s.end()); }

Bytes wire_file(const char *name) {
    const char *dir = getenv("SNN_ONNX_WIRE");
    if (!dir) ADD_FAILURE() << "SNN_ONNX_WIRE (the folder tests/onnx/wire) is not set";
    std::ifstream f(std::string(dir ? dir : ".") + "/" + name, std::ios::binary);
    if (!f) ADD_FAILURE() << "cannot read " << name;
    return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The status and message read_model throws, or SNN_OK.
snn_status read_status(const Bytes &b, std::string *message = nullptr) {
    try {
        read(b);
    } catch (const snn::Error &e) {
        if (message) *message = e.what();
        return e.status();
    }
    return SNN_OK;
}

std::string le_floats(std::initializer_list<float> v) {
    std::string s;
    for (float f : v) {
        uint32_t b;
        memcpy(&b, &f, 4);
        for (int i = 0; i < 4; ++i) s.push_back(char(b >> (8 * i)));
    }
    return s;
}

Tensor tensor(const char *name, int32_t type, std::vector<int64_t> dims) {
    Tensor t;
    t.name = name;
    t.data_type = type;
    t.dims = std::move(dims);
    return t;
}

// The model of tiny.onnx: y = Relu(x), x [N, 3], an initializer w = [1, -2].
Model tiny_model() {
    Model m;
    m.ir_version = 8;
    m.producer_name = "snn";
    m.opset_import.push_back({"", 17});
    m.graph.name = "g";
    Node n;
    n.input = {"x"};
    n.output = {"y"};
    n.op_type = "Relu";
    m.graph.node.push_back(n);
    Tensor w = tensor("w", kFloat, {2});
    w.float_data = {1.0f, -2.0f};
    m.graph.initializer.push_back(w);
    ValueInfo x;
    x.name = "x";
    x.elem_type = kFloat;
    x.has_shape = true;
    Dim batch;
    batch.param = "N";
    Dim three;
    three.value = 3;
    x.shape = {batch, three};
    m.graph.input.push_back(x);
    ValueInfo y;
    y.name = "y";
    y.elem_type = kFloat;
    m.graph.output.push_back(y);
    return m;
}

// tiny_model() as the wire format has it, field by field (tag = field << 3 |
// wire type; 2 is length-delimited, 0 a varint); fields in number order,
// repeated numbers packed, floats of initializers in raw_data.
const Bytes kTiny = {
    0x08, 0x08,                          // ModelProto.ir_version = 8
    0x12, 0x03, 's', 'n', 'n',           // producer_name
    0x3A, 0x46,                          // graph, 70 bytes:
    0x0A, 0x0C,                          //   node, 12 bytes:
    0x0A, 0x01, 'x',                     //     input
    0x12, 0x01, 'y',                     //     output
    0x22, 0x04, 'R', 'e', 'l', 'u',      //     op_type
    0x12, 0x01, 'g',                     //   name
    0x2A, 0x12,                          //   initializer, 18 bytes:
    0x0A, 0x01, 0x02,                    //     dims [2], packed
    0x10, 0x01,                          //     data_type FLOAT
    0x42, 0x01, 'w',                     //     name
    0x4A, 0x08,                          //     raw_data, 8 bytes:
    0x00, 0x00, 0x80, 0x3F,              //       1.0f
    0x00, 0x00, 0x00, 0xC0,              //       -2.0f
    0x5A, 0x14,                          //   input (11), 20 bytes:
    0x0A, 0x01, 'x',                     //     name
    0x12, 0x0F,                          //     type, 15 bytes:
    0x0A, 0x0D,                          //       tensor_type, 13 bytes:
    0x08, 0x01,                          //         elem_type FLOAT
    0x12, 0x09,                          //         shape, 9 bytes:
    0x0A, 0x03, 0x12, 0x01, 'N',         //           dim { dim_param "N" }
    0x0A, 0x02, 0x08, 0x03,              //           dim { dim_value 3 }
    0x62, 0x09,                          //   output (12), 9 bytes:
    0x0A, 0x01, 'y',                     //     name
    0x12, 0x04, 0x0A, 0x02, 0x08, 0x01,  //     type { tensor_type { elem_type FLOAT } }
    0x42, 0x02, 0x10, 0x11,              // opset_import { version 17 }
};

// ---- Models compared field by field --------------------------------------

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && (a.empty() || memcmp(a.data(), b.data(), a.size() * 4) == 0);
}
bool same_bits(const std::vector<double> &a, const std::vector<double> &b) {
    return a.size() == b.size() && (a.empty() || memcmp(a.data(), b.data(), a.size() * 8) == 0);
}

void expect_same(const Tensor &a, const Tensor &b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.data_type, b.data_type) << a.name;
    EXPECT_EQ(a.dims, b.dims) << a.name;
    EXPECT_EQ(a.raw_data, b.raw_data) << a.name;
    EXPECT_TRUE(same_bits(a.float_data, b.float_data)) << a.name;
    EXPECT_EQ(a.int32_data, b.int32_data) << a.name;
    EXPECT_EQ(a.int64_data, b.int64_data) << a.name;
    EXPECT_TRUE(same_bits(a.double_data, b.double_data)) << a.name;
    EXPECT_EQ(a.external, b.external) << a.name;
}

void expect_same(const ValueInfo &a, const ValueInfo &b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.elem_type, b.elem_type) << a.name;
    EXPECT_EQ(a.has_shape, b.has_shape) << a.name;
    ASSERT_EQ(a.shape.size(), b.shape.size()) << a.name;
    for (size_t i = 0; i < a.shape.size(); ++i) {
        EXPECT_EQ(a.shape[i].value, b.shape[i].value) << a.name << " dim " << i;
        EXPECT_EQ(a.shape[i].param, b.shape[i].param) << a.name << " dim " << i;
    }
}

void expect_same(const Model &a, const Model &b) {
    EXPECT_EQ(a.ir_version, b.ir_version);
    ASSERT_EQ(a.opset_import.size(), b.opset_import.size());
    for (size_t i = 0; i < a.opset_import.size(); ++i) {
        EXPECT_EQ(a.opset_import[i].domain, b.opset_import[i].domain);
        EXPECT_EQ(a.opset_import[i].version, b.opset_import[i].version);
    }
    EXPECT_EQ(a.producer_name, b.producer_name);
    EXPECT_EQ(a.producer_version, b.producer_version);
    EXPECT_EQ(a.doc_string, b.doc_string);
    ASSERT_EQ(a.metadata_props.size(), b.metadata_props.size());
    for (size_t i = 0; i < a.metadata_props.size(); ++i) {
        EXPECT_EQ(a.metadata_props[i].key, b.metadata_props[i].key);
        EXPECT_EQ(a.metadata_props[i].value, b.metadata_props[i].value);
    }
    const Graph &g = a.graph, &h = b.graph;
    EXPECT_EQ(g.name, h.name);
    EXPECT_EQ(g.sparse_initializer_count, h.sparse_initializer_count);
    ASSERT_EQ(g.node.size(), h.node.size());
    for (size_t i = 0; i < g.node.size(); ++i) {
        const Node &n = g.node[i], &o = h.node[i];
        EXPECT_EQ(n.input, o.input);
        EXPECT_EQ(n.output, o.output);
        EXPECT_EQ(n.name, o.name);
        EXPECT_EQ(n.op_type, o.op_type);
        EXPECT_EQ(n.domain, o.domain);
        ASSERT_EQ(n.attribute.size(), o.attribute.size()) << n.name;
        for (size_t j = 0; j < n.attribute.size(); ++j) {
            const Attribute &x = n.attribute[j], &y = o.attribute[j];
            EXPECT_EQ(x.name, y.name);
            EXPECT_EQ(x.type, y.type) << x.name;
            EXPECT_TRUE(same_bits(std::vector<float>{x.f}, std::vector<float>{y.f})) << x.name;
            EXPECT_EQ(x.i, y.i) << x.name;
            EXPECT_EQ(x.s, y.s) << x.name;
            EXPECT_TRUE(same_bits(x.floats, y.floats)) << x.name;
            EXPECT_EQ(x.ints, y.ints) << x.name;
            EXPECT_EQ(x.strings, y.strings) << x.name;
            EXPECT_EQ(x.has_graph, y.has_graph) << x.name;
            ASSERT_EQ(x.t.size(), y.t.size()) << x.name;
            for (size_t k = 0; k < x.t.size(); ++k) expect_same(x.t[k], y.t[k]);
        }
    }
    ASSERT_EQ(g.initializer.size(), h.initializer.size());
    for (size_t i = 0; i < g.initializer.size(); ++i) expect_same(g.initializer[i], h.initializer[i]);
    for (auto lists : {std::make_pair(&g.input, &h.input), std::make_pair(&g.output, &h.output),
                       std::make_pair(&g.value_info, &h.value_info)}) {
        ASSERT_EQ(lists.first->size(), lists.second->size());
        for (size_t i = 0; i < lists.first->size(); ++i) expect_same((*lists.first)[i], (*lists.second)[i]);
    }
}

const Tensor &initializer(const Model &m, const char *name) {
    for (const Tensor &t : m.graph.initializer)
        if (t.name == name) return t;
    ADD_FAILURE() << "no initializer " << name;
    static const Tensor none;
    return none;
}

// ---- Golden bytes -------------------------------------------------------

TEST(OnnxWire, WritesTheBytesOfTheWireFormat) {
    const std::string written = write_model(tiny_model());
    EXPECT_EQ(bytes_of(written), kTiny);
}

TEST(OnnxWire, ReadsTheHandWrittenBytes) {
    Model want = tiny_model();
    want.graph.initializer[0].raw_data = le_floats({1.0f, -2.0f});
    want.graph.initializer[0].float_data.clear();
    expect_same(read(kTiny), want);
}

// onnx's writer (proto2: dims unpacked, domain "" written) differs in bytes;
// read and written again it gives the bytes above.
TEST(OnnxWire, OnnxsOwnTinyFileWritesBackToTheHandWrittenBytes) {
    const Bytes file = wire_file("tiny.onnx");
    ASSERT_FALSE(file.empty());
    EXPECT_NE(file, kTiny);
    EXPECT_EQ(bytes_of(write_model(read(file))), kTiny);
}

// ---- onnx.helper's files ------------------------------------------------

TEST(OnnxWire, ReadsEveryInitializerTypeOnnxWrites) {
    const Model m = read(wire_file("values.onnx"));
    EXPECT_EQ(m.ir_version, 7);
    EXPECT_EQ(m.opset(), 13);
    EXPECT_EQ(m.producer_name, "snn wire goldens");
    EXPECT_EQ(m.producer_version, "1.0");
    EXPECT_EQ(m.doc_string, "every initializer type");
    EXPECT_EQ(m.graph.name, "values");
    ASSERT_EQ(m.graph.initializer.size(), 16u);

    const Tensor &scalar_f = initializer(m, "scalar_f");
    EXPECT_TRUE(scalar_f.dims.empty());
    EXPECT_EQ(scalar_f.element_count(), 1);
    EXPECT_EQ(scalar_f.float_data, std::vector<float>{3.5f});
    EXPECT_EQ(scalar_f.to_floats(), std::vector<float>{3.5f});
    const Tensor &scalar_i64 = initializer(m, "scalar_i64");
    EXPECT_TRUE(scalar_i64.dims.empty());
    EXPECT_EQ(scalar_i64.to_int64s(), std::vector<int64_t>{-7});
    EXPECT_EQ(initializer(m, "scalar_raw").raw_data, le_floats({-0.75f}));
    EXPECT_EQ(initializer(m, "scalar_raw").to_floats(), std::vector<float>{-0.75f});

    const Tensor &f_raw = initializer(m, "f_raw");
    EXPECT_EQ(f_raw.dims, (std::vector<int64_t>{2, 3}));
    EXPECT_TRUE(f_raw.float_data.empty());
    EXPECT_EQ(f_raw.to_floats(), (std::vector<float>{0, 1, 2, 3, 4, -5}));
    EXPECT_EQ(f_raw.to_int64s(), (std::vector<int64_t>{0, 1, 2, 3, 4, -5}));
    const Tensor &f_data = initializer(m, "f_data");
    EXPECT_TRUE(f_data.raw_data.empty());
    EXPECT_EQ(f_data.to_floats(), (std::vector<float>{0.5f, -1.25f, 1e30f}));
    try {
        f_data.to_int64s();
        ADD_FAILURE() << "0.5 read as an integer";
    } catch (const snn::Error &e) {
        EXPECT_EQ(e.status(), SNN_ERR_FILE_FORMAT);
        EXPECT_NE(std::string(e.what()).find("'f_data'"), std::string::npos) << e.what();
    }

    EXPECT_EQ(initializer(m, "i32").int32_data, (std::vector<int32_t>{0, -1, 2147483647, -2147483647 - 1}));
    EXPECT_EQ(initializer(m, "i32").to_int64s(), (std::vector<int64_t>{0, -1, 2147483647, -2147483648LL}));
    EXPECT_EQ(initializer(m, "i64").to_int64s(), (std::vector<int64_t>{-1, 1LL << 40, INT64_MIN}));
    EXPECT_EQ(initializer(m, "i64").to_floats(), (std::vector<float>{-1.0f, 0x1p40f, -0x1p63f}));
    EXPECT_EQ(initializer(m, "i64_raw").to_int64s(), (std::vector<int64_t>{1LL << 62, -5}));
    EXPECT_EQ(initializer(m, "i8").to_int64s(), (std::vector<int64_t>{-128, 0, 127}));
    EXPECT_EQ(initializer(m, "u8_raw").to_int64s(), (std::vector<int64_t>{0, 128, 255}));
    EXPECT_EQ(initializer(m, "bool").to_floats(), (std::vector<float>{1.0f, 0.0f}));
    EXPECT_EQ(initializer(m, "f16").int32_data, (std::vector<int32_t>{0x3C00, 0xC100, 0x7BFF, 0x0001}));
    EXPECT_EQ(initializer(m, "f16").to_floats(), (std::vector<float>{1.0f, -2.5f, 65504.0f, 0x1p-24f}));
    EXPECT_EQ(initializer(m, "f16_raw").to_floats(), (std::vector<float>{0.5f, -65504.0f}));
    EXPECT_EQ(initializer(m, "bf16").to_floats(), (std::vector<float>{1.5f, -3.0f}));
    EXPECT_EQ(initializer(m, "f64").double_data, (std::vector<double>{0.1, -1e300}));
    EXPECT_EQ(initializer(m, "f64").to_floats(), (std::vector<float>{0.1f, -INFINITY}));
    const Tensor &empty = initializer(m, "empty");
    EXPECT_EQ(empty.dims, (std::vector<int64_t>{2, 0}));
    EXPECT_EQ(empty.element_count(), 0);
    EXPECT_TRUE(empty.to_floats().empty());

    ASSERT_EQ(m.graph.input.size(), 1u);
    const ValueInfo &x = m.graph.input[0];
    EXPECT_EQ(x.name, "x");
    EXPECT_EQ(x.elem_type, kFloat);
    ASSERT_TRUE(x.has_shape);
    ASSERT_EQ(x.shape.size(), 3u);
    EXPECT_EQ(x.shape[0].value, -1);
    EXPECT_EQ(x.shape[0].param, "batch");
    EXPECT_EQ(x.shape[1].value, 3);
    EXPECT_EQ(x.shape[2].value, -1);
    EXPECT_EQ(x.shape[2].param, "");
    ASSERT_EQ(m.graph.output.size(), 1u);
    EXPECT_EQ(m.graph.output[0].elem_type, kInt64);
    EXPECT_TRUE(m.graph.output[0].has_shape);  // rank 0: a shape without dims
    EXPECT_TRUE(m.graph.output[0].shape.empty());
    ASSERT_EQ(m.graph.value_info.size(), 1u);
    EXPECT_EQ(m.graph.value_info[0].elem_type, kDouble);
    EXPECT_EQ(m.graph.value_info[0].shape[0].value, 7);
}

TEST(OnnxWire, ReadsAnAttributeOfEveryType) {
    const Model m = read(wire_file("attributes.onnx"));
    EXPECT_EQ(m.opset(), 17);
    ASSERT_EQ(m.opset_import.size(), 2u);
    EXPECT_EQ(m.opset_import[1].domain, "snn.test");
    EXPECT_EQ(m.opset_import[1].version, 1);
    ASSERT_EQ(m.graph.node.size(), 2u);
    const Node &n = m.graph.node[0];
    EXPECT_EQ(n.name, "all");
    EXPECT_EQ(n.op_type, "Custom");
    EXPECT_EQ(n.domain, "snn.test");
    EXPECT_EQ(n.input, (std::vector<std::string>{"x", ""}));
    ASSERT_EQ(n.attribute.size(), 10u);
    EXPECT_EQ(n.attr("nothing"), nullptr);
    ASSERT_NE(n.attr("f"), nullptr);
    EXPECT_EQ(n.attr("f")->type, kAttrFloat);
    EXPECT_EQ(n.attr("f")->f, 0.25f);
    EXPECT_EQ(n.attr("i")->type, kAttrInt);
    EXPECT_EQ(n.attr("i")->i, -3);
    EXPECT_EQ(n.attr("s")->type, kAttrString);
    EXPECT_EQ(n.attr("s")->s, "hello");
    const Attribute *t = n.attr("t");
    EXPECT_EQ(t->type, kAttrTensor);
    ASSERT_EQ(t->t.size(), 1u);
    EXPECT_EQ(t->t[0].name, "t1");
    EXPECT_EQ(t->t[0].to_floats(), (std::vector<float>{1.0f, 2.0f}));
    EXPECT_EQ(n.attr("g")->type, kAttrGraph);
    EXPECT_TRUE(n.attr("g")->has_graph);
    EXPECT_EQ(n.attr("floats")->type, kAttrFloats);
    EXPECT_EQ(n.attr("floats")->floats, (std::vector<float>{1.0f, -0.5f}));
    EXPECT_EQ(n.attr("ints")->type, kAttrInts);
    EXPECT_EQ(n.attr("ints")->ints, (std::vector<int64_t>{-1, 0, 1LL << 40}));
    EXPECT_EQ(n.attr("strings")->type, kAttrStrings);
    EXPECT_EQ(n.attr("strings")->strings, (std::vector<std::string>{"a", "", "c"}));
    const Attribute *ts = n.attr("tensors");
    EXPECT_EQ(ts->type, kAttrTensors);
    ASSERT_EQ(ts->t.size(), 2u);
    EXPECT_EQ(ts->t[1].name, "t2");
    EXPECT_EQ(ts->t[1].to_int64s(), std::vector<int64_t>{9});
    EXPECT_EQ(n.attr("graphs")->type, kAttrGraphs);
    EXPECT_TRUE(n.attr("graphs")->has_graph);
    for (const Attribute &a : n.attribute)
        if (a.name != "g" && a.name != "graphs") {
            EXPECT_FALSE(a.has_graph) << a.name;
        }

    const Node &branch = m.graph.node[1];
    EXPECT_EQ(branch.op_type, "If");
    ASSERT_EQ(branch.attribute.size(), 2u);
    EXPECT_TRUE(branch.attr("then_branch")->has_graph);
    EXPECT_TRUE(branch.attr("else_branch")->has_graph);
    EXPECT_EQ(m.graph.input[1].elem_type, kBool);

    // What snn keeps of it is written without the graphs.
    try {
        write_model(m);
        ADD_FAILURE() << "a graph attribute was written";
    } catch (const snn::Error &e) {
        EXPECT_EQ(e.status(), SNN_ERR_UNSUPPORTED);
        EXPECT_NE(std::string(e.what()).find("'g'"), std::string::npos) << e.what();
    }
}

TEST(OnnxWire, NotesExternalDataAndSparseInitializers) {
    const Model m = read(wire_file("external.onnx"));
    EXPECT_EQ(m.graph.sparse_initializer_count, 1);
    EXPECT_TRUE(initializer(m, "a").external);  // data_location and entries
    EXPECT_TRUE(initializer(m, "b").external);  // entries only
    EXPECT_TRUE(initializer(m, "c").external);  // data_location only
    EXPECT_FALSE(initializer(m, "d").external);
    EXPECT_EQ(initializer(m, "d").to_floats(), std::vector<float>{2.0f});
    try {
        initializer(m, "a").to_floats();
        ADD_FAILURE() << "external data read";
    } catch (const snn::Error &e) {
        EXPECT_EQ(e.status(), SNN_ERR_UNSUPPORTED);
        EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
    }
}

TEST(OnnxWire, ReadsPackedAndUnpackedRepeatedNumbersAndSkipsUnknownFields) {
    const Model m = read(wire_file("packed.onnx"));
    EXPECT_EQ(m.ir_version, 8);
    EXPECT_EQ(m.opset(), 17);
    EXPECT_EQ(initializer(m, "i64").dims, std::vector<int64_t>{3});
    EXPECT_EQ(initializer(m, "i64").int64_data, (std::vector<int64_t>{-2, 0, 1LL << 50}));
    EXPECT_EQ(initializer(m, "i32").int32_data, (std::vector<int32_t>{-9, 300}));
    EXPECT_EQ(initializer(m, "f").dims, (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(initializer(m, "f").float_data, (std::vector<float>{1.5f, -2.0f}));
    EXPECT_EQ(initializer(m, "d").to_floats(), std::vector<float>{0.125f});
    const Node &n = m.graph.node.at(0);
    EXPECT_EQ(n.op_type, "Transpose");
    EXPECT_EQ(n.attr("perm")->ints, (std::vector<int64_t>{0, 2, -1}));
    EXPECT_EQ(n.attr("scales")->floats, (std::vector<float>{0.5f, 4.0f}));
}

// A packed run and unpacked elements of one field add up, in order.
TEST(OnnxWire, PackedRunsAndSingleElementsOfOneFieldAppend) {
    const Bytes attr = {0x0A, 0x01, 'p',              // name "p"
                        0x40, 0x05,                   // ints: 5 (unpacked)
                        0x42, 0x03, 0x01, 0x96, 0x01,  // ints: packed [1, 150]
                        0x40, 0x7F,                   // ints: 127
                        0xA0, 0x01, 0x07};            // type (20) INTS
    Bytes node = {0x2A, uint8_t(attr.size())};
    node.insert(node.end(), attr.begin(), attr.end());
    Bytes file = {0x3A, uint8_t(node.size() + 2), 0x0A, uint8_t(node.size())};
    file.insert(file.end(), node.begin(), node.end());
    const Model m = read(file);
    const Attribute *p = m.graph.node.at(0).attr("p");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->ints, (std::vector<int64_t>{5, 1, 150, 127}));
    EXPECT_EQ(p->type, kAttrInts);
}

// ---- Rank 0, counts, conversions ----------------------------------------

TEST(OnnxWire, RankZeroTensorsRoundTrip) {
    Model m;
    m.ir_version = 8;
    Tensor s = tensor("s", kFloat, {});
    s.float_data = {-0.0f};
    Tensor i = tensor("i", kInt64, {});
    i.int64_data = {INT64_MIN};
    m.graph.initializer = {s, i};
    const Model back = read(write_model(m));
    ASSERT_EQ(back.graph.initializer.size(), 2u);
    EXPECT_TRUE(back.graph.initializer[0].dims.empty());
    EXPECT_EQ(back.graph.initializer[0].element_count(), 1);
    EXPECT_EQ(back.graph.initializer[0].raw_data, le_floats({-0.0f}));
    EXPECT_TRUE(std::signbit(back.graph.initializer[0].to_floats().at(0)));
    EXPECT_EQ(back.graph.initializer[1].to_int64s(), std::vector<int64_t>{INT64_MIN});
}

TEST(OnnxWire, ElementCountOverflowAndNegativeDims) {
    EXPECT_EQ(tensor("", kFloat, {}).element_count(), 1);
    EXPECT_EQ(tensor("", kFloat, {3, 4, 5}).element_count(), 60);
    EXPECT_EQ(tensor("", kFloat, {-1, 4}).element_count(), -1);
    EXPECT_EQ(tensor("", kFloat, {1LL << 32, 1LL << 31}).element_count(), -1);
    EXPECT_EQ(tensor("", kFloat, {1LL << 32, (1LL << 31) - 1}).element_count(), ((1LL << 31) - 1) << 32);
    EXPECT_EQ(tensor("", kFloat, {1LL << 40, 1LL << 40, 0}).element_count(), 0);
    EXPECT_EQ(tensor("", kFloat, {INT64_MAX, 1}).element_count(), INT64_MAX);
}

snn_status convert_status(const Tensor &t, bool floats, std::string *message = nullptr) {
    try {
        if (floats)
            t.to_floats();
        else
            t.to_int64s();
    } catch (const snn::Error &e) {
        if (message) *message = e.what();
        return e.status();
    }
    return SNN_OK;
}

TEST(OnnxWire, ConversionsRefuseCountsThatDifferAndUnknownTypes) {
    Tensor t = tensor("w", kFloat, {1000000000});  // a billion declared, one held
    t.raw_data = le_floats({1.0f});
    std::string message;
    EXPECT_EQ(convert_status(t, true, &message), SNN_ERR_FILE_FORMAT);
    EXPECT_EQ(message, "ONNX: tensor 'w' holds 1 FLOAT values where its dims declare 1000000000");
    t.dims = {1LL << 62, 8};
    EXPECT_EQ(convert_status(t, true, &message), SNN_ERR_FILE_FORMAT);
    EXPECT_NE(message.find("overflow"), std::string::npos) << message;
    t.dims = {};
    t.raw_data = "abc";  // not a whole float
    EXPECT_EQ(convert_status(t, true), SNN_ERR_FILE_FORMAT);
    t.raw_data = le_floats({2.5f});
    EXPECT_EQ(t.to_floats(), std::vector<float>{2.5f});
    EXPECT_EQ(convert_status(t, false), SNN_ERR_FILE_FORMAT);  // 2.5 is no integer
    t.data_type = 8;  // STRING
    EXPECT_EQ(convert_status(t, true), SNN_ERR_FILE_FORMAT);
    Tensor none = tensor("n", kInt64, {2});  // no values at all
    EXPECT_EQ(convert_status(none, false), SNN_ERR_FILE_FORMAT);
    Tensor big = tensor("big", kDouble, {2});
    big.double_data = {1e19, 1.0};  // beyond int64
    EXPECT_EQ(convert_status(big, false), SNN_ERR_FILE_FORMAT);
    big.double_data = {NAN, 1.0};
    EXPECT_EQ(convert_status(big, false), SNN_ERR_FILE_FORMAT);
    EXPECT_TRUE(std::isnan(big.to_floats()[0]));
    // Halfway between the largest float and 2^128 rounds to infinity; below it, to the largest float.
    big.double_data = {0x1.ffffffp+127, -std::nextafter(0x1.ffffffp+127, 0.0)};
    EXPECT_EQ(big.to_floats(), (std::vector<float>{INFINITY, -FLT_MAX}));
}

TEST(OnnxWire, OpsetIsTheDefaultDomainsVersion) {
    Model m;
    EXPECT_EQ(m.opset(), 0);
    m.opset_import = {{"com.microsoft", 1}, {"ai.onnx", 13}};
    EXPECT_EQ(m.opset(), 13);
    m.opset_import = {{"com.microsoft", 1}, {"", 17}};
    EXPECT_EQ(m.opset(), 17);
}

// ---- Malformed input ----------------------------------------------------

struct Bad {
    const char *what;
    Bytes bytes;
    const char *message;  // the whole message, or null: only the status is checked
};

TEST(OnnxWire, RefusesMalformedBytesNamingMessageAndField) {
    const Bad cases[] = {
        {"a graph whose node runs past the end",
         {0x3A, 0x04, 0x0A, 0x7F, 0x00, 0x00},
         "ONNX: GraphProto.node: length 127 runs past the end (byte 4 of 6)"},
        {"the graph's length past the file", {0x3A, 0x05, 0x00}, "ONNX: ModelProto.graph: length 5 runs past the end (byte 2 of 3)"},
        {"a truncated varint", {0x08, 0x80}, "ONNX: ModelProto.ir_version: truncated varint (byte 1 of 2)"},
        {"a truncated tag", {0x80}, "ONNX: ModelProto: truncated varint (byte 0 of 1)"},
        {"an eleven-byte varint",
         {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
         "ONNX: ModelProto.ir_version: varint longer than 10 bytes (byte 1)"},
        {"a group start", {0x3B}, "ONNX: ModelProto.graph: groups (wire type 3) are not supported (byte 0)"},
        {"a group end", {0x3C}, "ONNX: ModelProto.graph: groups (wire type 4) are not supported (byte 0)"},
        {"wire type 6", {0x0E}, "ONNX: ModelProto.ir_version: wire type 6 is not valid (byte 0)"},
        {"wire type 7 of an unknown field", {0xFF, 0x01}, "ONNX: ModelProto field 31: wire type 7 is not valid (byte 0)"},
        {"field number 0", {0x00, 0x00}, "ONNX: ModelProto: field number 0 is not valid (byte 0)"},
        {"a truncated fixed32", {0x3A, 0x04, 0x2A, 0x02, 0x25, 0x00},
         "ONNX: TensorProto.float_data: truncated 4-byte value (byte 5 of 6)"},
        {"a string sent as a varint", {0x10, 0x05}, "ONNX: ModelProto.producer_name: wire type 0 where 2 belongs"},
        {"packed floats not a multiple of 4",
         {0x3A, 0x05, 0x2A, 0x03, 0x22, 0x01, 0x00},
         "ONNX: TensorProto.float_data: packed length 1 is not a multiple of 4"},
        {"packed varints cut short", {0x3A, 0x05, 0x2A, 0x03, 0x0A, 0x01, 0x80},
         "ONNX: TensorProto.dims: truncated varint (byte 6 of 7)"},
        {"a negative dim_value",
         {0x3A, 0x15, 0x5A, 0x13, 0x12, 0x11, 0x0A, 0x0F, 0x12, 0x0D, 0x0A, 0x0B, 0x08, 0xFD, 0xFF, 0xFF, 0xFF, 0xFF,
          0xFF, 0xFF, 0xFF, 0xFF, 0x01},
         "ONNX: TensorShapeProto.Dimension.dim_value: negative size -3"},
        {"a packed field claiming a billion elements", {0x3A, 0x08, 0x2A, 0x06, 0x22, 0x80, 0xA8, 0xD6, 0xB9, 0x07},
         "ONNX: TensorProto.float_data: length 2000000000 runs past the end (byte 10 of 10)"},
    };
    for (const Bad &c : cases) {
        std::string message;
        EXPECT_EQ(read_status(c.bytes, &message), SNN_ERR_FILE_FORMAT) << c.what;
        if (c.message) {
            EXPECT_EQ(message, c.message) << c.what;
        }
    }
}

// A length varint of 10 bytes whose value wraps past 2^64 cannot point
// anywhere but past the end.
TEST(OnnxWire, HugeLengthsAreRefusedWithoutReading) {
    const Bytes b = {0x3A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
    EXPECT_EQ(read_status(b), SNN_ERR_FILE_FORMAT);
}

TEST(OnnxWire, InputsAbove2GiBAreUnsupported) {
    // The size is refused before a byte is read: the pages cannot be read.
    const size_t size = (size_t(1) << 31) + 1;
    void *p = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    try {
        read_model(static_cast<const unsigned char *>(p), size);
        ADD_FAILURE() << "accepted";
    } catch (const snn::Error &e) {
        EXPECT_EQ(e.status(), SNN_ERR_UNSUPPORTED);
    }
    munmap(p, size);
    EXPECT_EQ(read(Bytes{}).graph.node.size(), 0u);  // empty: a message with no fields
}

TEST(OnnxWire, UnknownFieldsOfEveryWireTypeAreSkipped) {
    // ir_version 8 between an unknown varint, fixed64, bytes and fixed32.
    const Bytes b = {0xA0, 0x06, 0x01, 0xA9, 0x06, 1, 2, 3, 4, 5, 6, 7, 8, 0x08, 0x08,
                     0xB2, 0x06, 0x02, 0xFF, 0xFF, 0xBD, 0x06, 1, 2, 3, 4};
    EXPECT_EQ(read(b).ir_version, 8);
}

// Every prefix of a valid file is refused as malformed or read: a cut
// between two fields is itself a valid message. What it reads writes and
// reads back to the same bytes.
TEST(OnnxWire, EveryPrefixOfAValidFileIsRefusedOrReadConsistently) {
    for (const char *name : {"tiny.onnx", "values.onnx", "attributes.onnx", "external.onnx", "packed.onnx"}) {
        const Bytes file = wire_file(name);
        ASSERT_FALSE(file.empty()) << name;
        size_t refused = 0;
        for (size_t n = 0; n < file.size(); ++n) {
            const Bytes prefix(file.begin(), file.begin() + long(n));
            Model m;
            try {
                m = read(prefix);
            } catch (const snn::Error &e) {
                EXPECT_EQ(e.status(), SNN_ERR_FILE_FORMAT) << name << " cut at " << n << ": " << e.what();
                ++refused;
                continue;
            }
            bool graphs = false;
            for (const Node &node : m.graph.node)
                for (const Attribute &a : node.attribute) graphs |= a.has_graph || a.type == kAttrGraph;
            if (graphs) continue;
            std::string once;
            try {
                once = write_model(m);
            } catch (const snn::Error &e) {
                EXPECT_NE(e.status(), SNN_ERR_INTERNAL) << e.what();
                continue;
            }
            EXPECT_EQ(write_model(read(once)), once) << name << " cut at " << n;
        }
        EXPECT_GT(refused, file.size() / 2) << name;
    }
}

// ---- Writing --------------------------------------------------------------

TEST(OnnxWire, WriterSetsAttributeTypesAndRefusesWhatItCannotWrite) {
    Model m;
    Node n;
    n.op_type = "X";
    Attribute a;
    a.name = "axis";  // nothing filled: an INT 0
    Attribute b;
    b.name = "perm";
    b.ints = {1, 0};
    Attribute c;
    c.name = "alpha";
    c.f = 0.5f;
    Attribute d;
    d.name = "value";
    d.t = {tensor("v", kInt64, {})};
    d.t[0].int64_data = {3};
    n.attribute = {a, b, c, d};
    m.graph.node = {n};
    const Model back = read(write_model(m));
    const Node &o = back.graph.node.at(0);
    EXPECT_EQ(o.attr("axis")->type, kAttrInt);
    EXPECT_EQ(o.attr("perm")->type, kAttrInts);
    EXPECT_EQ(o.attr("perm")->ints, (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(o.attr("alpha")->type, kAttrFloat);
    EXPECT_EQ(o.attr("alpha")->f, 0.5f);
    EXPECT_EQ(o.attr("value")->type, kAttrTensor);
    EXPECT_EQ(o.attr("value")->t.at(0).to_int64s(), std::vector<int64_t>{3});

    Model two = m;
    two.graph.node[0].attribute[3].type = kAttrTensor;
    two.graph.node[0].attribute[3].t.push_back(tensor("w", kFloat, {}));
    try {
        write_model(two);
        ADD_FAILURE() << "a TENSOR attribute of two tensors was written";
    } catch (const snn::Error &e) {
        EXPECT_EQ(e.status(), SNN_ERR_INVALID_ARGUMENT);
    }
}

// ---- Write then read, over random models --------------------------------

struct Random {
    std::mt19937_64 rng{20240611};
    int64_t below(int64_t n) { return int64_t(rng() % uint64_t(n)); }
    bool coin() { return rng() & 1; }
    std::string text() {
        std::string s(size_t(below(4) == 0 ? 0 : below(12)), ' ');
        for (char &c : s) c = char(below(256));  // any bytes, NUL included
        return s;
    }
    int64_t integer() {
        switch (below(4)) {
            case 0: return below(200) - 100;
            case 1: return int64_t(rng());
            case 2: return INT64_MIN;
            default: return below(1LL << 40);
        }
    }
    float real() {
        const uint32_t bits = uint32_t(rng());
        float f;
        memcpy(&f, &bits, 4);
        return below(3) == 0 ? float(below(100)) / 4.0f : f;  // NaNs and infinities too
    }

    Tensor tensor() {
        Tensor t;
        t.name = text();
        const int rank = int(below(4));
        int64_t n = 1;
        for (int i = 0; i < rank; ++i) {
            t.dims.push_back(below(4));
            n *= t.dims.back();
        }
        switch (below(5)) {
            case 0:
                t.data_type = kFloat;  // written as raw_data
                for (int64_t i = 0; i < n; ++i) {
                    const float f = real();
                    t.raw_data += std::string(reinterpret_cast<const char *>(&f), 4);
                }
                break;
            case 1:
                t.data_type = kInt64;
                for (int64_t i = 0; i < n; ++i) t.int64_data.push_back(integer());
                break;
            case 2:
                t.data_type = kInt32;
                for (int64_t i = 0; i < n; ++i) t.int32_data.push_back(int32_t(uint32_t(rng())));
                break;
            case 3:
                t.data_type = kDouble;
                for (int64_t i = 0; i < n; ++i) t.double_data.push_back(double(real()) * 1e100);
                break;
            default:
                t.data_type = kUint8;
                t.raw_data = std::string(size_t(n), 'x');
                t.external = coin();
        }
        return t;
    }

    Attribute attribute() {
        Attribute a;
        a.name = text();
        a.type = int32_t(1 + below(9));
        if (a.type == kAttrGraph) a.type = kAttrFloat;
        switch (a.type) {
            case kAttrFloat: a.f = real(); break;
            case kAttrInt: a.i = integer(); break;
            case kAttrString: a.s = text(); break;
            case kAttrTensor: a.t = {tensor()}; break;
            case kAttrFloats: for (int64_t i = below(5); i > 0; --i) a.floats.push_back(real()); break;
            case kAttrInts: for (int64_t i = below(5); i > 0; --i) a.ints.push_back(integer()); break;
            case kAttrStrings: for (int64_t i = below(4); i > 0; --i) a.strings.push_back(text()); break;
            case kAttrTensors: for (int64_t i = below(3); i > 0; --i) a.t.push_back(tensor()); break;
        }
        return a;
    }

    ValueInfo value_info() {
        ValueInfo v;
        v.name = text();
        v.elem_type = int32_t(below(17));
        v.has_shape = coin();
        if (v.has_shape)
            for (int64_t i = below(5); i > 0; --i) {
                Dim d;
                const int64_t kind = below(3);
                if (kind == 0) d.value = below(1LL << 40);
                if (kind == 1) d.param = text().empty() ? "batch" : "n";
                v.shape.push_back(d);
            }
        return v;
    }

    Model model() {
        Model m;
        m.ir_version = below(10);
        for (int64_t i = below(3); i > 0; --i) m.opset_import.push_back({coin() ? "" : text(), below(30)});
        m.producer_name = text();
        m.producer_version = text();
        m.doc_string = text();
        m.graph.name = text();
        for (int64_t i = below(4); i > 0; --i) {
            Node n;
            for (int64_t j = below(4); j > 0; --j) n.input.push_back(text());
            for (int64_t j = below(3); j > 0; --j) n.output.push_back(text());
            n.name = text();
            n.op_type = text();
            n.domain = coin() ? "" : text();
            for (int64_t j = below(4); j > 0; --j) n.attribute.push_back(attribute());
            m.graph.node.push_back(n);
        }
        for (int64_t i = below(4); i > 0; --i) m.graph.initializer.push_back(tensor());
        for (int64_t i = below(3); i > 0; --i) m.graph.input.push_back(value_info());
        for (int64_t i = below(3); i > 0; --i) m.graph.output.push_back(value_info());
        for (int64_t i = below(3); i > 0; --i) m.graph.value_info.push_back(value_info());
        for (int64_t i = below(3); i > 0; --i) m.metadata_props.push_back({text(), text()});
        return m;
    }
};

TEST(OnnxWire, WriteThenReadGivesRandomModelsBack) {
    Random r;
    for (int i = 0; i < 300; ++i) {
        const Model m = r.model();
        const std::string bytes = write_model(m);
        const Model back = read(bytes);
        SCOPED_TRACE("model " + std::to_string(i));
        expect_same(back, m);
        EXPECT_EQ(write_model(back), bytes);
        if (HasFailure()) break;
    }
}

// metadata_props as onnx writes them (StringStringEntryProto: key 1, value
// 2), and the last of a key twice wins, as for a map.
TEST(OnnxWire, MetadataPropsAreReadAndTheLastOfAKeyWins) {
    Model m;
    m.metadata_props = {{"snn.spec", "input 3; dense 2"}, {"other", "x"}, {"snn.spec", "input 4; dense 1"}};
    const std::string bytes = write_model(m);
    // Field 14, length-delimited: tag 0x72, then the entry's key (0x0a) and value (0x12).
    const std::string first = std::string("\x72\x1c\x0a\x08snn.spec\x12\x10input 3; dense 2", 30);
    EXPECT_NE(bytes.find(first), std::string::npos);
    const Model back = read(bytes);
    ASSERT_EQ(back.metadata_props.size(), 3u);
    ASSERT_NE(back.metadata("snn.spec"), nullptr);
    EXPECT_EQ(*back.metadata("snn.spec"), "input 4; dense 1");
    EXPECT_EQ(back.metadata("missing"), nullptr);
}

// float_data of a FLOAT tensor goes out as raw_data, bit for bit.
TEST(OnnxWire, FloatDataIsWrittenAsRawData) {
    Random r;
    Model m;
    Tensor t = tensor("w", kFloat, {64});
    for (int i = 0; i < 64; ++i) t.float_data.push_back(r.real());
    m.graph.initializer = {t};
    const Model read_back = read(write_model(m));
    const Tensor &back = read_back.graph.initializer.at(0);
    EXPECT_TRUE(back.float_data.empty());
    ASSERT_EQ(back.raw_data.size(), 256u);
    EXPECT_EQ(memcmp(back.raw_data.data(), t.float_data.data(), 256), 0);  // the host is little-endian
    EXPECT_TRUE(same_bits(back.to_floats(), t.float_data));
}

}  // namespace
