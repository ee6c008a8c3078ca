// Writes with write_model (lib/onnx/proto.h) a small valid ONNX model to the
// path given, for onnx's checker (check_written.py): y = Softmax(Reshape(
// Relu(Gemm(x, W, B)), shape)) over x [batch, 4], with attributes of the
// types FLOAT, INT, INTS and TENSOR, and initializers in raw_data and in
// int64_data.
#include <stdio.h>

#include <string>

#include "common/error.h"
#include "onnx/proto.h"

using namespace snn::onnx;

namespace {

Node node(const char *op, std::vector<std::string> in, std::vector<std::string> out, const char *name) {
    Node n;
    n.op_type = op;
    n.input = std::move(in);
    n.output = std::move(out);
    n.name = name;
    return n;
}

ValueInfo value(const char *name, int32_t type, std::vector<Dim> shape) {
    ValueInfo v;
    v.name = name;
    v.elem_type = type;
    v.has_shape = true;
    v.shape = std::move(shape);
    return v;
}

Dim known(int64_t n) {
    Dim d;
    d.value = n;
    return d;
}

Dim symbol(const char *s) {
    Dim d;
    d.param = s;
    return d;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: onnx_write_sample OUT.onnx\n");
        return 2;
    }
    Model m;
    m.ir_version = 8;
    m.opset_import.push_back({"", 17});
    m.producer_name = "snn";
    m.producer_version = "test";
    m.doc_string = "write_model's sample";
    Graph &g = m.graph;
    g.name = "sample";

    Tensor w;
    w.name = "W";
    w.data_type = kFloat;
    w.dims = {3, 4};
    for (int i = 0; i < 12; ++i) w.float_data.push_back(0.25f * float(i - 6));
    Tensor b;
    b.name = "B";
    b.data_type = kFloat;
    b.dims = {3};
    b.float_data = {0.5f, -0.5f, 0.0f};
    g.initializer = {w, b};

    Node gemm = node("Gemm", {"x", "W", "B"}, {"h"}, "gemm");
    Attribute trans_b;
    trans_b.name = "transB";
    trans_b.type = kAttrInt;
    trans_b.i = 1;
    Attribute alpha;
    alpha.name = "alpha";
    alpha.type = kAttrFloat;
    alpha.f = 1.0f;
    gemm.attribute = {alpha, trans_b};

    Node shape = node("Constant", {}, {"shape"}, "shape");
    Attribute value_attr;
    value_attr.name = "value";
    value_attr.type = kAttrTensor;
    Tensor s;
    s.data_type = kInt64;
    s.dims = {3};
    s.int64_data = {-1, 3, 1};
    value_attr.t = {s};
    shape.attribute = {value_attr};

    Node transpose = node("Transpose", {"r3"}, {"t"}, "transpose");
    Attribute perm;
    perm.name = "perm";
    perm.type = kAttrInts;
    perm.ints = {0, 2, 1};
    transpose.attribute = {perm};

    Node softmax = node("Softmax", {"t"}, {"y"}, "softmax");
    Attribute axis;
    axis.name = "axis";
    axis.type = kAttrInt;
    axis.i = -1;
    softmax.attribute = {axis};

    g.node = {gemm, node("Relu", {"h"}, {"r"}, "relu"), shape, node("Reshape", {"r", "shape"}, {"r3"}, "reshape"),
              transpose, softmax};
    g.input = {value("x", kFloat, {symbol("batch"), known(4)})};
    g.output = {value("y", kFloat, {symbol("batch"), known(1), known(3)})};
    g.value_info = {value("h", kFloat, {symbol("batch"), known(3)})};

    try {
        const std::string bytes = write_model(m);
        FILE *f = fopen(argv[1], "wb");
        if (!f || fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", argv[1]);
            return 1;
        }
    } catch (const snn::Error &e) {
        fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
