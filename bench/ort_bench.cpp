// snn_bench's inference cases in ONNX Runtime's C++ API, for comparison
// with snn. One line per run, in snn_bench's format:
//
//   name median_us -
//
//   ort_bench MODEL.onnx NAME [--reps N] [--threads T]
//
// MODEL.onnx: a model of bench/export_onnx.py (one input, one output, the
// batch fixed in the graph); NAME: the case name printed. The input is
// filled as snn_bench fills its inputs (element i: (i * 2654435761 % 1000) /
// 1000), the input and output tensors are allocated and bound once
// (Ort::IoBinding), and each call is one Run on that binding. Sessions use
// the CPU execution provider, intra-op threads T (default: SNN_NUM_THREADS,
// else 1), inter-op threads 1, sequential execution and every graph
// optimisation. Warm-up: reps/10 + 3 calls, as snn_bench. Reps default as
// snn_bench's: 50 for batches of 64 or more, 2000 otherwise.
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static std::vector<int64_t> shape_of(const Ort::TypeInfo &info) {
    return info.GetTensorTypeAndShapeInfo().GetShape();
}

static size_t count_of(const std::vector<int64_t> &shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= (size_t)d;
    return n;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: ort_bench MODEL.onnx NAME [--reps N] [--threads T]\n");
        return 2;
    }
    const char *model = argv[1], *name = argv[2];
    const char *env_threads = std::getenv("SNN_NUM_THREADS");
    int reps = 0, threads = env_threads && std::atoi(env_threads) > 0 ? std::atoi(env_threads) : 1;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    try {
        Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "ort_bench");
        Ort::SessionOptions options;
        options.SetIntraOpNumThreads(threads);
        options.SetInterOpNumThreads(1);
        options.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
        options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
        Ort::Session session(env, model, options);
        if (session.GetInputCount() != 1 || session.GetOutputCount() != 1) {
            std::fprintf(stderr, "%s: one input and one output expected\n", model);
            return 1;
        }
        Ort::AllocatorWithDefaultOptions allocator;
        std::string in_name = session.GetInputNameAllocated(0, allocator).get();
        std::string out_name = session.GetOutputNameAllocated(0, allocator).get();
        std::vector<int64_t> in_shape = shape_of(session.GetInputTypeInfo(0));
        std::vector<int64_t> out_shape = shape_of(session.GetOutputTypeInfo(0));
        for (int64_t d : in_shape)
            if (d < 1) {
                std::fprintf(stderr, "%s: the input's shape must be fixed\n", model);
                return 1;
            }
        std::vector<float> x(count_of(in_shape)), y(count_of(out_shape));
        for (size_t i = 0; i < x.size(); ++i) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;

        Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
        Ort::Value input = Ort::Value::CreateTensor<float>(cpu, x.data(), x.size(), in_shape.data(),
                                                           in_shape.size());
        Ort::Value output = Ort::Value::CreateTensor<float>(cpu, y.data(), y.size(),
                                                            out_shape.data(), out_shape.size());
        Ort::IoBinding binding(session);
        binding.BindInput(in_name.c_str(), input);
        binding.BindOutput(out_name.c_str(), output);
        Ort::RunOptions run_options;

        if (reps <= 0) reps = in_shape[0] >= 64 ? 50 : 2000;
        std::vector<double> times((size_t)reps);
        for (int r = -reps / 10 - 3; r < reps; ++r) {  // the first ones warm up
            auto t0 = std::chrono::steady_clock::now();
            session.Run(run_options, binding);
            auto t1 = std::chrono::steady_clock::now();
            if (r >= 0) times[(size_t)r] = std::chrono::duration<double, std::micro>(t1 - t0).count();
        }
        std::sort(times.begin(), times.end());
        std::printf("%s %.2f -\n", name, times[(size_t)reps / 2]);
    } catch (const Ort::Exception &e) {
        std::fprintf(stderr, "%s: %s\n", model, e.what());
        return 1;
    }
    return 0;
}
