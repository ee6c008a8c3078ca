// The C entry points of ONNX export and import: arguments, option structs,
// buffers and files, whatever lib/onnx does with the bytes.
#include <gtest/gtest.h>
#include <snn.h>
#include <stdio.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

struct Model {
    snn_model *m = nullptr;
    explicit Model(const char *spec) { EXPECT_EQ(snn_model_create(spec, &m), SNN_OK) << snn_last_error(); }
    Model() = default;
    ~Model() { snn_model_destroy(m); }
};

const char *kSpec = "input 5; dense 7 tanh; dense 3";

std::vector<unsigned char> exported(const snn_model *m, const snn_onnx_export_options *o = nullptr) {
    size_t size = 0;
    EXPECT_EQ(snn_model_export_onnx_to_buffer(m, o, nullptr, 0, &size), SNN_OK) << snn_last_error();
    std::vector<unsigned char> bytes(size);
    size_t written = 0;
    EXPECT_EQ(snn_model_export_onnx_to_buffer(m, o, bytes.data(), bytes.size(), &written), SNN_OK)
        << snn_last_error();
    EXPECT_EQ(written, size);
    return bytes;
}

std::string temp_path(const char *name) {
    const char *dir = getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/snn-onnx-api-" + std::to_string(getpid()) + "-" + name;
}

TEST(OnnxApi, TheBuildSaysItHasOnnx) {
    EXPECT_EQ(snn_has_feature("onnx"), 1) << snn_build_features();
}

TEST(OnnxApi, NullArgumentsAreNamed) {
    Model model(kSpec);
    size_t size = 0;
    snn_model *out = nullptr;
    EXPECT_EQ(snn_model_export_onnx(nullptr, nullptr, "x.onnx"), SNN_ERR_NULL_ARGUMENT);
    EXPECT_NE(std::strstr(snn_last_error(), "model is NULL"), nullptr) << snn_last_error();
    EXPECT_EQ(snn_model_export_onnx(model.m, nullptr, nullptr), SNN_ERR_NULL_ARGUMENT);
    EXPECT_NE(std::strstr(snn_last_error(), "path is NULL"), nullptr) << snn_last_error();
    EXPECT_EQ(snn_model_export_onnx_to_buffer(model.m, nullptr, nullptr, 0, nullptr), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_model_export_onnx_to_buffer(model.m, nullptr, nullptr, 10, &size), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_model_import_onnx(nullptr, nullptr, &out), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_model_import_onnx("x.onnx", nullptr, nullptr), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(snn_model_import_onnx_from_buffer(nullptr, 3, nullptr, &out), SNN_ERR_NULL_ARGUMENT);
    EXPECT_EQ(out, nullptr);
}

TEST(OnnxApi, OptionStructsAreCheckedBySize) {
    Model model(kSpec);
    size_t size = 0;
    snn_onnx_export_options eo{sizeof eo + 8, 0};
    EXPECT_EQ(snn_model_export_onnx_to_buffer(model.m, &eo, nullptr, 0, &size), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(snn_last_error(), "sizeof(snn_onnx_export_options)"), nullptr) << snn_last_error();
    eo = {0, 0};
    EXPECT_EQ(snn_model_export_onnx_to_buffer(model.m, &eo, nullptr, 0, &size), SNN_ERR_INVALID_ARGUMENT);
    eo = {sizeof eo, 2};
    EXPECT_EQ(snn_model_export_onnx_to_buffer(model.m, &eo, nullptr, 0, &size), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(snn_last_error(), "lengths is 2"), nullptr) << snn_last_error();
    // A caller built against an older, shorter struct: only its fields are read.
    eo = {sizeof(size_t), 7};
    EXPECT_EQ(snn_model_export_onnx_to_buffer(model.m, &eo, nullptr, 0, &size), SNN_OK) << snn_last_error();
    EXPECT_GT(size, 0u);

    const std::vector<unsigned char> bytes = exported(model.m);
    snn_model *out = nullptr;
    snn_onnx_import_options io{sizeof io, -1, 0};
    EXPECT_EQ(snn_model_import_onnx_from_buffer(bytes.data(), bytes.size(), &io, &out), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(snn_last_error(), "sequence_length is negative"), nullptr) << snn_last_error();
    io = {sizeof io, 0, -2};
    EXPECT_EQ(snn_model_import_onnx_from_buffer(bytes.data(), bytes.size(), &io, &out), SNN_ERR_INVALID_ARGUMENT);
    io = {sizeof io + 1, 0, 0};
    EXPECT_EQ(snn_model_import_onnx_from_buffer(bytes.data(), bytes.size(), &io, &out), SNN_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(out, nullptr);
    io = {sizeof io, 0, 0};
    ASSERT_EQ(snn_model_import_onnx_from_buffer(bytes.data(), bytes.size(), &io, &out), SNN_OK) << snn_last_error();
    snn_model_destroy(out);
}

TEST(OnnxApi, ASmallBufferIsACountErrorAndNothingIsWritten) {
    Model model(kSpec);
    const std::vector<unsigned char> bytes = exported(model.m);
    ASSERT_GT(bytes.size(), 16u);
    std::vector<unsigned char> buf(bytes.size() - 1, 0xAB);
    size_t size = 0;
    EXPECT_EQ(snn_model_export_onnx_to_buffer(model.m, nullptr, buf.data(), buf.size(), &size), SNN_ERR_COUNT);
    for (unsigned char c : buf) ASSERT_EQ(c, 0xAB);
}

TEST(OnnxApi, TheFileAndTheBufferHoldTheSameBytesAndTheFileImports) {
    Model model(kSpec);
    ASSERT_EQ(snn_model_init(model.m, 9), SNN_OK);
    const std::vector<unsigned char> bytes = exported(model.m);
    const std::string path = temp_path("model.onnx");
    ASSERT_EQ(snn_model_export_onnx(model.m, nullptr, path.c_str()), SNN_OK) << snn_last_error();
    FILE *f = fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    std::vector<unsigned char> file(bytes.size() + 1);
    const size_t got = fread(file.data(), 1, file.size(), f);
    fclose(f);
    file.resize(got);
    EXPECT_EQ(file, bytes);
    snn_model *out = nullptr;
    ASSERT_EQ(snn_model_import_onnx(path.c_str(), nullptr, &out), SNN_OK) << snn_last_error();
    size_t count = 0;
    ASSERT_EQ(snn_parameter_count(out, &count), SNN_OK);
    std::vector<float> a(count), b(count);
    ASSERT_EQ(snn_get_parameters(model.m, a.data(), count), SNN_OK);
    ASSERT_EQ(snn_get_parameters(out, b.data(), count), SNN_OK);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), count * sizeof(float)), 0);
    snn_model_destroy(out);
    unlink(path.c_str());
}

TEST(OnnxApi, FilesThatAreNotThereOrNotRegularAreIoErrorsNamingThePath) {
    snn_model *out = nullptr;
    const std::string missing = temp_path("missing.onnx");
    EXPECT_EQ(snn_model_import_onnx(missing.c_str(), nullptr, &out), SNN_ERR_IO);
    EXPECT_NE(std::strstr(snn_last_error(), missing.c_str()), nullptr) << snn_last_error();
    EXPECT_EQ(snn_model_import_onnx(".", nullptr, &out), SNN_ERR_IO) << snn_last_error();
    EXPECT_EQ(out, nullptr);
    Model model(kSpec);
    const std::string dir_path = temp_path("no-such-dir") + "/model.onnx";
    EXPECT_EQ(snn_model_export_onnx(model.m, nullptr, dir_path.c_str()), SNN_ERR_IO);
}

TEST(OnnxApi, EmptyAndGarbageBytesAreFileFormatErrors) {
    snn_model *out = nullptr;
    EXPECT_EQ(snn_model_import_onnx_from_buffer(nullptr, 0, nullptr, &out), SNN_ERR_FILE_FORMAT) << snn_last_error();
    const unsigned char garbage[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    EXPECT_EQ(snn_model_import_onnx_from_buffer(garbage, sizeof garbage, nullptr, &out), SNN_ERR_FILE_FORMAT)
        << snn_last_error();
    // A safetensors model file is not an ONNX file.
    Model model(kSpec);
    size_t size = 0;
    ASSERT_EQ(snn_model_save_to_buffer(model.m, nullptr, 0, &size), SNN_OK);
    std::vector<unsigned char> st(size);
    ASSERT_EQ(snn_model_save_to_buffer(model.m, st.data(), st.size(), &size), SNN_OK);
    EXPECT_EQ(snn_model_import_onnx_from_buffer(st.data(), st.size(), nullptr, &out), SNN_ERR_FILE_FORMAT)
        << snn_last_error();
    EXPECT_EQ(out, nullptr);
}

}  // namespace
