// ONNX export and import: the C entry points. The format lives in lib/onnx
// (the wire layer proto.cpp, export.cpp, import.cpp); a build without it
// (Meson option onnx=false) answers SNN_ERR_UNSUPPORTED.
#include <string.h>

#include <memory>
#include <string>
#include <vector>

#include "api/guard.h"
#include "common/buffers.h"
#include "engine/network.h"
#include "engine/settings.h"
#include "engine/transfers.h"
#include "model/file_io.h"
#ifdef SNN_HAVE_ONNX
#    include "onnx/onnx.h"
#endif

using namespace snn;

namespace {

// Copies the caller's options struct (of the caller's size) over defaults.
template <class Options>
Options read_options(const Options *given, const char *name) {
    Options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    if (given == nullptr) return o;
    if (given->size < sizeof(size_t) || given->size > sizeof o)
        fail(SNN_ERR_INVALID_ARGUMENT, "%s->size is %zu; expected sizeof(%s) = %zu", name, given->size,
             name[0] == 'e' ? "snn_onnx_export_options" : "snn_onnx_import_options", sizeof o);
    memcpy(&o, given, given->size);
    o.size = sizeof o;
    return o;
}

#ifdef SNN_HAVE_ONNX
std::string export_bytes(const snn_model *model, const snn_onnx_export_options *options) {
    need(model, "model");
    const snn_onnx_export_options o = read_options(options, "export options");
    if (o.lengths != 0 && o.lengths != 1)
        fail(SNN_ERR_INVALID_ARGUMENT, "options->lengths is %d; expected 0 or 1", int(o.lengths));
    const Model &m = model->m;
    std::vector<float> params(m.net.param_count), state(m.net.state_count);
    model_get_parameters(m, params.data());
    model_get_state(m, state.data());
    onnx::ExportOptions eo;
    eo.lengths = o.lengths != 0;
    return onnx::export_model(m.net, params.data(), state.data(), eo);
}

snn_model *import_bytes(const unsigned char *bytes, size_t size, const snn_onnx_import_options *options) {
    const snn_onnx_import_options o = read_options(options, "import options");
    if (o.sequence_length < 0) fail(SNN_ERR_INVALID_ARGUMENT, "options->sequence_length is negative");
    if (o.batch < 0) fail(SNN_ERR_INVALID_ARGUMENT, "options->batch is negative");
    onnx::ImportOptions io;
    io.sequence_length = o.sequence_length;
    io.batch = o.batch;
    const onnx::Imported imp = onnx::import_model(bytes, size, io);
    ensure_threads_configured();
    auto model = std::make_unique<snn_model>();
    model_init_on_cpu(model->m, parse_spec(imp.spec), 0);
    if (imp.params.size() != model->m.net.param_count || imp.state.size() != model->m.net.state_count)
        fail(SNN_ERR_INTERNAL, "import produced %zu parameters and %zu state values for a spec of %zu and %zu",
             imp.params.size(), imp.state.size(), model->m.net.param_count, model->m.net.state_count);
    if (!imp.params.empty()) model_set_parameters(model->m, imp.params.data(), "snn_model_import_onnx");
    if (!imp.state.empty()) model_set_state(model->m, imp.state.data(), "snn_model_import_onnx");
    return model.release();
}
#else
[[noreturn]] void no_onnx() {
    fail(SNN_ERR_UNSUPPORTED, "this build of snn has no ONNX support (Meson option onnx=false)");
}
#endif

}  // namespace

extern "C" {

SNN_API snn_status snn_model_export_onnx(const snn_model *model, const snn_onnx_export_options *options,
                                         const char *path) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(path, "path");
#ifdef SNN_HAVE_ONNX
        const std::string bytes = export_bytes(model, options);
        save_atomically(path, [&](const ByteSink &sink) { sink(bytes.data(), bytes.size()); });
#else
        (void)options;
        no_onnx();
#endif
    });
}

SNN_API snn_status snn_model_export_onnx_to_buffer(const snn_model *model, const snn_onnx_export_options *options,
                                                   void *buf, size_t capacity, size_t *size) {
    return guarded(__func__, [&] {
        need(model, "model");
        need(size, "size");
#ifdef SNN_HAVE_ONNX
        const std::string bytes = export_bytes(model, options);
        if (buf == nullptr && capacity == 0) {
            *size = bytes.size();
            return;
        }
        need(buf, "buf");
        if (capacity < bytes.size())
            fail(SNN_ERR_COUNT, "the ONNX file needs %zu bytes; capacity is %zu", bytes.size(), capacity);
        memcpy(buf, bytes.data(), bytes.size());
        *size = bytes.size();
#else
        (void)options, (void)buf, (void)capacity;
        no_onnx();
#endif
    });
}

SNN_API snn_status snn_model_import_onnx(const char *path, const snn_onnx_import_options *options,
                                         snn_model **out) {
    return guarded(__func__, [&] {
        need(path, "path");
        need(out, "out");
#ifdef SNN_HAVE_ONNX
        // Read the file, then check the options: a missing file is named
        // before anything else.
        InputFile file(path);
        if (file.size() > (uint64_t(1) << 31))
            fail(SNN_ERR_UNSUPPORTED, "%s: %llu bytes; ONNX files above 2 GiB (external data) are not supported",
                 path, (unsigned long long)file.size());
        std::vector<unsigned char> bytes(size_t(file.size()));
        if (!bytes.empty()) file.read(0, bytes.data(), bytes.size());
        try {
            *out = import_bytes(bytes.data(), bytes.size(), options);
        } catch (const Error &e) {
            fail(e.status(), "%s: %s", path, e.what());
        }
#else
        (void)options;
        no_onnx();
#endif
    });
}

SNN_API snn_status snn_model_import_onnx_from_buffer(const void *data, size_t size,
                                                     const snn_onnx_import_options *options, snn_model **out) {
    return guarded(__func__, [&] {
        need_buffer(data, "data", size);
        need(out, "out");
#ifdef SNN_HAVE_ONNX
        *out = import_bytes(static_cast<const unsigned char *>(data), size, options);
#else
        (void)options;
        no_onnx();
#endif
    });
}

}  // extern "C"
