# Tests of SNN.jl against the library (SNN_LIBRARY or libsnn on the loader path),
# run with Pkg.test("SNN"). Every exported and public name of SNN is used here
# (bindings/julia/tools/check_api.js checks it).
using SNN
using LinearAlgebra
using Test

# Stand-ins for the packages whose activation functions SNN recognises by name:
# a function called relu from a module called NNlib is accepted, the same
# function from any other module is refused. This NNlib is 0.9.28 or later,
# where gelu is an alias of gelu_tanh; OldFlux.NNlib is an earlier one, whose
# gelu is the tanh approximation under its own name.
module NNlib
relu(x) = max(zero(x), x)
softmax(x; dims=1) = exp.(x) ./ sum(exp.(x); dims)
gelu_tanh(x) = x * (1 + tanh(sqrt(2 / π) * (x + 0.044715x^3))) / 2
const gelu = gelu_tanh
gelu_sigmoid(x) = x / (1 + exp(-sqrt(8 / π) * (x + 0.044715x^3)))
function gelu_erf end
end
module OldFlux
module NNlib
gelu(x) = x * (1 + tanh(sqrt(2 / π) * (x + 0.044715x^3))) / 2
end
end
module Other
relu(x) = max(zero(x), x)
end
# What `using Flux, SNN` sees: none of Flux's names comes from SNN.
module WithSNN
using SNN
end

# Deterministic data (the same in every language's tests of snn).
sine_data(n) = (x = reshape(Float32[2π * (j - 1) / (n - 1) for j in 1:n], 1, n); (x, sin.(x)))
function disc_data()
    grid = Float32[Float32(-15 + 2 * (i - 1)) / 15f0 for i in 1:16]
    x = zeros(Float32, 2, 256)
    for j in 1:256
        x[1, j] = grid[(j - 1) % 16 + 1]
        x[2, j] = grid[(j - 1) ÷ 16 + 1]
    end
    labels = [x[1, j]^2 + x[2, j]^2 < 0.5f0 ? 2 : 1 for j in 1:256]
    (x, labels)
end

# A residual MLP with batchnorm and dropout, in Flux's words.
residual_mlp() = SNN.Model(SNN.Chain(
    SNN.Dense(2 => 16, NNlib.relu),
    SNN.SkipConnection(SNN.Chain(SNN.Dense(16 => 16), SNN.BatchNorm(16, SNN.relu), SNN.Dense(16 => 16)), +),
    SNN.Dropout(0.1),
    SNN.Dense(16 => 2)))

const RESNET_SPEC = "input 8x8x1; conv 3x3 8 relu stride=1x1 pad=1x1 name=skip1; " *
    "conv 3x3 8 identity stride=1x1 pad=1x1 nobias; batchnorm eps=1.0e-5 momentum=0.1; relu; " *
    "conv 3x3 8 identity stride=1x1 pad=1x1 nobias; batchnorm eps=1.0e-5 momentum=0.1; add skip1; relu; " *
    "maxpool 2x2 stride=2x2 name=skip2; conv 1x1 4 gelu stride=1x1 pad=0x0; concat skip2; globalavgpool; " *
    "flatten; dropout 0.25; layernorm eps=1.0e-5; dense 3 identity"

resnet_chain() = SNN.Chain(
    SNN.Conv((3, 3), 1 => 8, NNlib.relu; pad=SNN.SamePad()),
    SNN.SkipConnection(SNN.Chain(SNN.Conv((3, 3), 8 => 8; pad=1, bias=false), SNN.BatchNorm(8, SNN.relu),
                                 SNN.Conv((3, 3), 8 => 8; pad=1, bias=false), SNN.BatchNorm(8)), +),
    NNlib.relu,
    SNN.MaxPool((2, 2)),
    SNN.SkipConnection(SNN.Conv((1, 1), 8 => 4, SNN.gelu), (a, b) -> cat(a, b; dims=3)),
    SNN.GlobalMeanPool(), SNN.Flatten(), SNN.Dropout(0.25), SNN.LayerNorm(12), SNN.Dense(12 => 3);
    input=(8, 8, 1))

errorof(f) = try
    f()
    nothing
catch err
    err
end

# The bytes a call allocates once it has run (compiled, buffers grown). The
# type parameters make Julia compile it for f and the arguments' types, so
# nothing is boxed by the measuring itself.
function allocations(f::F, args::Vararg{Any,N}) where {F,N}
    f(args...)
    @allocated f(args...)
end

# Minibatch training steps, as the README writes them: inputs gathered from
# an array or a Dataset, the loss's labels gathered with the same indices.
function array_step!(fwd, bwd, model, opt, x, labels, idx)
    set_inputs!(fwd, x, idx)
    forward!(fwd, model)
    backprop!(bwd, fwd, model, LogitCrossEntropyLoss(labels, 2, idx))
    SNN.update!(model, bwd, opt)
    nothing
end
function dataset_step!(fwd, bwd, model, opt, data, idx)
    set_inputs!(fwd, data, idx)
    forward!(fwd, model)
    backprop!(bwd, fwd, model, LogitCrossEntropyLoss(data, idx))
    SNN.update!(model, bwd, opt)
    nothing
end
function inference_step!(fwd, model, x)
    set_inputs!(fwd, x)
    forward!(fwd, model)
    nothing
end

@testset "SNN.jl" begin
    @testset "the library" begin
        @test SNN.version() == "0.1.0"
        @test "cpu" in SNN.build_features()
        @test SNN.has_feature("cpu")
        @test !SNN.has_feature("no-such-feature")
        SNN.check_version()
        @test isfile(SNN.library_path())               # found when loaded, not when precompiled
        @test withenv(SNN.library_candidates, "SNN_LIBRARY" => @__DIR__) == [joinpath(@__DIR__, SNN.libsnn)]
        @test withenv(SNN.library_candidates, "SNN_LIBRARY" => "/opt/snn/lib/x.so") == ["/opt/snn/lib/x.so"]
        @test withenv(SNN.library_candidates, "SNN_LIBRARY" => nothing)[end] == SNN.libsnn
        # Flux conversions need a Flux.Chain or an SNN.Model (and Flux loaded)
        e = errorof(() -> SNN.from_flux(1))
        @test e isa ArgumentError && occursin("Flux", e.msg)
        e = errorof(() -> SNN.to_flux(1))
        @test e isa ArgumentError && occursin("Flux", e.msg)
        threads = SNN.get_num_threads()
        SNN.set_num_threads(1)
        @test SNN.get_num_threads() == 1
        SNN.set_num_threads(threads)
        @test_throws SNNError SNN.set_num_threads(0)
        SNN.set_check_finite(false)
        SNN.set_allow_tf32(false)
        @test SNN.gpu_count() >= 0
        @test (SNN.gpu_status(0) == 0) == (SNN.gpu_count() > 0)
    end

    @testset "exported names do not clash with Flux, NNlib or FileIO" begin
        for name in (:chain, :preallocate, :forward!, :backprop!, :get_outputs, :parameters, :gradients,
                     :MSELoss, :LogitCrossEntropyLoss, :AdamOptimiser, :Static, :Model, :SNNError)
            @test isdefined(WithSNN, name)
        end
        for name in (:Chain, :Dense, :Conv, :BatchNorm, :Dropout, :relu, :sigmoid, :softmax, :gpu, :cpu,
                     :trainmode!, :testmode!, :update!, :reset!, :save, :load, :Optimiser)
            @test !isdefined(WithSNN, name)
            @test isdefined(SNN, name)
        end
    end

    @testset "activations are recognised by function" begin
        @test SNN.activation_name(NNlib.relu) == "relu"
        @test SNN.activation_name(SNN.relu) == "relu"
        @test SNN.activation_name(tanh) == "tanh"
        @test SNN.activation_name(SNN.tanh_fast) == "tanh"
        @test SNN.activation_name(SNN.sigmoid) == "sigmoid"
        @test SNN.activation_name(SNN.leakyrelu) == "leaky_relu"
        @test SNN.activation_name(SNN.gelu) == "gelu"
        @test SNN.activation_name(NNlib.gelu_erf) == "gelu"
        @test SNN.activation_name(SNN.swish) == "silu"
        @test SNN.activation_name(SNN.silu) == "silu"
        @test SNN.activation_name(identity) == "identity"
        e = errorof(() -> SNN.Dense(2 => 2, Other.relu))
        @test e isa ArgumentError && occursin("relu", e.msg) && occursin("not one snn runs", e.msg)
        @test_throws ArgumentError SNN.Dense(2 => 2, x -> 2x)
        @test_throws ArgumentError SNN.Dense(2 => 2, exp)
        # the binding's own functions compute what snn computes
        @test SNN.relu(-1.5f0) == 0 && SNN.relu(2f0) == 2
        @test SNN.leakyrelu(-1f0) ≈ -0.01f0
        @test SNN.sigmoid(0.0) == 0.5
        @test SNN.tanh_fast(0.5) ≈ tanh(0.5)
        @test SNN.gelu(1.0) ≈ 0.8413447460685429 atol = 1e-6
        @test SNN.gelu(-1.0) ≈ -0.15865525393145707 atol = 1e-6
        @test SNN.swish(1.0) ≈ 0.7310585786300049
        @test SNN.silu(-1.0) ≈ -0.2689414213699951
        @test SNN.softmax([1.0, 1.0]) ≈ [0.5, 0.5]
        # snn's softmax is over the channels of images, NNlib's over dims=1
        images = reshape(collect(1.0:12.0), 2, 1, 3, 2)
        @test SNN.softmax(images) ≈ NNlib.softmax(images; dims=3)
        @test all(sum(SNN.softmax(images); dims=3) .≈ 1)
    end

    @testset "NNlib's gelu is the tanh approximation, snn's the erf form: refused, not swapped" begin
        # NNlib 0.9.28 and later: gelu === gelu_tanh; before: a function named gelu
        @test NNlib.gelu === NNlib.gelu_tanh
        for f in (NNlib.gelu, NNlib.gelu_tanh, NNlib.gelu_sigmoid, OldFlux.NNlib.gelu)
            e = errorof(() -> SNN.Dense(4 => 4, f))
            @test e isa ArgumentError && occursin("tanh approximation", e.msg) && occursin("erf form", e.msg)
            @test_throws ArgumentError SNN.Conv((3, 3), 4; activation_fn=f)
            @test_throws ArgumentError SNN.spec(Static(4), f)
        end
        # the two differ by up to 4.7e-4: a silent swap would change the model
        @test abs(NNlib.gelu_tanh(2.5) - SNN.gelu(2.5)) > 4e-4
        @test SNN.spec(Static(4), SNN.Dense(4 => 4, NNlib.gelu_erf), SNN.gelu) == "input 4; dense 4 gelu; gelu"
    end

    @testset "layers become an snn spec" begin
        @test SNN.spec(SNN.Chain(SNN.Dense(1 => 10, tanh), SNN.Dense(10 => 1))) ==
              "input 1; dense 10 tanh; dense 1 identity"
        # SimpleNNs' spelling gives the same model
        @test SNN.spec(Static(1), SNN.Dense(10, activation_fn=tanh), SNN.Dense(1)) ==
              "input 1; dense 10 tanh; dense 1 identity"
        @test SNN.spec(resnet_chain()) == RESNET_SPEC
        @test SNN.spec(SNN.Chain(SNN.SkipConnection(SNN.Dense(4, SNN.silu; init=:he_normal), vcat), NNlib.softmax;
                                 input=2)) ==
              "input 2 name=skip1; dense 4 silu init=he_normal; concat skip1; softmax"
        # Julia's (w, h, c) order becomes snn's HxWxC
        @test SNN.spec(Static(4, 6, 2), SNN.AvgPool((2, 2)), SNN.leakyrelu, SNN.sigmoid, SNN.MeanPool(1),
                       SNN.Flatten(), SNN.Dense(3, SNN.leakyrelu; bias=false)) ==
              "input 6x4x2; avgpool 2x2 stride=2x2; leaky_relu; sigmoid; avgpool 1x1 stride=1x1; flatten; " *
              "dense 3 leaky_relu nobias"
        @test SNN.spec(SNN.Chain(SNN.Dense(3 => 2; init=:kaiming_normal))) ==
              "input 3; dense 2 identity init=he_normal"
        @test_throws ArgumentError SNN.spec(SNN.Chain(SNN.Conv((3, 3), 4)))       # no input size
        @test_throws ArgumentError SNN.spec(Static(2), SNN.Dense(2), Static(2))
        @test_throws ArgumentError SNN.SkipConnection(SNN.Dense(2), (a, b) -> a .* b)
        @test_throws ArgumentError SNN.Dropout(1.0)
        @test_throws ArgumentError SNN.Conv((2, 2), 1 => 1; pad=SNN.SamePad())    # even kernel
        @test_throws ArgumentError SNN.Dense(2; init=:orthogonal)
        # SimpleNNs' use_bias takes Val(true) / Val(false)
        @test SNN.spec(Static(3), SNN.Dense(2; use_bias=Val(false)), SNN.Dense(1; use_bias=Val(true))) ==
              "input 3; dense 2 identity nobias; dense 1 identity"
        @test SNN.spec(Static(4, 4, 1), SNN.Conv((3, 3), 2; use_bias=Val(false), activation_fn=SNN.relu)) ==
              "input 4x4x1; conv 3x3 2 relu stride=1x1 pad=0x0 nobias"
        @test SNN.spec(SNN.Chain(SNN.Dense(3 => 2; bias=Val(false)))) == "input 3; dense 2 identity nobias"
        e = errorof(() -> SNN.Dense(2; use_bias=1))
        @test e isa ArgumentError && occursin("Val(false)", e.msg)
        @test_throws ArgumentError SNN.Conv((3, 3), 2; use_bias=Val(:no))
    end

    @testset "concatenations and softmaxes act where snn's do, or are refused" begin
        # On images snn's concat joins channels: cat(a, b; dims=3) in Julia
        channels = SNN.Chain(SNN.Conv((3, 3), 1 => 2; pad=1),
                             SNN.SkipConnection(SNN.Conv((1, 1), 2 => 2), (a, b) -> cat(a, b; dims=3)); input=(4, 4, 1))
        model = SNN.Model(channels)
        @test SNN.output_shape(model) == (4, 4, 4)
        # vcat on (w, h, c, batch) joins widths: a DimensionMismatch, not a channel concat
        widths = SNN.Chain(SNN.Conv((3, 3), 1 => 2; pad=1), SNN.SkipConnection(SNN.Conv((1, 1), 2 => 2), vcat);
                           input=(4, 4, 1))
        @test SNN.spec(widths) == SNN.spec(channels)        # the same spec: only the built model can tell
        e = errorof(() -> SNN.Model(widths))
        @test e isa DimensionMismatch && occursin("dimension 1 (width)", e.msg) && occursin("dims=3", e.msg)
        # on vectors snn's concat joins features: vcat, not a new dimension nor the batch
        @test SNN.output_shape(SNN.Model(SNN.Chain(SNN.SkipConnection(SNN.Dense(4), vcat); input=2))) == (6,)
        e = errorof(() -> SNN.Model(SNN.Chain(SNN.SkipConnection(SNN.Dense(2), (a, b) -> cat(a, b; dims=3)); input=2)))
        @test e isa DimensionMismatch && occursin("dimension 3 (a new one)", e.msg)
        e = errorof(() -> SNN.Model(SNN.Chain(SNN.SkipConnection(SNN.Dense(2), hcat); input=2)))
        @test e isa DimensionMismatch && occursin("dimension 2 (batch)", e.msg)
        # cat without dims throws in Julia: refused, as anything that neither adds nor concatenates
        @test_throws ArgumentError SNN.SkipConnection(SNN.Dense(2), cat)
        @test SNN.spec(SNN.Chain(SNN.SkipConnection(SNN.Dense(2), (a, b) -> a .+ b); input=2)) ==
              "input 2 name=skip1; dense 2 identity; add skip1"

        # NNlib.softmax on images normalises widths (dims=1); snn's softmax is over channels
        e = errorof(() -> SNN.Model(SNN.Chain(SNN.Conv((1, 1), 1 => 3), NNlib.softmax; input=(4, 4, 1))))
        @test e isa DimensionMismatch && occursin("dimension 1 (width)", e.msg) && occursin("dims=3", e.msg)
        over_channels = SNN.Model(SNN.Chain(SNN.Conv((1, 1), 1 => 3), x -> NNlib.softmax(x; dims=3); input=(4, 4, 1)))
        @test endswith(SNN.describe(over_channels), "softmax")
        logits = SNN.Model(SNN.Chain(SNN.Conv((1, 1), 1 => 3); input=(4, 4, 1)))
        SNN.set_parameters!(logits, SNN.get_parameters(over_channels))
        x = reshape(Float32[(i % 7) / 7 for i in 1:32], 4, 4, 1, 2)
        @test over_channels(x) ≈ NNlib.softmax(logits(x); dims=3)
        @test SNN.Model(SNN.Chain(SNN.Conv((1, 1), 1 => 3), SNN.softmax; input=(4, 4, 1))) isa Model
        # on vectors, the features: dims=1
        @test SNN.Model(SNN.Chain(SNN.Dense(2 => 3), NNlib.softmax)) isa Model
        e = errorof(() -> SNN.Model(SNN.Chain(SNN.Dense(2 => 3), x -> NNlib.softmax(x; dims=2))))
        @test e isa DimensionMismatch && occursin("dimension 2 (batch)", e.msg)
        @test_throws ArgumentError SNN.spec(Static(3), x -> 2x)
        foreach(close, (model, over_channels, logits))
    end

    @testset "models from layers" begin
        model = SNN.Model(resnet_chain())
        @test SNN.describe(model) == SNN.describe(SNN.Model(RESNET_SPEC))
        @test SNN.layer_count(model) == 17
        @test SNN.layer_shape(model, 0) == (1, 8, 8)
        @test SNN.input_shape(model) == (8, 8, 1)
        @test SNN.output_shape(model) == (3,)
        @test SNN.input_size(model) == 64 && SNN.output_size(model) == 3
        @test SNN.parameter_count(model) == 1363
        @test SNN.state_count(model) == 2 * (8 + 8 + 1)
        @test SNN.layer_state(model, 3) == 1:17
        @test SNN.layer_state(model, 6) == 18:34
        @test isempty(SNN.layer_state(model, 1))
        @test SNN.state(model)[1:8] == zeros(Float32, 8)        # running means start at 0
        @test SNN.state(model)[9:16] == ones(Float32, 8)        # running variances at 1
        r = SNN.layer_parameters(model, 1)
        @test length(r.weights) == 8 * 9 && length(r.bias) == 8
        @test isempty(SNN.layer_parameters(model, 2).bias)     # nobias
        # declared sizes are checked against what arrives
        e = errorof(() -> SNN.Model(SNN.Chain(SNN.Dense(3 => 4), SNN.Dense(5 => 2))))
        @test e isa DimensionMismatch && occursin("Dense(5 => 2) receives 4 features", e.msg)
        @test_throws DimensionMismatch SNN.Model(SNN.Chain(SNN.Conv((3, 3), 2 => 4); input=(8, 8, 1)))
        @test_throws DimensionMismatch SNN.Model(SNN.Chain(SNN.Dense(3 => 4), SNN.BatchNorm(5)))
        @test_throws DimensionMismatch SNN.Model(SNN.Chain(SNN.Dense(3 => 4), SNN.LayerNorm(3)))
        e = errorof(() -> chain(Static(4), SNN.Dense(0)))
        @test e isa SNNError && e.status == SNN.SNN_ERR_SPEC && occursin("snn_model_create", e.message)
        @test sprint(show, SNN.Model("input 2; dense 1")) == "SNN.Model(\"input 2; dense 1\")"
        foreach(close, (model,))
    end

    @testset "a Vector is one sample, a Matrix a batch" begin
        model = chain(Static(3), SNN.Dense(2))
        SNN.set_parameters!(model, Float32[1, 0, 0, 0, 1, 1, 10, 20])   # W = [1 0 0; 0 1 1], b = [10, 20]
        @test model(Float32[1, 2, 3]) == Float32[11, 25]
        @test model([1.0, 2.0, 3.0]) == Float32[11, 25]                   # converted to Float32
        @test model(Float32[1 0; 2 0; 3 1]) == Float32[11 10; 25 21]     # (features, batch)
        fwd = preallocate(model, 4)
        set_inputs!(fwd, Float32[1, 2, 3])
        @test SNN.batch_size(fwd) == (batch=1, max_batch=4)
        forward!(fwd, model)
        @test size(get_outputs(fwd)) == (2, 1)
        @test_throws DimensionMismatch set_inputs!(fwd, Float32[1, 2])
        @test_throws DimensionMismatch set_inputs!(fwd, zeros(Float32, 2, 3))
        e = errorof(() -> set_inputs!(fwd, zeros(Float32, 3, 5)))               # above max_batch
        @test e isa SNNError && e.status == SNN.SNN_ERR_BATCH
        SNN.truncate_batch!(fwd, 2)
        @test SNN.batch_size(fwd).batch == 2
        # images: (w, h, c) is one sample, (w, h, c, batch) a batch
        cnn = chain(Static(6, 4, 2), SNN.Flatten(), SNN.Dense(1))
        @test size(cnn(rand(Float32, 6, 4, 2))) == (1,)
        @test size(cnn(rand(Float32, 6, 4, 2, 5))) == (1, 5)
        @test size(cnn(rand(Float32, 48, 5))) == (1, 5)
        @test_throws DimensionMismatch cnn(rand(Float32, 4, 6, 2, 5))
        # gathering columns (1-based) of a larger matrix
        data = Float32[1 2 3 4; 0 0 0 0; 0 0 0 0]
        set_inputs!(fwd, data, [4, 2])
        forward!(fwd, model)
        @test get_outputs(fwd) == Float32[14 12; 20 20]
        @test_throws BoundsError set_inputs!(fwd, data, [5])
        foreach(close, (fwd, model, cnn))
    end

    @testset "contiguous Float32 passes by pointer, the rest through one reused buffer" begin
        model = chain(Static(3), SNN.Dense(2))
        SNN.set_parameters!(model, Float32[1, 0, 0, 0, 1, 1, 10, 20])
        data = Float32[1 2 3 4 5; 0 1 0 1 0; 0 0 2 0 3]
        @test SNN.by_pointer(data) && SNN.by_pointer(view(data, :, 2:4)) && SNN.by_pointer(view(data, :, 3))
        @test SNN.by_pointer(parameters(model))
        @test !SNN.by_pointer(view(data, 1:2, :))                       # rows: not adjacent
        @test !SNN.by_pointer(Float64.(data)) && !SNN.by_pointer(transpose(data)) && !SNN.by_pointer(1:3)
        expected = model(data)
        fwd = preallocate(model, 5)
        set_inputs!(fwd, view(data, :, 2:4))
        forward!(fwd, model)
        @test get_outputs(fwd) == expected[:, 2:4]
        @test isempty(fwd.staging)                                       # no copy made
        set_inputs!(fwd, Float64.(data))
        forward!(fwd, model)
        @test get_outputs(fwd) == expected
        buffer = fwd.staging
        @test length(buffer) == 15
        set_inputs!(fwd, data[[1, 2, 3], [5, 1]] .+ 0.0)                 # another Float64 array
        forward!(fwd, model)
        @test get_outputs(fwd) == expected[:, [5, 1]]
        @test fwd.staging === buffer                                     # the same buffer, reused
        set_inputs!(fwd, view(data, [1, 2, 3], :))                       # a view by index vectors
        forward!(fwd, model)
        @test get_outputs(fwd) == expected && fwd.staging === buffer
        # gathering from arrays that cannot pass by pointer copies only the samples gathered
        set_inputs!(fwd, Float64.(data), [4, 2])
        forward!(fwd, model)
        @test get_outputs(fwd) == expected[:, [4, 2]] && fwd.staging === buffer
        @test_throws BoundsError set_inputs!(fwd, Float64.(data), [6])
        set_inputs!(fwd, view(data, :, 1:4), [4, 1])
        forward!(fwd, model)
        @test get_outputs(fwd) == expected[:, [4, 1]]
        # output gradients and gradients take the backward cache's buffer
        bwd = preallocate_grads(model, 5)
        set_inputs!(fwd, data)
        forward!(fwd, model)
        backprop!(bwd, fwd, model, ones(5, 5)[1:2, :])
        @test SNN.get_gradients(bwd)[7:8] == Float32[5, 5]
        @test length(bwd.staging) == 10
        SNN.set_gradients!(bwd, zeros(Float64, 8))
        @test all(iszero, gradients(bwd)) && length(bwd.staging) == 10
        SNN.set_parameters!(model, view(Float32[0, 1, 0, 0, 0, 0, 0, 0, 0, 0], 2:9))
        @test SNN.get_parameters(model) == Float32[1, 0, 0, 0, 0, 0, 0, 0]
        foreach(close, (fwd, bwd, model))
    end

    @testset "losses are PyTorch's means, not SimpleNNs' sums" begin
        model = chain(Static(3), SNN.Dense(2))
        SNN.set_parameters!(model, Float32[1, 0, 0, 0, 1, 1, 0, 0])     # W = [1 0 0; 0 1 1], b = 0
        fwd, bwd = preallocate(model, 2), preallocate_grads(model, 2)
        x = Float32[1 0; 2 0; 3 1]
        set_inputs!(fwd, x)
        forward!(fwd, model)
        y = copy(get_outputs(fwd))
        @test y == Float32[1 0; 5 1]
        # MSE: sum((y - t)^2) / (outputs * batch), dL/dy = 2 (y - t) / (outputs * batch)
        @test backprop!(bwd, fwd, model, MSELoss(zeros(Float32, 2, 2))) == (1 + 25 + 0 + 1) / 4
        dy = 2 .* y ./ 4
        g = SNN.get_gradients(bwd)
        @test reshape(g[1:6], 3, 2)' == dy * x'                          # dL/dW, [out][in]
        @test g[7:8] == vec(sum(dy; dims=2))                              # dL/db
        @test g == Float32[0.5, 1, 1.5, 2.5, 5, 8, 0.5, 3]
        # neither MSE nor cross-entropy has a parameter
        @test_throws SNNError SNN.set_loss_parameter!(bwd, SNN.SNN_LOSS_MSE, 1.0)
        @test_throws SNNError SNN.loss_parameter(bwd, SNN.SNN_LOSS_LOGIT_CROSSENTROPY)
        # Huber, delta 2, residuals 1, 0, 5, 1: (0.5 + 0 + 2 (5 - 1) + 0.5) / 4
        @test SNN.loss_parameter(bwd, SNN.SNN_LOSS_HUBER) == 1.0
        @test backprop!(bwd, fwd, model, HuberLoss(zeros(Float32, 2, 2); delta=2)) == 9 / 4
        @test SNN.loss_parameter(bwd, SNN.SNN_LOSS_HUBER) == 2.0
        @test_throws SNNError SNN.set_loss_parameter!(bwd, SNN.SNN_LOSS_HUBER, 0.0)
        @test SNN.set_loss_parameter!(bwd, SNN.SNN_LOSS_HUBER, 0.5) === bwd
        # smooth L1, beta 0 (L1): (1 + 0 + 5 + 1) / 4
        @test backprop!(bwd, fwd, model, SmoothL1Loss(zeros(Float32, 2, 2); beta=0)) == 7 / 4
        @test SNN.loss_parameter(bwd, SNN.SNN_LOSS_SMOOTH_L1) == 0.0
        # binary cross-entropy of logits 1, 5, 0, 1 against 1, 1, 0, 1
        @test backprop!(bwd, fwd, model, BCEWithLogitsLoss(Float32[1 0; 1 1])) ≈
              (2 * log1p(exp(-1)) + log1p(exp(-5)) + log(2)) / 4 rtol=1e-6
        @test_throws SNNError SNN.loss_parameter(bwd, SNN.SNN_LOSS_BCE_WITH_LOGITS)
        # SimpleNNs' gradient (y - t) is snn's times outputs * batch / 2
        @test reshape(g[1:6], 3, 2)' .* (2 * 2 / 2) == y * x'
        # cross-entropy: the mean over the batch of -log softmax(y)[label]
        l = backprop!(bwd, fwd, model, LogitCrossEntropyLoss([1, 2], 2))
        @test l ≈ (log(exp(1) + exp(5)) - 1 + log(exp(0) + exp(1)) - 1) / 2
        p = exp.(y) ./ sum(exp.(y); dims=1)
        dy = (p .- Float32[1 0; 0 1]) ./ 2
        g = SNN.get_gradients(bwd)
        @test reshape(g[1:6], 3, 2)' ≈ dy * x'
        @test g[7:8] ≈ vec(sum(dy; dims=2))
        foreach(close, (fwd, bwd, model))
    end

    @testset "layer weights as Flux shapes them, over the model's memory" begin
        model = chain(Static(3), SNN.Dense(2))
        SNN.set_parameters!(model, Float32[1, 2, 3, 4, 5, 6, 10, 20])   # snn's [out][in] W = [1 2 3; 4 5 6]
        W = SNN.layer_weight(model, 1)
        @test size(W) == (2, 3)                                          # Flux's (out, in)
        @test W == Float32[1 2 3; 4 5 6]
        @test parent(W) isa AbstractMatrix{Float32} && size(parent(W)) == (3, 2)   # Julia's (in, out) memory
        b = SNN.layer_bias(model, 1)
        @test b == Float32[10, 20]
        @test W * Float32[1, 1, 1] + b == model(Float32[1, 1, 1]) == Float32[16, 35]
        W[2, 1] = 0                                                      # writes go to the model
        @test SNN.get_parameters(model)[4] == 0
        b[2] = 0
        @test model(Float32[1, 1, 1]) == Float32[16, 11]
        # a conv weight is (kw, kh, in, out), snn's [out][in][kh][kw] as it lies
        cnn = chain(Static(5, 4, 2), SNN.Conv((3, 2), 4), SNN.BatchNorm(4), SNN.Flatten(), SNN.Dense(1; bias=false))
        w = SNN.layer_weight(cnn, 1)
        @test size(w) == (3, 2, 2, 4) && size(SNN.layer_bias(cnn, 1)) == (4,)
        @test vec(w) == SNN.get_parameters(cnn)[SNN.layer_parameters(cnn, 1).weights]
        @test SNN.layer_weight(cnn, 2) == ones(Float32, 4)              # batchnorm weight, one per channel
        @test SNN.layer_bias(cnn, 2) == zeros(Float32, 4)
        @test size(SNN.layer_weight(cnn, 4)) == (1, 3 * 3 * 4)
        e = errorof(() -> SNN.layer_bias(cnn, 4))
        @test e isa ArgumentError && occursin("layer 4 (dense) has no bias", e.msg)
        @test_throws ArgumentError SNN.layer_weight(cnn, 3)             # flatten
        close(cnn)
        @test_throws ArgumentError w[1]                                  # a view refuses a closed model
        close(model)
    end

    @testset "fit sin(x) to a stated loss" begin
        N = 512
        x, y = sine_data(N)
        model = chain(Static(1), SNN.Dense(10, activation_fn=tanh), SNN.Dense(10, activation_fn=SNN.sigmoid),
                      SNN.Dense(1))
        SNN.initialise!(model; seed=42)
        fwd = preallocate(model, N)
        bwd = preallocate_grads(model, N)
        opt = AdamOptimiser(model; lr=0.01)
        set_inputs!(fwd, x)
        loss = MSELoss(y)
        first = 0.0f0
        for epoch in 1:3000
            forward!(fwd, model)
            l = backprop!(bwd, fwd, model, loss)
            epoch == 1 && (first = l)
            SNN.update!(model, bwd, opt)
        end
        forward!(fwd, model)
        out = get_outputs(fwd)
        @test size(out) == (1, N)
        mse = sum(abs2, out .- y) / N
        @test first > 0.5
        @test mse < 1e-4
        @test SNN.step_count(opt) == 3000
        foreach(close, (opt, bwd, fwd, model))
    end

    @testset "a residual MLP with batchnorm and dropout learns a disc" begin
        x, labels = disc_data()
        model = residual_mlp()
        SNN.initialise!(model; seed=3)
        fwd = preallocate(model, 256)
        bwd = preallocate_grads(model, 256)
        opt = AdamOptimiser(model; lr=0.01)
        loss = LogitCrossEntropyLoss(labels, 2)
        @test SNN.istraining(fwd)                      # a new cache trains, as a PyTorch module
        losses = Float32[]
        for step in 1:300
            set_inputs!(fwd, x)
            SNN.seed!(fwd, step)
            forward!(fwd, model)
            push!(losses, backprop!(bwd, fwd, model, loss))
            SNN.update!(model, bwd, opt)
        end
        @test losses[1] > 0.3
        @test minimum(losses[end-9:end]) < 0.01
        SNN.testmode!(fwd)
        @test !SNN.istraining(fwd)
        forward!(fwd, model)
        out = get_outputs(fwd)
        predicted = [out[2, j] > out[1, j] ? 2 : 1 for j in 1:256]
        @test count(predicted .== labels) >= 250
        @test SNN.state(model)[end] == 300              # num_batches_tracked of the batchnorm
        foreach(close, (opt, bwd, fwd, model))
    end

    @testset "training and inference modes, dropout seeds, state" begin
        model = residual_mlp()
        x, _ = disc_data()
        fwd = preallocate(model, 256)
        before = SNN.state(model)
        SNN.testmode!(fwd)
        set_inputs!(fwd, x)
        forward!(fwd, model)
        inference = copy(get_outputs(fwd))
        @test SNN.state(model) == before               # an inference pass only reads the model
        forward!(fwd, model)
        @test get_outputs(fwd) == inference            # and is deterministic
        SNN.trainmode!(fwd)
        SNN.seed!(fwd, 7)
        forward!(fwd, model)
        first_mask = copy(get_outputs(fwd))
        @test first_mask != inference                  # dropout dropped, batchnorm used the batch
        @test SNN.state(model) != before               # and updated its running statistics
        SNN.seed!(fwd, 7)
        forward!(fwd, model)
        @test get_outputs(fwd) == first_mask           # the same seed, the same masks
        SNN.seed!(fwd, 8)
        forward!(fwd, model)
        @test get_outputs(fwd) != first_mask
        SNN.testmode!(fwd, false)
        @test SNN.istraining(fwd)
        e = errorof(() -> SNN.testmode!(model))         # Flux's habit: modes are per cache here
        @test e isa ArgumentError && occursin("testmode!(cache)", e.msg)
        SNN.trainmode!(fwd, false)
        @test !SNN.istraining(fwd)
        # the state can be read, written and is saved with the model
        s = SNN.state(model)
        s[1] = 0.25f0
        SNN.set_state!(model, s)
        @test SNN.state(model)[1] == 0.25f0
        again = SNN.from_bytes(SNN.to_bytes(model))
        @test SNN.state(again) == SNN.state(model)
        @test_throws SNNError SNN.set_state!(model, zeros(Float32, 3))
        @test SNN.state(chain(Static(2), SNN.Dense(1))) == Float32[]
        foreach(close, (fwd, model, again))
    end

    @testset "inference caches and predict!" begin
        model = residual_mlp()
        SNN.initialise!(model; seed=5)
        x, _ = disc_data()
        train = preallocate(model, 8)
        @test SNN.istraining(train)                    # preallocate: training mode
        e = errorof(() -> predict!(train, model, x[:, 1:8]))
        @test e isa ArgumentError && occursin("training mode", e.msg) && occursin("inference_cache", e.msg)
        before = SNN.state(model)
        fwd = inference_cache(model, 8)
        @test !SNN.istraining(fwd)                     # inference_cache: inference mode
        batch = predict!(fwd, model, x[:, 1:8])
        @test size(batch) == (2, 8)
        @test batch ≈ model(x[:, 1:8])
        first_outputs = copy(batch)
        @test predict!(fwd, model, x[:, 1:8]) == first_outputs   # dropout off: deterministic
        @test SNN.state(model) == before               # running statistics untouched
        single = predict!(fwd, model, x[:, 3])         # one sample: its outputs, a vector
        @test size(single) == (2,) && single ≈ first_outputs[:, 3]
        cnn = SNN.Model(resnet_chain())
        images = inference_cache(cnn, 2)
        image = rand(Float32, 8, 8, 1)
        @test size(predict!(images, cnn, image)) == (3,)
        @test size(predict!(images, cnn, rand(Float32, 8, 8, 1, 2))) == (3, 2)
        @test_throws DimensionMismatch predict!(images, cnn, rand(Float32, 7, 8, 1))
        foreach(close, (train, fwd, images, cnn, model))
    end

    @testset "a training step allocates nothing once it runs" begin
        x, labels = disc_data()
        data = Dataset(x; labels=labels)
        model = residual_mlp()
        SNN.initialise!(model; seed=1)
        fwd, bwd = preallocate(model, 32), preallocate_grads(model, 32)
        opt = AdamOptimiser(model; lr=0.01)
        idx = collect(1:8:256)
        @test allocations(array_step!, fwd, bwd, model, opt, x, labels, idx) == 0
        @test allocations(dataset_step!, fwd, bwd, model, opt, data, idx) == 0
        @test length(bwd.int_staging) == 32 && length(bwd.indices) == 32   # the cache's buffers
        # the gathered loss is the loss of the gathered labels
        set_inputs!(fwd, x, idx)
        forward!(fwd, model)
        gathered = backprop!(bwd, fwd, model, LogitCrossEntropyLoss(labels, 2, idx))
        @test gathered == backprop!(bwd, fwd, model, LogitCrossEntropyLoss(labels[idx], 2))
        # a bad label is named when it is gathered, a bad index when the loss is made
        bad = copy(labels)
        bad[9] = 3
        e = errorof(() -> backprop!(bwd, fwd, model, LogitCrossEntropyLoss(bad, 2, idx)))
        @test e isa ArgumentError && occursin("labels[9] is 3", e.msg) && occursin("1:2", e.msg)
        @test_throws BoundsError LogitCrossEntropyLoss(labels, 2, [0])
        test = inference_cache(model, 256)
        @test allocations(inference_step!, test, model, x) == 0
        foreach(close, (test, opt, fwd, bwd, data, model))
    end

    @testset "a CNN with residual and concat connections" begin
        model = SNN.Model(resnet_chain())
        x = reshape(Float32[((i * 7) % 13 - 6) / 6 for i in 0:(64 * 4 - 1)], 8, 8, 1, 4)
        fwd = preallocate(model, 4)
        bwd = preallocate_grads(model, 4)
        opt = AdamWOptimiser(model; lr=0.01, weight_decay=0.05)
        @test fwd isa ForwardCache && bwd isa BackwardCache && opt isa SNN.Optimiser
        set_inputs!(fwd, x)
        forward!(fwd, model)
        @test size(get_outputs(fwd)) == (3, 4)
        l = backprop!(bwd, fwd, model, LogitCrossEntropyLoss([1, 2, 3, 2], 3))
        @test l > 0
        @test length(gradients(bwd)) == SNN.parameter_count(model)
        SNN.update!(model, bwd, opt)
        @test SNN.hyperparameter(opt, :weight_decay) == 0.05
        foreach(close, (opt, bwd, fwd, model))
    end

    @testset "zero-copy views keep their owner alive and refuse stale use" begin
        view_of_a_dropped_model() = (m = chain(Static(3), SNN.Dense(2)); SNN.initialise!(m; seed=1);
                                     (parameters(m), SNN.get_parameters(m)))
        p, expected = view_of_a_dropped_model()
        GC.gc(); GC.gc()
        @test p == expected                             # the view kept its model alive
        @test p isa AbstractVector{Float32} && !(p isa Array)
        model = chain(Static(3), SNN.Dense(2))
        p = parameters(model)
        p[1] = 0.5f0
        @test SNN.get_parameters(model)[1] == 0.5f0
        fwd = preallocate(model, 2)
        bwd = preallocate_grads(model, 2)
        set_inputs!(fwd, ones(Float32, 3, 2))
        forward!(fwd, model)
        out = get_outputs(fwd)
        backprop!(bwd, fwd, model, MSELoss(zeros(Float32, 2, 2)))
        g = gradients(bwd)
        @test SNN.get_gradients(bwd) == g
        @test copy(out) isa Matrix{Float32}
        close(fwd)
        e = errorof(() -> out[1])
        @test e isa ArgumentError && occursin("ForwardCache has been closed", e.msg)
        close(bwd)
        @test_throws ArgumentError g[1]
        close(model)
        @test_throws ArgumentError p[1]
        @test_throws ArgumentError (p[1] = 1f0)
    end

    @testset "gpu(model) returns a new model and leaves the original on the CPU" begin
        model = chain(Static(3), SNN.Dense(2))
        SNN.initialise!(model; seed=9)
        p = parameters(model)
        @test SNN.device(model) === :cpu
        @test SNN.cpu(model) === model
        if SNN.gpu_count() == 0
            e = errorof(() -> SNN.gpu(model))
            @test e isa SNNError && e.status in (SNN.SNN_ERR_GPU_PLUGIN_NOT_FOUND, SNN.SNN_ERR_GPU_DRIVER, SNN.SNN_ERR_NO_GPU)
            d = errorof(() -> token_dataset(Int32[1 2; 3 4]; lengths=[2, 1], device=0))
            @test d isa SNNError && d.status == e.status
            @test_throws SNNError SNN.move!(model, 0)
            @test SNN.to_best_device!(model) === :cpu
            @test p == SNN.get_parameters(model)        # nothing moved: the view is still good
        else
            g = SNN.gpu(model)
            @test g !== model && SNN.device(g) == 0
            @test SNN.device(model) === :cpu
            @test SNN.gpu(g) === g
            @test SNN.get_parameters(g) == SNN.get_parameters(model) == p
            @test_throws ArgumentError parameters(g)
            x = rand(Float32, 3, 5)
            @test g(x) ≈ model(x)
            back = SNN.cpu(g)
            @test SNN.device(back) === :cpu && SNN.get_parameters(back) == p
            # moving a model itself makes its views refuse
            SNN.move!(model, 0)
            e = errorof(() -> p[1])
            @test e isa ArgumentError && occursin("moved to another device", e.msg)
            SNN.move!(model, :cpu)
            @test SNN.to_best_device!(model) == 0
            foreach(close, (g, back))
        end
        close(model)
    end

    @testset "the dropout generator state is read and restored" begin
        model = residual_mlp()
        x, _ = disc_data()
        fwd = preallocate(model, 256)
        @test SNN.rngstate(fwd) == (seed=0, passes=0)                   # a new cache
        SNN.seed!(fwd, 7)
        set_inputs!(fwd, x)
        for _ in 1:3
            forward!(fwd, model)
        end
        state = SNN.rngstate(fwd)
        @test state == (seed=7, passes=3) && state.seed isa UInt64
        forward!(fwd, model)
        fourth = copy(get_outputs(fwd))
        SNN.testmode!(fwd)
        forward!(fwd, model)
        @test SNN.rngstate(fwd).passes == 4                             # inference passes do not count
        # another cache resumes the sequence where the state was read
        other = preallocate(model, 256)
        @test SNN.rngstate!(other, state) === other
        set_inputs!(other, x)
        forward!(other, model)
        @test get_outputs(other) == fourth
        @test SNN.rngstate(other) == (seed=7, passes=4)
        SNN.rngstate!(other, 7, 3)
        forward!(other, model)
        @test get_outputs(other) == fourth
        SNN.rngstate!(other, 7, 0)                                      # as seed!(other, 7)
        @test SNN.rngstate(other) == (seed=7, passes=0)
        foreach(close, (fwd, other, model))
    end

    @testset "model files and checkpoints" begin
        model = residual_mlp()
        SNN.initialise!(model; seed=7)
        path = tempname() * ".safetensors"
        SNN.save(path, model)
        again = SNN.load(path)
        @test SNN.get_parameters(again) == SNN.get_parameters(model)
        @test SNN.describe(again) == SNN.describe(model)
        io = IOBuffer()
        write(io, model)
        @test SNN.get_parameters(read(seekstart(io), Model)) == SNN.get_parameters(model)
        @test_throws SNNError SNN.load(path * ".missing")
        @test_throws SNNError SNN.from_bytes(UInt8[1, 2, 3])

        # ONNX: exported and imported again, the same spec and parameters.
        onnx_path = path * ".onnx"
        SNN.export_onnx(onnx_path, model)
        bytes = SNN.export_onnx(model)
        @test read(onnx_path) == bytes
        for again in (SNN.import_onnx(onnx_path), SNN.import_onnx(bytes))
            @test SNN.describe(again) == SNN.describe(model)
            @test SNN.get_parameters(again) == SNN.get_parameters(model)
            close(again)
        end
        @test_throws SNNError SNN.import_onnx(bytes[1:end÷2])
        @test_throws SNNError SNN.import_onnx(onnx_path * ".missing"; sequence_length=4)
        rm(onnx_path)
        rm(path)

        # Training resumed from a checkpoint continues bit-identically.
        x, labels = disc_data()
        loss = LogitCrossEntropyLoss(labels, 2)
        function train!(m, opt, steps)
            fwd, bwd = preallocate(m, 256), preallocate_grads(m, 256)
            for step in steps
                set_inputs!(fwd, x)
                SNN.seed!(fwd, step)
                forward!(fwd, m)
                backprop!(bwd, fwd, m, loss)
                SNN.update!(m, bwd, opt)
            end
            foreach(close, (fwd, bwd))
        end
        straight = residual_mlp()
        opt = RMSPropOptimiser(straight; lr=0.001)
        train!(straight, opt, 1:10)
        checkpoint = tempname() * ".safetensors"
        SNN.save_checkpoint(checkpoint, straight, opt)
        train!(straight, opt, 11:20)
        resumed, resumed_opt = SNN.load_checkpoint(checkpoint)
        @test SNN.step_count(resumed_opt) == 10
        @test SNN.hyperparameter(resumed_opt, :lr) == 0.001
        train!(resumed, resumed_opt, 11:20)
        @test SNN.get_parameters(resumed) == SNN.get_parameters(straight)
        @test SNN.state(resumed) == SNN.state(straight)
        rm(checkpoint)
        foreach(close, (model, again, straight, opt, resumed, resumed_opt))
    end

    @testset "optimisers" begin
        model = chain(Static(2), SNN.Dense(1))
        sgd = SGDOptimiser(model; lr=0.1, momentum=0.9, nesterov=true)
        @test SNN.hyperparameter(sgd, :momentum) == 0.9
        @test SNN.hyperparameter(sgd, :nesterov) == 1
        SNN.set_hyperparameter!(sgd, :lr, 0.05)
        @test SNN.hyperparameter(sgd, :lr) == 0.05
        e = errorof(() -> SNN.set_hyperparameter!(sgd, :beta1, 0.9))    # SGD has no beta1
        @test e isa SNNError && e.status == SNN.SNN_ERR_INVALID_ARGUMENT
        @test_throws ArgumentError SNN.hyperparameter(sgd, :nonsense)
        adam = AdamOptimiser(model; beta2=0.99999)
        @test SNN.hyperparameter(adam, :beta2) == 0.99999
        SNN.set_hyperparameter!(sgd, :momentum, 0.5)
        e = errorof(() -> SNN.set_hyperparameter!(sgd, :dampening, 0.5))  # Nesterov needs dampening 0
        @test e isa SNNError && e.status == SNN.SNN_ERR_INVALID_ARGUMENT
        @test SNN.hyperparameter(sgd, :dampening) == 0
        lion = LionOptimiser(model; weight_decay=0.1)
        @test SNN.hyperparameter(lion, :lr) == 1e-4
        @test SNN.hyperparameter(lion, :beta2) == 0.99
        @test SNN.hyperparameter(lion, :weight_decay) == 0.1
        e = errorof(() -> SNN.set_hyperparameter!(lion, :eps, 1e-8))     # Lion has no epsilon
        @test e isa SNNError && e.status == SNN.SNN_ERR_INVALID_ARGUMENT
        close(lion)
        e = errorof(() -> SNN.grad_norm(sgd))                              # no step that clipped
        @test e isa SNNError && e.status == SNN.SNN_ERR_STATE
        SNN.set_hyperparameter!(sgd, :max_grad_norm, 1.0)
        clipped = preallocate_grads(model, 1)
        SNN.set_gradients!(clipped, Float32[3, 4, 0])
        SNN.update!(model, clipped, sgd)
        @test SNN.grad_norm(sgd) == 5.0
        fwd, bwd = preallocate(model, 1), preallocate_grads(model, 1)
        e = errorof(() -> SNN.update!(model, bwd, adam))                  # no backprop yet
        @test e isa SNNError && e.status == SNN.SNN_ERR_STATE
        set_inputs!(fwd, Float32[1, 2])
        forward!(fwd, model)
        backprop!(bwd, fwd, model, MSELoss(Float32[3]))
        SNN.update!(model, bwd, adam)
        @test SNN.step_count(adam) == 1
        SNN.reset!(adam)
        @test SNN.step_count(adam) == 0
        foreach(close, (sgd, adam, fwd, bwd, model))
    end

    @testset "gradients: set, inputs, custom losses, synchronize" begin
        model = chain(Static(3), SNN.Dense(2))
        SNN.set_parameters!(model, Float32[1, 0, 0, 0, 1, 1, 0, 0])
        fwd, bwd = preallocate(model, 2), preallocate_grads(model, 2)
        set_inputs!(fwd, Float32[1 2; 1 2; 1 2])
        forward!(fwd, model)
        SNN.input_gradients!(bwd, true)
        backprop!(bwd, fwd, model, Float32[1 0; 0 0])                     # dL/dy: only y[1] of sample 1
        @test SNN.synchronize(bwd) === bwd
        g = SNN.get_gradients(bwd)
        @test g[1:3] == Float32[1, 1, 1] && g[7] == 1                      # dL/dW[1,:] = x, dL/db[1] = 1
        @test SNN.input_gradients(bwd, fwd) == Float32[1 0; 0 0; 0 0]     # W' * dL/dy
        SNN.set_gradients!(bwd, zeros(Float32, 8))
        @test all(iszero, gradients(bwd))
        @test_throws SNNError SNN.set_gradients!(bwd, zeros(Float32, 7))
        SNN.input_gradients!(bwd, false)
        # inputs from GPU memory need a GPU cache
        host = ones(Float32, 6)
        e = GC.@preserve host errorof(() -> SNN.set_inputs_device!(fwd, pointer(host), 6))
        @test e isa SNNError && e.status == SNN.SNN_ERR_DEVICE_MISMATCH
        foreach(close, (fwd, bwd, model))
    end

    @testset "data sets gathered by index" begin
        x, labels = disc_data()
        data = Dataset(x; labels=labels)
        model = residual_mlp()
        fwd, bwd = preallocate(model, 8), preallocate_grads(model, 8)
        idx = [1, 17, 100, 256]
        set_inputs!(fwd, data, idx)
        @test SNN.batch_size(fwd).batch == 4
        forward!(fwd, model)
        from_data = backprop!(bwd, fwd, model, LogitCrossEntropyLoss(data, idx))
        gathered = backprop!(bwd, fwd, model, LogitCrossEntropyLoss(labels, 2, idx))
        direct = backprop!(bwd, fwd, model, LogitCrossEntropyLoss(labels[idx], 2))
        @test from_data == gathered == direct
        @test_throws BoundsError set_inputs!(fwd, data, [257])
        @test_throws ArgumentError LogitCrossEntropyLoss([0], 2)
        e = errorof(() -> LogitCrossEntropyLoss([1, 2, 5, 0], 2))
        @test e isa ArgumentError && occursin("labels[3] is 5", e.msg) && occursin("1:2", e.msg)
        @test_throws BoundsError LogitCrossEntropyLoss(data, [0])
        @test_throws BoundsError LogitCrossEntropyLoss(labels, 2, [257])
        @test_throws ArgumentError Dataset(rand(Float32, 3))
        # labels are 1-based: 0 is refused, not sent as -1
        e = errorof(() -> Dataset(Float32[1 2 3; 4 5 6]; labels=[1, 0, 2]))
        @test e isa ArgumentError && occursin("labels[2] is 0", e.msg) && occursin("1-based", e.msg)
        e = errorof(() -> Dataset(Float32[1 2 3; 4 5 6]; labels=[1, 3, 2], num_classes=2))
        @test e isa ArgumentError && occursin("labels[2] is 3", e.msg) && occursin("1:2", e.msg)
        three = Dataset(Float32[1 2 3; 4 5 6]; labels=[1, 2, 2], num_classes=2)
        @test three.count == 3
        close(three)
        unlabelled = Dataset(x)
        e = errorof(() -> backprop!(bwd, fwd, model, LogitCrossEntropyLoss(unlabelled, idx)))
        @test e isa SNNError && e.status == SNN.SNN_ERR_STATE
        foreach(close, (data, unlabelled, fwd, bwd, model))
    end

    # Sequence models: three samples of 5 steps of 3 features, lengths 5, 2
    # and 4, one label per step (the same data in every language's tests).
    seq_inputs() = reshape(Float32[((i * 7 % 11) / 11) - 0.5 for i in 0:44], 3, 5, 3)   # (features, steps, batch)
    seq_lengths = Int32[5, 2, 4]
    # (steps, batch) 1-based labels: missing ignores step 2 of sample 1, the
    # padded steps (from each sample's length on) hold class 4.
    function seq_labels()
        labels = Matrix{Union{Missing,Int}}(undef, 5, 3)
        for s in 1:3, t in 1:5
            labels[t, s] = t > seq_lengths[s] ? 4 : (s - 1 + 2 * (t - 1)) % 6 + 1
        end
        labels[2, 1] = missing
        labels
    end
    # The mean over the counted steps of -log softmax, from (classes, steps, batch) logits.
    function seq_loss(outputs, labels, lengths)
        total, counted = 0.0, 0
        for s in axes(outputs, 3), t in 1:lengths[s]
            labels[t, s] === missing && continue
            y = Float64.(outputs[:, t, s])
            top = maximum(y)
            total += log(sum(exp.(y .- top))) + top - y[labels[t, s]]
            counted += 1
        end
        total / counted
    end
    function seq_model()
        m = SNN.Model(SNN.Chain(Static((3, 5)), SNN.Dense(3 => 4, tanh), SNN.LayerNorm(4), SNN.Dense(4 => 6)))
        SNN.initialise!(m; seed=11)
        m
    end

    @testset "sequences: the input, lengths and one label per step" begin
        @test SNN.spec(Static((3, 5)), SNN.Dense(4, tanh), SNN.LayerNorm(4), SNN.Dense(6)) ==
              "input seq 5x3; dense 4 tanh; layernorm eps=1.0e-5; dense 6 identity"
        model = seq_model()
        @test SNN.input_sequence(model) == (steps=5, vocab=0)
        @test SNN.input_sequence(SNN.Model("input 3; dense 2")) == (steps=0, vocab=0)
        @test SNN.input_shape(model) == (3, 5) && SNN.output_shape(model) == (6, 5)
        @test SNN.input_size(model) == 15 && SNN.output_size(model) == 30
        @test size(SNN.layer_weight(model, 1)) == (4, 3)                # dense on each step: (out, in)
        @test size(SNN.layer_weight(model, 2)) == (4,)                  # layernorm over each step's features
        @test_throws DimensionMismatch SNN.Model(SNN.Chain(Static((3, 5)), SNN.Dense(15 => 4)))
        x, labels = seq_inputs(), seq_labels()
        fwd, bwd = preallocate(model, 3), preallocate_grads(model, 3)
        function pass(lengths, step_labels)
            set_inputs!(fwd, x)
            lengths === nothing || set_lengths!(fwd, lengths)
            forward!(fwd, model)
            loss = backprop!(bwd, fwd, model, LogitCrossEntropyLoss(step_labels, 6))
            (loss, copy(gradients(bwd)), copy(get_outputs(fwd)))
        end
        loss, gradient, outputs = pass(seq_lengths, labels)
        @test size(outputs) == (6, 5, 3)                                # (classes, steps, batch)
        @test loss ≈ seq_loss(outputs, labels, seq_lengths) rtol = 1e-5
        # a padded step's label changes nothing, bit for bit; a valid step's does
        padded = copy(labels)
        padded[4, 2] = 1
        @test pass(seq_lengths, padded)[1:2] == (loss, gradient)
        valid = copy(labels)
        valid[2, 2] = valid[2, 2] % 6 + 1
        @test pass(seq_lengths, valid)[1] != loss
        # without lengths every step counts, the padded ones too
        full, _, full_outputs = pass(nothing, labels)
        @test full ≈ seq_loss(full_outputs, labels, [5, 5, 5]) rtol = 1e-5
        @test full != loss
        # any integer vector of lengths, through the staging buffer
        @test pass([5, 2, 4], labels)[1] == loss && length(fwd.int_staging) == 3

        # gathered samples, lengths and step labels equal the direct ones
        order = [3, 1]
        direct = begin
            set_inputs!(fwd, x[:, :, order])
            set_lengths!(fwd, seq_lengths[order])
            forward!(fwd, model)
            backprop!(bwd, fwd, model, LogitCrossEntropyLoss(labels[:, order], 6))
        end
        set_inputs!(fwd, x, order)
        set_lengths!(fwd, seq_lengths, order)
        forward!(fwd, model)
        @test backprop!(bwd, fwd, model, LogitCrossEntropyLoss(labels, 6, order)) == direct

        # lengths before inputs, out of range, too many, or for a model without sequences
        fresh = preallocate(model, 3)
        e = errorof(() -> set_lengths!(fresh, seq_lengths))
        @test e isa SNNError && e.status == SNN.SNN_ERR_STATE
        set_inputs!(fwd, x)
        for bad in (Int32[0, 2, 4], Int32[5, 6, 4], Int32[5, -1, 4])
            e = errorof(() -> set_lengths!(fwd, bad))
            @test e isa SNNError && e.status == SNN.SNN_ERR_INVALID_ARGUMENT && occursin("[1, 5]", e.message)
        end
        e = errorof(() -> set_lengths!(fwd, seq_lengths[1:2]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_COUNT
        @test_throws BoundsError set_lengths!(fwd, seq_lengths, [1, 4, 2])
        vector = SNN.Model("input 3; dense 2")
        vfwd = preallocate(vector, 1)
        set_inputs!(vfwd, Float32[1, 2, 3])
        e = errorof(() -> set_lengths!(vfwd, [1]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_UNSUPPORTED

        # step labels: 1-based or missing, checked when the loss is made and by the library
        e = errorof(() -> LogitCrossEntropyLoss([1 2; 0 3], 6))
        @test e isa ArgumentError && occursin("labels[2, 1] is 0", e.msg) && occursin("missing", e.msg)
        @test_throws ArgumentError LogitCrossEntropyLoss([1 7; 1 3], 6)
        e = errorof(() -> backprop!(bwd, fwd, model, LogitCrossEntropyLoss(labels[1:4, :], 6)))
        @test e isa SNNError && e.status == SNN.SNN_ERR_COUNT
        beyond = copy(labels)
        beyond[1, 3] = 7                                                  # 7 classes declared, the model has 6
        e = errorof(() -> backprop!(bwd, fwd, model, LogitCrossEntropyLoss(beyond, 7)))
        @test e isa SNNError && e.status == SNN.SNN_ERR_LABEL && occursin("sample 2, step 0", e.message)

        # token ids are refused by a model of floats, and checked in token data sets
        e = errorof(() -> set_tokens!(fwd, Int32[1 2; 3 4; 0 1; 2 3; 4 0]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_UNSUPPORTED
        e = errorof(() -> set_tokens!(fwd, Int32[1 2; 3 4; 0 1; 2 3; 4 0], [2]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_UNSUPPORTED
        e = errorof(() -> token_dataset(Int32[1 2; 3 -4; 0 1]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_TOKEN
        e = errorof(() -> token_dataset(Int32[1 2; 3 4; 0 1]; lengths=[3, 4]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_INVALID_ARGUMENT
        @test_throws DimensionMismatch token_dataset(Int32[1 2; 3 4; 0 1]; lengths=[3])
        @test_throws DimensionMismatch token_dataset(Int32[1 2; 3 4; 0 1]; labels=[1 2; 3 4])
        e = errorof(() -> token_dataset(Int32[1 2; 3 4; 0 1]; labels=[1 2; 0 4; 1 1]))
        @test e isa ArgumentError && occursin("labels[2, 1] is 0", e.msg)
        ids = token_dataset(permutedims(Int32[1 2 3 4 0]); lengths=[3], labels=permutedims([1 missing 2 2 2]))
        @test ids.count == 1 && ids.features == 5
        e = errorof(() -> set_inputs!(fwd, ids, [1]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_UNSUPPORTED
        foreach(close, (fwd, fresh, bwd, vfwd, vector, ids, model))
    end

    @testset "sequence layers become an snn spec" begin
        @test SNN.spec(SNN.Tokens(16; vocab=100), SNN.Embedding(100 => 32; pad=0), SNN.PosEmbed(),
                       SNN.MultiHeadAttention(32; nheads=4, causal=true), SNN.LSTM(32 => 24; bidirectional=true),
                       SNN.GRU(48 => 16; last=true, bias=false), SNN.Dense(5)) ==
              "input tokens 16 vocab=100; embedding 32 pad=0; posembed; attention heads=4 causal; " *
              "lstm 24 bidirectional; gru 16 last nobias; dense 5 identity"
        @test SNN.spec(Static((8, 20)), SNN.Conv1d(3, 8 => 16, SNN.relu; pad=1),
                       SNN.Conv((5,), 16 => 4; stride=2, dilation=2), SNN.Conv1d(1, 4; activation_fn=SNN.gelu),
                       SNN.LSTM(6; use_bias=Val(false)), SNN.GRU(6), SNN.MultiHeadAttention(6; nheads=2),
                       SNN.SeqPool(:max)) ==
              "input seq 20x8; conv1d 3 16 relu stride=1 pad=1 dilation=1; " *
              "conv1d 5 4 identity stride=2 pad=0 dilation=2; conv1d 1 4 gelu stride=1 pad=0 dilation=1; " *
              "lstm 6 nobias; gru 6; attention heads=2; seqpool max"
        @test SNN.spec(SNN.Chain(SNN.Embedding(5 => 2), SNN.SeqPool(:last); input=SNN.Tokens(3; vocab=5))) ==
              "input tokens 3 vocab=5; embedding 2; seqpool last"
        @test SNN.spec(SNN.Chain(SNN.MultiHeadAttention(4), SNN.SeqPool(:mean); input=(4, 7))) ==
              "input seq 7x4; attention heads=8; seqpool mean"
        @test_throws ArgumentError SNN.SeqPool(:first)
        @test_throws ArgumentError SNN.Tokens(0; vocab=4)
        @test_throws ArgumentError SNN.spec(Static(3), SNN.Tokens(3; vocab=4))
        @test_throws ArgumentError SNN.LSTM(4; use_bias=1)
    end

    # Token models need the embedding op.
    @testset "token ids: models, refusals and data sets" begin
        model = SNN.Model(SNN.Chain(SNN.Tokens(4; vocab=10), SNN.Embedding(10 => 8), SNN.Dense(8 => 3)))
        SNN.initialise!(model; seed=3)
        @test SNN.input_sequence(model) == (steps=4, vocab=10)
        @test SNN.input_shape(model) == (4,) && SNN.output_shape(model) == (3, 4)
        @test size(SNN.layer_weight(model, 1)) == (8, 10)                # Flux's Embedding layout
        @test_throws DimensionMismatch SNN.Model(SNN.Chain(SNN.Tokens(4; vocab=10), SNN.Embedding(12 => 8)))
        fwd, bwd = preallocate(model, 3), preallocate_grads(model, 3)
        for bad in (10, -1)
            e = errorof(() -> set_tokens!(fwd, Int32[0 4; 1 5; 2 6; 3 bad]))
            @test e isa SNNError && e.status == SNN.SNN_ERR_TOKEN && occursin("sample 1, step 3", e.message)
        end
        e = errorof(() -> set_tokens!(fwd, Int32[0 9; 1 9; 2 12; 3 9], [1, 2]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_TOKEN
        @test_throws DimensionMismatch set_tokens!(fwd, Int32[0, 1, 2])
        e = errorof(() -> set_inputs!(fwd, zeros(Float32, 4, 2)))
        @test e isa SNNError && e.status == SNN.SNN_ERR_UNSUPPORTED
        wide = token_dataset(permutedims(Int32[0 1 2 10]))
        e = errorof(() -> set_inputs!(fwd, wide, [1]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_TOKEN

        # a data set gathers ids, lengths and step labels as the caller's arrays do
        ids = Int32[1 5 9; 2 6 0; 3 7 9; 4 8 0]                          # (steps, samples)
        lengths = [4, 2, 3]
        step_labels = [1 3 2; 2 missing 1; 3 2 3; 1 2 3]
        data = token_dataset(ids; lengths, labels=step_labels, num_classes=3)
        idx = [3, 2]
        set_inputs!(fwd, data, idx)
        forward!(fwd, model)
        from_data = backprop!(bwd, fwd, model, LogitCrossEntropyLoss(data, idx))
        gradient = copy(gradients(bwd))
        set_tokens!(fwd, ids, idx)
        set_lengths!(fwd, lengths, idx)
        forward!(fwd, model)
        @test backprop!(bwd, fwd, model, LogitCrossEntropyLoss(step_labels, 3, idx)) == from_data
        @test gradients(bwd) == gradient
        @test length(fwd.int_staging) == 3                                # only the Int64 lengths were converted
        set_tokens!(fwd, Int64.(ids[:, idx]))                             # converted into the staging buffer
        set_lengths!(fwd, Int32[3, 2])
        forward!(fwd, model)
        direct = backprop!(bwd, fwd, model, LogitCrossEntropyLoss(step_labels[:, idx], 3))
        @test direct == from_data
        @test direct ≈ seq_loss(get_outputs(fwd), step_labels[:, idx], [3, 2]) rtol = 1e-5
        @test length(fwd.int_staging) == 8
        foreach(close, (fwd, bwd, wide, data, model))
    end

    @testset "conv1d, posembed and seqpool: shapes and weights" begin
        positions = SNN.Model(SNN.Chain(SNN.Tokens(6; vocab=4), SNN.Embedding(4 => 3), SNN.PosEmbed(),
                                        SNN.SeqPool(:last)))
        @test size(SNN.layer_weight(positions, 2)) == (3, 6)              # a (features, steps) weight
        @test SNN.output_shape(positions) == (3,)
        close(positions)
        model = SNN.Model(SNN.Chain(Static((8, 20)), SNN.Conv1d(3, 8 => 16, SNN.relu; pad=1), SNN.SeqPool(:mean),
                                    SNN.Dense(16 => 2)))
        @test SNN.output_shape(model) == (2,)
        @test SNN.layer_shape(model, 1) == (16, 20, 1)
        @test size(SNN.layer_weight(model, 1)) == (3, 8, 16)              # Flux's 1-D Conv layout
        @test size(SNN.layer_bias(model, 1)) == (16,)
        @test size(model(rand(Float32, 8, 20, 5))) == (2, 5)
        @test size(model(rand(Float32, 8, 20))) == (2,)                   # one sample
        @test_throws DimensionMismatch SNN.Model(SNN.Chain(Static((8, 20)), SNN.Conv1d(3, 4 => 16)))
        # a strided convolution changes the number of steps: no lengths
        strided = SNN.Model(SNN.Chain(Static((2, 6)), SNN.Conv1d(3, 2 => 4; stride=2)))
        @test SNN.output_shape(strided) == (4, 2)
        sfwd = preallocate(strided, 1)
        set_inputs!(sfwd, zeros(Float32, 2, 6))
        e = errorof(() -> set_lengths!(sfwd, Int32[3]))
        @test e isa SNNError && e.status == SNN.SNN_ERR_UNSUPPORTED
        foreach(close, (sfwd, strided, model))
    end

    # A model, its caches and an Adam optimiser after one step, and what they hold.
    function trained()
        model = chain(Static(6, 6, 1), SNN.Conv((3, 3), 2, activation_fn=SNN.relu), SNN.MaxPool((2, 2)),
                      SNN.Flatten(), SNN.Dense(3))
        SNN.initialise!(model; seed=5)
        fwd = preallocate(model, 2)
        bwd = preallocate_grads(model, 2)
        opt = AdamOptimiser(model; lr=0.05)
        x = reshape(Float32[((i * 7 % 13) - 6) / 6 for i in 0:71], 6, 6, 1, 2)
        loss = LogitCrossEntropyLoss([1, 3], 3)
        set_inputs!(fwd, x)
        forward!(fwd, model)
        backprop!(bwd, fwd, model, loss)
        SNN.update!(model, bwd, opt)
        forward!(fwd, model)
        (model=model, fwd=fwd, bwd=bwd, opt=opt, x=x, loss=loss, outputs=copy(get_outputs(fwd)),
         gradients=copy(gradients(bwd)), parameters=SNN.get_parameters(model))
    end

    # Every handle still open answers with what it held; a call given a closed
    # handle throws an ArgumentError.
    function check_survivors(t)
        if isopen(t.model)
            @test SNN.get_parameters(t.model) == t.parameters
        end
        if isopen(t.fwd)
            @test SNN.batch_size(t.fwd).batch == 2
            @test get_outputs(t.fwd) == t.outputs
            if isopen(t.model)
                forward!(t.fwd, t.model)
                @test get_outputs(t.fwd) == t.outputs
            else
                @test_throws ArgumentError forward!(t.fwd, t.model)
            end
        end
        if isopen(t.bwd)
            @test gradients(t.bwd) == t.gradients
            if !isopen(t.model) || !isopen(t.fwd)
                @test_throws ArgumentError backprop!(t.bwd, t.fwd, t.model, t.loss)
            end
        end
        if isopen(t.opt)
            @test SNN.step_count(t.opt) == 1
            @test SNN.hyperparameter(t.opt, :lr) == 0.05
            if !isopen(t.model) || !isopen(t.bwd)
                @test_throws ArgumentError SNN.update!(t.model, t.bwd, t.opt)
            end
            @test SNN.step_count(t.opt) == 1
        end
    end

    permutations(v) = length(v) <= 1 ? [v] : [[v[i]; p] for i in eachindex(v) for p in permutations(deleteat!(copy(v), i))]

    @testset "mixed precision and loss scaling" begin
        # No dense, conv, conv1d, attention, lstm nor gru: bf16 has nothing to round.
        plain = SNN.Model("input 4x4x2; batchnorm; relu; maxpool 2; flatten; softmax")
        SNN.initialise!(plain; seed=5)
        x = reshape(Float32[((j * 29) % 97) / 97 * 2 - 1 for j in 0:(3 * 32 - 1)], 32, 3)
        function pass(p)
            pf, pb = preallocate(plain, 3; precision=p), preallocate_grads(plain, 3)
            set_inputs!(pf, x)
            forward!(pf, plain)
            py = copy(get_outputs(pf))
            backprop!(pb, pf, plain, MSELoss(fill(0.1f0, size(py))))
            pg = SNN.get_gradients(pb)
            read_back = SNN.cache_precision(pf)
            foreach(close, (pf, pb))
            (py, pg, read_back)
        end
        y32, g32, p32 = pass(:float32)
        y16, g16, p16 = pass(:bf16)
        @test (p32, p16) == (:float32, :bf16)
        @test y16 == y32 && g16 == g32
        @test any(!iszero, g32)

        mlp = SNN.Model("input 6; dense 8 tanh; dense 3")
        SNN.initialise!(mlp; seed=2)
        fwd = preallocate(mlp, 4)
        @test SNN.cache_precision(fwd) == :float32
        e = errorof(() -> SNN.precision!(fwd, :fp16))
        @test e isa SNNError && e.status == SNN.SNN_ERR_UNSUPPORTED && occursin("fp16", e.message)
        @test SNN.cache_precision(fwd) == :float32
        # The MLP's outputs and gradients at bf16 lie within 2^-6 of float32's (operands
        # rounded to 8 significant bits, float32 sums), and differ from them (batch 8: at
        # bf16, products of up to 4 rows run as float32's).
        @test SNN.precision!(fwd, :bf16) === fwd
        @test SNN.cache_precision(fwd) == :bf16
        function mlp_pass(p)
            mf, mb = preallocate(mlp, 8; precision=p), preallocate_grads(mlp, 8)
            set_inputs!(mf, reshape(Float32[((j * 29) % 97) / 97 * 2 - 1 for j in 0:47], 6, 8))
            forward!(mf, mlp)
            my = copy(get_outputs(mf))
            backprop!(mb, mf, mlp, MSELoss(fill(0.1f0, size(my))))
            mg = SNN.get_gradients(mb)
            foreach(close, (mf, mb))
            (my, mg)
        end
        (ya, ga), (yb, gb) = mlp_pass(:float32), mlp_pass(:bf16)
        @test maximum(abs.(yb .- ya)) <= maximum(abs.(ya)) / 64
        @test maximum(abs.(gb .- ga)) <= maximum(abs.(ga)) / 64
        @test yb != ya
        @test SNN.precision!(fwd, :float32) === fwd
        @test_throws ArgumentError SNN.precision!(fwd, :float64)
        @test_throws ArgumentError preallocate(mlp, 4; precision=:half)
        @test_throws SNNError preallocate(mlp, 4; precision=:fp16)
        @test SNN.precision_support(:cpu, :float32)
        @test SNN.precision_support(:cpu, :bf16) isa Bool
        @test_throws SNNError SNN.precision_support(:cpu, :fp16)

        # Loss scaling: PyTorch's defaults; a power-of-two scale changes no gradient.
        xs = reshape(Float32[((j * 29) % 97) / 97 * 2 - 1 for j in 0:23], 6, 4)
        function step!(bwd, target)
            set_inputs!(fwd, xs)
            forward!(fwd, mlp)
            backprop!(bwd, fwd, mlp, MSELoss(fill(Float32(target), 3, 4)))
        end
        unscaled, scaled = preallocate_grads(mlp, 4), preallocate_grads(mlp, 4)
        @test SNN.loss_scaling(unscaled).on == false && SNN.loss_scaling(unscaled).scale == 1.0
        @test SNN.loss_scaling!(scaled, true) === scaled
        @test SNN.loss_scaling(scaled) == (on=true, scale=65536.0, growth_factor=2.0, backoff_factor=0.5,
                                           growth_interval=2000, good_steps=0, skipped=false)
        @test step!(unscaled, 0.5) == step!(scaled, 0.5)
        @test SNN.get_gradients(unscaled) == SNN.get_gradients(scaled)
        @test SNN.loss_scaling(scaled).good_steps == 1

        # A forced overflow skips the step and lowers the scale; the third good step grows it.
        opt = AdamOptimiser(mlp)
        SNN.loss_scaling!(scaled; scale=1e38, backoff_factor=0.25, growth_interval=3, good_steps=2)
        before = SNN.get_parameters(mlp)
        step!(scaled, 1e3)
        s = SNN.loss_scaling(scaled)
        @test s.skipped && s.scale == 0.25e38 && s.good_steps == 0
        SNN.update!(mlp, scaled, opt)
        @test SNN.get_parameters(mlp) == before
        @test SNN.step_count(opt) == 0
        SNN.loss_scaling!(scaled; scale=1024, backoff_factor=0.25, growth_interval=3, good_steps=2)
        step!(scaled, 0.5)
        s = SNN.loss_scaling(scaled)
        @test !s.skipped && s.scale == 2048.0 && s.good_steps == 0
        SNN.update!(mlp, scaled, opt)
        @test SNN.get_parameters(mlp) != before
        @test SNN.step_count(opt) == 1
        @test_throws SNNError SNN.loss_scaling!(scaled; scale=0)
        @test_throws SNNError SNN.loss_scaling!(scaled; growth_interval=10, good_steps=10)
        @test SNN.loss_scaling(scaled).scale == 2048.0                   # unchanged by the refusals

        # Checkpoints keep the scaler.
        SNN.loss_scaling!(scaled; scale=0.5, growth_factor=3, backoff_factor=0.375, growth_interval=7, good_steps=6)
        saved = SNN.loss_scaling(scaled)
        with, without = tempname() * ".safetensors", tempname() * ".safetensors"
        SNN.save_checkpoint(with, mlp, opt, scaled)
        SNN.save_checkpoint(without, mlp, opt, unscaled)
        resumed, resumed_opt = SNN.load_checkpoint(with)
        @test SNN.get_parameters(resumed) == SNN.get_parameters(mlp)
        restored = preallocate_grads(resumed, 4)
        @test SNN.load_loss_scaling!(restored, with) === restored
        @test SNN.loss_scaling(restored) == saved
        SNN.loss_scaling!(restored, false)
        @test !SNN.loss_scaling(restored).on
        SNN.loss_scaling!(restored, saved)
        @test SNN.loss_scaling(restored) == saved
        SNN.load_loss_scaling!(restored, without)
        @test !SNN.loss_scaling(restored).on
        rm(with); rm(without)
        foreach(close, (fwd, unscaled, scaled, restored, opt, resumed_opt, resumed, mlp, plain))
    end

    @testset "handles closed in every order" begin
        orders = permutations([:model, :fwd, :bwd, :opt])
        @test length(unique(orders)) == 24
        for order in orders
            t = trained()
            for name in order
                close(getfield(t, name))
                @test !isopen(getfield(t, name))
                check_survivors(t)
            end
        end
    end

    @testset "a cache answers after its model is closed" begin
        t = trained()
        close(t.model)
        e = errorof(() -> forward!(t.fwd, t.model))
        @test e isa ArgumentError && occursin("Model has been closed", e.msg)
        @test get_outputs(t.fwd) == t.outputs
        set_inputs!(t.fwd, t.x[:, :, :, 2:2])
        @test SNN.batch_size(t.fwd).batch == 1
        @test_throws DimensionMismatch set_inputs!(t.fwd, zeros(Float32, 35, 1))
        @test gradients(t.bwd) == t.gradients
        SNN.set_gradients!(t.bwd, zeros(Float32, length(t.gradients)))
        @test all(iszero, gradients(t.bwd))
        SNN.reset!(t.opt)
        @test SNN.step_count(t.opt) == 0
        foreach(close, (t.opt, t.bwd, t.fwd))
        close(t.fwd)
        @test_throws ArgumentError get_outputs(t.fwd)
    end

    @testset "handles and views left to the finalizers are freed in any order" begin
        for round in 1:5
            views = [(t = trained(); (get_outputs(t.fwd), gradients(t.bwd), parameters(t.model))) for _ in 1:40]
            GC.gc()
            @test all(v -> length(v[1]) == 6 && length(v[2]) == length(v[3]), views)
            views = nothing
            GC.gc()
        end
        t = trained()
        check_survivors(t)
        foreach(close, (t.model, t.fwd, t.bwd, t.opt))
    end

    @testset "a throwing log callback is contained and logging goes on" begin
        failing_call() = errorof(() -> SNN.set_num_threads(0))
        seen = String[]
        try
            SNN.set_log_callback((level, message) -> error("the receiver refused: ", message))
            e = failing_call()
            @test e isa SNNError && e.status == SNN.SNN_ERR_INVALID_ARGUMENT
            thrown = SNN.take_log_callback_error()
            @test thrown isa ErrorException && startswith(thrown.msg, "the receiver refused: snn_set_num_threads")
            @test SNN.take_log_callback_error() === nothing

            # Many more failing calls on several threads while the callback keeps
            # throwing: none blocks (a deadlock fails after 30 s), each throws.
            tasks = [Threads.@spawn [failing_call() for _ in 1:50] for _ in 1:4]
            finished = timedwait(() -> all(istaskdone, tasks), 30.0)
            @test finished === :ok
            if finished === :ok
                errors = reduce(vcat, fetch.(tasks))
                @test length(errors) == 200
                @test all(err -> err isa SNNError && err.status == SNN.SNN_ERR_INVALID_ARGUMENT, errors)
            end
            @test occursin("snn_set_num_threads", SNN.take_log_callback_error().msg)

            SNN.set_log_callback((level, message) -> push!(seen, message))
            e = failing_call()
            @test seen == [e.message]
        finally
            SNN.set_log_callback(nothing)
        end
        failing_call()
        @test length(seen) == 1
        @test SNN.take_log_callback_error() === nothing
    end
end

# The CUDA extension, where a GPU and CUDA.jl are both there (CUDA.jl is not a
# test dependency: add it to the environment to run these). Loading it is a
# top-level statement of its own, so the tests below see its methods.
const WITH_CUDA = SNN.gpu_count() > 0 && Base.find_package("CUDA") !== nothing
WITH_CUDA && @eval using CUDA

if WITH_CUDA
    @testset "CuArrays through the CUDA extension" begin
        model = SNN.Model(SNN.Chain(SNN.Dense(3 => 4, SNN.relu), SNN.Dense(4 => 2)))
        g = SNN.gpu(model)
        x = rand(Float32, 3, 5)
        cx = CUDA.CuArray(x)
        @test g(cx) isa CUDA.CuArray
        @test Array(g(cx)) ≈ model(x)
        @test Array(g(CUDA.CuArray(x[:, 1]))) ≈ model(x[:, 1])          # a CuVector is one sample
        fwd, bwd = preallocate(g, 5), preallocate_grads(g, 5)
        set_inputs!(fwd, cx)
        forward!(fwd, g)
        @test Array(get_outputs(fwd, CUDA.CuArray)) == get_outputs(fwd)
        @test Array(get_outputs(fwd, CUDA.CuArray{Float32})) == get_outputs(fwd)   # any CuArray type
        @test get_outputs(fwd, CUDA.CuMatrix{Float32}) isa CUDA.CuArray{Float32}
        backprop!(bwd, fwd, g, MSELoss(zeros(Float32, 2, 5)))
        device_gradient = gradients(bwd, CUDA.CuArray)
        @test Array(device_gradient) == SNN.get_gradients(bwd)
        @test Array(gradients(bwd, CUDA.CuArray{Float32})) == SNN.get_gradients(bwd)
        e = errorof(() -> set_inputs!(preallocate(model, 5), cx))          # a CPU cache
        @test e isa ArgumentError && occursin("GPU model", e.msg)
        @test_throws ArgumentError model(cx)
        foreach(close, (fwd, bwd, g, model))
    end
end

# The Flux extension, where Flux is installed (it is not a test dependency:
# add it to the environment to run these). It is imported, not used, so its
# exports stay out of this file's names; loading it loads SNNFluxExt.
const WITH_FLUX = Base.find_package("Flux") !== nothing
WITH_FLUX && @eval import Flux

if WITH_FLUX
    @testset "Flux chains to snn models and back" begin
        # an MLP: Dense, BatchNorm with running statistics, a residual Dense,
        # LayerNorm, Dropout, a Dense without bias
        mlp = Flux.Chain(Flux.Dense(3 => 8, Flux.relu), Flux.BatchNorm(8, tanh),
                         Flux.SkipConnection(Flux.Dense(8 => 8, Flux.sigmoid), +),
                         Flux.LayerNorm(8), Flux.Dropout(0.3), Flux.Dense(8 => 2; bias=false))
        bn = mlp[2]
        bn.μ .= Float32[0.1 * j for j in 1:8]
        bn.σ² .= Float32[0.5 + 0.25 * j for j in 1:8]
        bn.γ .= Float32[1 + 0.1 * j for j in 1:8]
        bn.β .= Float32[0.05 * j - 0.2 for j in 1:8]
        Flux.testmode!(mlp)                                  # running statistics, no dropout
        x = reshape(Float32[2 * sin(1.7f0 * i) for i in 1:15], 3, 5)
        model = SNN.from_flux(mlp)
        @test SNN.parameter_count(model) == 3 * 8 + 8 + 2 * 8 + 8 * 8 + 8 + 2 * 8 + 8 * 2
        @test SNN.layer_weight(model, 1) == mlp[1].weight   # (out, in) both
        # Flux versions differ in where LayerNorm adds ϵ (σ + ϵ or √(σ² + ϵ)): hence 1e-3
        @test model(x) ≈ mlp(x) rtol=1e-3 atol=1e-5
        back = SNN.to_flux(model)
        Flux.testmode!(back)
        @test back(x) ≈ mlp(x) rtol=1e-3 atol=1e-5
        @test back[1].weight == mlp[1].weight && back[4] isa Flux.SkipConnection   # back[3] is tanh

        # a CNN: Conv (a true convolution: its kernel is flipped), CrossCor
        # (kept), padding, strides, pooling, flatten
        cnn = Flux.Chain(Flux.Conv((3, 2), 2 => 4, Flux.relu; pad=(1, 1, 0, 0), stride=(1, 2)), Flux.BatchNorm(4),
                         Flux.CrossCor((3, 3), 4 => 3; pad=1), Flux.MaxPool((2, 2)), Flux.MLUtils.flatten,
                         Flux.Dense(18 => 5))
        cnn[2].μ .= Float32[0.1, -0.2, 0.3, 0]
        cnn[2].σ² .= Float32[1, 2, 0.5, 1.5]
        Flux.testmode!(cnn)
        images = reshape(Float32[cos(0.37f0 * i) for i in 1:6 * 8 * 2 * 3], 6, 8, 2, 3)   # (w, h, c, batch)
        snn_cnn = SNN.from_flux(cnn; input=(6, 8, 2))
        @test SNN.output_shape(snn_cnn) == (5,)
        @test SNN.layer_weight(snn_cnn, 1) == cnn[1].weight[end:-1:1, end:-1:1, :, :]   # flipped
        @test SNN.layer_weight(snn_cnn, 3) == cnn[3].weight                              # CrossCor: as is
        @test snn_cnn(images) ≈ cnn(images) rtol=1e-4 atol=1e-5
        again = SNN.to_flux(snn_cnn)
        Flux.testmode!(again)
        @test again(images) ≈ cnn(images) rtol=1e-4 atol=1e-5
        @test again[1].weight == cnn[1].weight                                           # flipped back
        e = errorof(() -> SNN.from_flux(Flux.Chain(Flux.Dense(2 => 3), Flux.GroupNorm(3, 1))))
        @test e isa ArgumentError && occursin("GroupNorm", e.msg)
        e = errorof(() -> SNN.from_flux(Flux.Chain(Flux.Conv((2, 2), 1 => 1; pad=Flux.SamePad())); input=(4, 4, 1)))
        @test e isa ArgumentError && occursin("both sides", e.msg)

        # an snn model with a residual add, a channel concat and a softmax, to Flux
        m = SNN.Model("input 6x6x2; conv 3 4 relu pad=1 name=a; conv 3 4 pad=1 nobias; batchnorm; relu; add a; " *
                      "maxpool 2 name=p; conv 1 2 sigmoid; concat p; globalavgpool; flatten; dropout 0.5; " *
                      "dense 6; layernorm; dense 3 tanh; softmax")
        SNN.initialise!(m; seed=3)
        SNN.layer_weight(m, 3) .= Float32[0.5, 1, 1.5, 2]                     # batchnorm's scale
        SNN.layer_bias(m, 3) .= Float32[0.1, 0, -0.1, 0.2]
        st = SNN.state(m)
        r = SNN.layer_state(m, 3)
        st[r[1:4]] .= Float32[0.2, -0.1, 0, 0.3]                            # running mean
        st[r[5:8]] .= Float32[1.5, 0.5, 2, 1]                               # running variance
        SNN.set_state!(m, st)
        SNN.layer_weight(m, 13) .= Float32[0.5, 1, 1.5, 2, -1, 1]           # layernorm
        SNN.layer_bias(m, 13) .= 0.1f0
        SNN.layer_weight(m, 12) .*= 4                                       # a wide spread into layernorm
        f = SNN.to_flux(m)
        Flux.testmode!(f)
        @test f[2] isa Flux.SkipConnection && f[4] isa Flux.SkipConnection
        @test size(f[4].connection(ones(Float32, 1, 1, 2, 1), ones(Float32, 1, 1, 4, 1))) == (1, 1, 6, 1)
        x = reshape(Float32[3 * sin(0.61f0 * i) for i in 1:6 * 6 * 2 * 4], 6, 6, 2, 4)
        @test f(x) ≈ m(x) rtol=1e-3 atol=1e-5
        # and back: the same spec, parameters and state, bit for bit
        round_trip = SNN.from_flux(f; input=(6, 6, 2))
        @test SNN.get_parameters(round_trip) == SNN.get_parameters(m)
        @test SNN.state(round_trip) == SNN.state(m)
        e = errorof(() -> SNN.to_flux(SNN.Model("input seq 4x3; lstm 5 last; dense 2")))
        @test e isa ArgumentError && occursin("sequences", e.msg)
        foreach(close, (model, snn_cnn, m, round_trip))
    end
end
