# Models: creation, description, parameters, state, files and devices.

Model(spec::AbstractString) = Model(new_handle(out -> snn_model_create(spec, out)))

function Model(c::Chain)
    b = builder(c)
    m = Model(join(b.lines, "; "))
    try
        check_built(m, b)
    catch
        close(m)
        rethrow()
    end
    m
end

"""
    chain(layers...)

SimpleNNs' constructor: `chain(Static(1), SNN.Dense(10, activation_fn=tanh), SNN.Dense(1))`
is `Model(SNN.Chain(...))`.
"""
chain(layers...) = Model(Chain(layers...))

# What the chain asked for against the shapes snn inferred: the sizes layers
# declared (Dense(in => out), Conv(k, in => out), BatchNorm(channels),
# LayerNorm(size...), the sequence layers' inputs, Embedding's vocabulary),
# and that each concatenation and softmax computes in Julia, on a batch of 2
# samples of the shapes that reach it, what snn's computes (on the features
# of vectors and sequences, the channels of images).
function check_built(m::Model, b::SpecBuilder)
    for (layer, id, connection) in b.joins
        branch, skip = sample_shape(m, layer - 1), sample_shape(m, id)
        d = joined_along(connection, probe((branch..., 2)), probe((skip..., 2), 1))
        want = snn_dimension(branch)
        d == want || throw(DimensionMismatch(
            "SkipConnection's $(repr(connection)) joins batches of $branch and $skip samples " *
            "$(describe_dimension(branch, d)), where snn's concat joins their $(dimension_names(branch)[want]) " *
            "(vcat on vectors, (a, b) -> cat(a, b; dims=3) on images)"))
    end
    for (layer, f) in b.softmaxes
        shape = sample_shape(m, layer - 1)
        x, want = probe((shape..., 2)), snn_dimension(shape)
        is_softmax_over(f, x, want) || throw(DimensionMismatch(
            "$(repr(f)) on a batch of $shape samples is a softmax $(describe_dimension(shape, softmax_along(f, x))), " *
            "where snn's softmax is over their $(dimension_names(shape)[want]) " *
            "(softmax(x; dims=1) on vectors and sequences, " *
            "x -> softmax(x; dims=3) on images, or SNN.softmax on both)"))
    end
    check_declared(m, b.declared)
end

function check_declared(m::Model, declared)
    for (before, l) in declared
        c, h, w = layer_shape(m, before)
        got = sample_shape(m, before)
        # dense and layernorm act on each step of a sequence: its features
        features = length(got) == 2 ? got[1] : c * h * w
        if l isa Dense && l.in !== nothing && l.in != features
            throw(DimensionMismatch("Dense($(l.in) => $(l.out)) receives $features features (shape $got)"))
        elseif l isa Conv && l.in !== nothing && l.in != c
            throw(DimensionMismatch("Conv($(l.kernel), $(l.in) => $(l.out)) receives $c channels (shape $got)"))
        elseif l isa BatchNorm && l.channels !== nothing && l.channels != c
            throw(DimensionMismatch("BatchNorm($(l.channels)) receives $c channels (shape $got)"))
        elseif l isa LayerNorm && !isempty(l.size) && l.size != (length(got) == 2 ? (got[1],) : got)
            throw(DimensionMismatch("LayerNorm$(l.size) receives shape $got"))
        elseif l isa Union{LSTM,GRU,Conv1d} && l.in !== nothing && l.in != c
            throw(DimensionMismatch("$(nameof(typeof(l)))($(l.in) => $(l.out)) receives $c features (shape $got)"))
        elseif l isa MultiHeadAttention && l.dims != c
            throw(DimensionMismatch("MultiHeadAttention($(l.dims)) receives $c features (shape $got)"))
        elseif l isa Embedding && l.vocab != input_sequence(m).vocab
            throw(DimensionMismatch("Embedding($(l.vocab) => $(l.dims)) receives ids of a vocabulary of " *
                                    "$(input_sequence(m).vocab)"))
        end
    end
end

"The canonical spec of the model (which `Model(spec)` parses back into the same model)."
function describe(m::Model)
    len = Ref{Csize_t}(0)
    check(snn_model_describe(m, C_NULL, 0, len))
    buf = Vector{UInt8}(undef, len[] + 1)
    GC.@preserve buf check(snn_model_describe(m, pointer(buf), length(buf), len))
    String(buf[1:len[]])
end

Base.show(io::IO, m::Model) = print(io, "SNN.Model(\"", isopen(m) ? describe(m) : "closed", "\")")

# One count out of a C function taking (handle, out-pointer): T is the
# pointer's element type (Csize_t or Int64).
function count_query(f, h, ::Type{T}=Csize_t) where {T}
    n = Ref{T}(0)
    check(f(h, n))
    Int(n[])
end
"Number of input features per sample (w*h*c for images)."
input_size(m::Model) = count_query(snn_model_input_size, m)
"Number of outputs per sample."
output_size(m::Model) = count_query(snn_model_output_size, m)
"Total number of parameters."
parameter_count(m::Model) = count_query(snn_parameter_count, m)
"Number of values in the model's state (batchnorm's running statistics)."
state_count(m::Model) = count_query(snn_state_count, m)

"Number of layers, the input included (layer 0 is the input)."
layer_count(m::Model) = count_query(snn_model_layer_count, m, Int64)

"The output shape of layer `layer` (0 is the input) as snn reports it: (channels, height, width)."
function layer_shape(m::Model, layer::Integer)
    c, h, w = Ref{Int64}(0), Ref{Int64}(0), Ref{Int64}(0)
    check(snn_model_layer_shape(m, Int64(layer), c, h, w))
    (Int(c[]), Int(h[]), Int(w[]))
end

# A sample's shape in Julia's order: (n,) for vectors, (w, h, c) for images.
julia_shape((c, h, w)) = h == 1 && w == 1 ? (c,) : (w, h, c)

"""
    input_sequence(model) -> (steps=..., vocab=...)

The input of a sequence model: `steps` T of `input seq TxF` and `input tokens
T vocab=V` (0 when the input is not a sequence) and `vocab` V of token ids (0
for a model of floats).
"""
function input_sequence(m::Model)
    steps, vocab = Ref{Int64}(0), Ref{Int64}(0)
    check(snn_model_input_sequence(m, steps, vocab))
    (steps=Int(steps[]), vocab=Int(vocab[]))
end

# Layer `layer`'s output sample in Julia's order: (n,) for vectors, (w, h, c)
# for images, (features, steps) for sequences, (steps,) for token ids. snn
# reports a sequence as F channels, T rows and 1 column; a model whose input
# is a sequence keeps sequences or ends in vectors, never images.
function sample_shape(m::Model, layer::Integer)
    c, h, w = layer_shape(m, layer)
    seq = input_sequence(m)
    seq.steps == 0 && return julia_shape((c, h, w))
    layer == 0 && return seq.vocab > 0 ? (h,) : (c, h)
    w == 1 && h > 1 ? (c, h) : julia_shape((c, h, w))
end

"The shape of one input sample: `(n,)`, `(features, steps)`, `(w, h, c)`, or `(steps,)` for token ids."
input_shape(m::Model) = sample_shape(m, 0)
"The shape of one output sample: `(n,)`, `(features, steps)` for a sequence, or `(w, h, c)`."
output_shape(m::Model) = sample_shape(m, layer_count(m) - 1)

"1-based ranges of layer `layer`'s weights and bias in `parameters(model)`."
function layer_parameters(m::Model, layer::Integer)
    wo, wc, bo, bc = Ref{Csize_t}(0), Ref{Csize_t}(0), Ref{Csize_t}(0), Ref{Csize_t}(0)
    check(snn_model_layer_params(m, Int64(layer), wo, wc, bo, bc))
    (weights=Int(wo[])+1:Int(wo[] + wc[]), bias=Int(bo[])+1:Int(bo[] + bc[]))
end

# The words of layer `layer`'s line of the canonical spec: ["conv", "3x2", "4", ...].
layer_words(m::Model, layer::Integer) = split(split(describe(m), ';')[layer + 1])

# The Julia size of layer `layer`'s weight of `count` values: snn's row-major
# layout read column-major. Dense and layernorm on a sequence act on each
# step's features; the weights of other layers are flat.
function weight_size(m::Model, layer::Integer, count::Integer)
    words = layer_words(m, layer)
    input, output = sample_shape(m, layer - 1), sample_shape(m, layer)
    sequence = length(input) == 2
    if words[1] == "dense"
        (sequence ? input[1] : prod(input), output[1])
    elseif words[1] == "conv"
        k = parse.(Int, split(words[2], 'x'))
        (k[end], k[1], input[end], output[end])
    elseif words[1] == "conv1d"
        (parse(Int, words[2]), input[1], output[1])
    elseif words[1] == "embedding"
        (output[1], input_sequence(m).vocab)
    elseif words[1] == "posembed"
        input
    elseif words[1] == "batchnorm"
        (input[end],)
    elseif words[1] == "layernorm"
        sequence ? (input[1],) : input
    else
        (Int(count),)
    end
end

# A view of `range` (1-based, in parameters(model)) of size `dims`, or an
# ArgumentError naming the layer when it has no such parameters.
function parameter_view(m::Model, layer::Integer, range, what, dims)
    isempty(range) && throw(ArgumentError("layer $layer ($(layer_words(m, layer)[1])) has no $what"))
    HostView(m, parameters(m).ptr + (first(range) - 1) * sizeof(Float32), dims())
end

"""
    layer_weight(model, layer) -> AbstractArray{Float32}

Zero-copy view of layer `layer`'s weight in a CPU model's parameters, shaped
as Flux holds it. Writes go to the model; like `parameters`, it keeps the
model alive and refuses to be used after `close` or `move!`.

- dense: an `(out, in)` matrix, a `PermutedDimsArray` of snn's `[out][in]`
  row-major memory, which is Julia's column-major `(in, out)` (`parent(W)`);
  `W * x` works on it as on Flux's weight.
- conv: `(kw, kh, in, out)`, snn's `[out][in][kh][kw]` memory as it lies:
  the layout of Flux's weights, for a cross-correlation (Flux's `CrossCor`;
  Flux's `Conv` flips the kernel, `w[end:-1:1, end:-1:1, :, :]`).
- conv1d: `(k, in, out)`, snn's `[out][in][k]`: Flux's 1-D `Conv` layout.
- embedding: `(dims, vocab)`, snn's `[vocab][dims]`: Flux's `Embedding` layout
  (column `id + 1` is the vector of `id`).
- batchnorm: `(channels,)`; layernorm: the sample's shape, `(n,)` or `(w, h, c)`,
  or `(features,)` on a sequence.
- posembed: `(features, steps)`, snn's `[T][F]`: the sequence's own shape.
- other layers (lstm, gru, attention): the flat weight, as
  `layer_parameters` lays it out.

Throws an `ArgumentError` for a layer without weight.
"""
function layer_weight(m::Model, layer::Integer)
    r = layer_parameters(m, layer).weights
    w = parameter_view(m, layer, r, "weight", () -> weight_size(m, layer, length(r)))
    layer_words(m, layer)[1] == "dense" ? PermutedDimsArray(w, (2, 1)) : w
end

"""
    layer_bias(model, layer) -> AbstractArray{Float32}

Zero-copy view of layer `layer`'s bias in a CPU model's parameters: `(out,)`
for dense and convolution layers, the weight's shape for batchnorm and
layernorm, flat for the others. Throws an `ArgumentError` for a layer without
bias (`bias=false`).
"""
function layer_bias(m::Model, layer::Integer)
    r = layer_parameters(m, layer).bias
    norm = layer_words(m, layer)[1] in ("batchnorm", "layernorm")
    parameter_view(m, layer, r, "bias", () -> norm ? weight_size(m, layer, length(r)) : (length(r),))
end

"1-based range of layer `layer`'s values in `state(model)` (empty for layers without state)."
function layer_state(m::Model, layer::Integer)
    offset, count = Ref{Csize_t}(0), Ref{Csize_t}(0)
    check(snn_model_layer_state(m, Int64(layer), offset, count))
    Int(offset[])+1:Int(offset[] + count[])
end

"    initialise!(model; seed=0)  — re-initialises every parameter from `seed` (biases zero)."
initialise!(m::Model; seed::Integer=0) = (check(snn_model_init(m, UInt64(seed))); m)

"""
    parameters(model) -> HostView

Zero-copy view of a CPU model's flat parameter vector (writable), laid out
layer after layer as `layer_parameters` says. It keeps the model alive; using
it after `close(model)` or `move!(model, ...)` throws an ArgumentError. A GPU
model has no host view: use `get_parameters`.
"""
function parameters(m::Model)
    raw_device(m) == SNN_DEVICE_CPU ||
        throw(ArgumentError("parameters(model) views CPU memory; the model is on GPU $(raw_device(m)): use get_parameters"))
    data, n = Ref{Ptr{Cfloat}}(C_NULL), Ref{Csize_t}(0)
    check(snn_parameters(m, data, n))
    HostView(m, data[], (Int(n[]),))
end

"Copies the parameters out (any device)."
function get_parameters(m::Model)
    dst = Vector{Float32}(undef, parameter_count(m))
    GC.@preserve dst check(snn_get_parameters(m, pointer(dst), length(dst)))
    dst
end

"""
    set_parameters!(model, src)

Copies the parameters in (any device); `length(src)` must be
`parameter_count(model)`. `src` passes by pointer when it can (see
`by_pointer`), else it is converted into a new array first.
"""
function set_parameters!(m::Model, src::AbstractVector{<:Real})
    v = host_floats(src)
    GC.@preserve v check(snn_set_parameters(m, pointer(v), length(v)))
    m
end

"""
    state(model) -> Vector{Float32}

A copy of the model's non-trainable state: each batchnorm's running_mean,
running_var and num_batches_tracked, layer after layer (see `layer_state`).
"""
function state(m::Model)
    dst = Vector{Float32}(undef, state_count(m))
    GC.@preserve dst check(snn_get_state(m, isempty(dst) ? Ptr{Cfloat}(C_NULL) : pointer(dst), length(dst)))
    dst
end

"Overwrites the model's state; `length(src)` must be `state_count(model)` (passed as by `set_parameters!`)."
function set_state!(m::Model, src::AbstractVector{<:Real})
    v = host_floats(src)
    GC.@preserve v check(snn_set_state(m, isempty(v) ? Ptr{Cfloat}(C_NULL) : pointer(v), length(v)))
    m
end

# --- files ---------------------------------------------------------------------

"    save(path, model)  — writes a model file (safetensors), atomically; any device."
save(path::AbstractString, m::Model) = (check(snn_model_save(m, path)); nothing)
"    load(path) -> Model  — reads a model file onto the CPU."
load(path::AbstractString) = Model(new_handle(out -> snn_model_load(path, out)))

"The model file's bytes (for game assets, network transfer...)."
function to_bytes(m::Model)
    n = Ref{Csize_t}(0)
    check(snn_model_save_to_buffer(m, C_NULL, 0, n))
    bytes = Vector{UInt8}(undef, n[])
    GC.@preserve bytes check(snn_model_save_to_buffer(m, pointer(bytes), length(bytes), n))
    bytes
end
"A CPU model from a model file's bytes."
from_bytes(bytes::Vector{UInt8}) =
    GC.@preserve bytes Model(new_handle(out -> snn_model_load_from_buffer(pointer(bytes), length(bytes), out)))

Base.read(io::IO, ::Type{Model}) = from_bytes(read(io))

# --- ONNX ---------------------------------------------------------------------

export_options(lengths::Bool) = SnnOnnxExportOptions(sizeof(SnnOnnxExportOptions), Int32(lengths))
import_options(sequence_length::Integer, batch::Integer) =
    SnnOnnxImportOptions(sizeof(SnnOnnxImportOptions), Int64(sequence_length), Int64(batch))

"""
    export_onnx(path, model; lengths=false)
    export_onnx(model; lengths=false) -> Vector{UInt8}

Writes the model as an ONNX file (opset 17, symbolic batch; atomically), or
returns the file's bytes. `lengths=true` gives a sequence model a second
input "lengths" (Int32 per sample), as `set_lengths!`.
"""
export_onnx(path::AbstractString, m::Model; lengths::Bool=false) =
    (check(snn_model_export_onnx(m, export_options(lengths), path)); nothing)
function export_onnx(m::Model; lengths::Bool=false)
    o = export_options(lengths)
    n = Ref{Csize_t}(0)
    check(snn_model_export_onnx_to_buffer(m, o, C_NULL, 0, n))
    bytes = Vector{UInt8}(undef, n[])
    GC.@preserve bytes check(snn_model_export_onnx_to_buffer(m, o, pointer(bytes), length(bytes), n))
    bytes
end

"""
    import_onnx(path; sequence_length=0, batch=0) -> Model
    import_onnx(bytes::Vector{UInt8}; sequence_length=0, batch=0) -> Model

A CPU model from an ONNX file (what `torch.onnx.export` writes for the models
snn holds, or `export_onnx`), ready to run and to train. `sequence_length`
gives the steps of a sequence input the file leaves symbolic. A file snn
cannot represent throws an `SNNError` whose message lists every node that
cannot be mapped.
"""
import_onnx(path::AbstractString; sequence_length::Integer=0, batch::Integer=0) =
    Model(new_handle(out -> snn_model_import_onnx(path, import_options(sequence_length, batch), out)))
import_onnx(bytes::Vector{UInt8}; sequence_length::Integer=0, batch::Integer=0) =
    GC.@preserve bytes Model(new_handle(out -> snn_model_import_onnx_from_buffer(
        pointer(bytes), length(bytes), import_options(sequence_length, batch), out)))
Base.write(io::IO, m::Model) = write(io, to_bytes(m))

# --- devices -------------------------------------------------------------------

function raw_device(m::Model)
    d = Ref{Int32}(0)
    check(snn_model_device(m, d))
    d[]
end
"Where the model lives: `:cpu` or a GPU index."
device(m::Model) = device_symbol(raw_device(m))

"""
    gpu(model; device=0) -> Model

A copy of `model` on GPU `device` (parameters and state), as SimpleNNs'
`gpu_model = gpu(cpu_model)`: the original stays on the CPU, with its caches,
optimisers and views. A model already there is returned as is. Throws an
`SNNError` saying why when no GPU can be used.
"""
function gpu(m::Model; device::Integer=0)
    d = device_index(device)
    raw_device(m) == d && return m
    g = from_bytes(to_bytes(m))
    try
        check(snn_to_gpu(g, d))
    catch
        close(g)
        rethrow()
    end
    g
end

"    cpu(model) -> Model  — a CPU copy of a GPU model; a CPU model is returned as is."
cpu(m::Model) = raw_device(m) == SNN_DEVICE_CPU ? m : from_bytes(to_bytes(m))

"""
    move!(model, device)

Moves the model itself to `device` (`:cpu` or a GPU index), for when memory
allows only one copy. Its caches and optimisers follow on their next use with
it; views taken before (`parameters`, `get_outputs`, `gradients`) refuse to be
used afterwards. Prefer `gpu(model)`.
"""
function move!(m::Model, device)
    d = device_index(device)
    before = raw_device(m)
    check(d == SNN_DEVICE_CPU ? snn_to_cpu(m) : snn_to_gpu(m, d))
    raw_device(m) == before || (m.moves += 1)
    m
end

"    to_best_device!(model) -> :cpu or a GPU index  — moves the model itself to GPU 0 when one can be used."
function to_best_device!(m::Model)
    before = raw_device(m)
    d = Ref{Int32}(0)
    check(snn_to_best_device(m, d))
    d[] == before || (m.moves += 1)
    device_symbol(d[])
end

# --- inference in one call -------------------------------------------------------

"""
    model(x)

Runs the model on `x` in inference mode (`testmode!`) and returns a copy of
the outputs: a `Vector` (or a `(w, h, c)` array) for one sample, a
`(outputs, batch)` matrix (or `(w, h, c, batch)`) for a batch. Allocates a
cache each call: for loops, use `preallocate` and `forward!`.
"""
function (m::Model)(x::AbstractArray{<:Real})
    batch, one_sample = batch_of(input_shape(m), x)
    c = preallocate(m, batch)
    try
        testmode!(c)
        set_inputs!(c, x)
        forward!(c, m)
        out = get_outputs(c)
        result = Array{Float32}(out)
        one_sample ? reshape(result, output_shape(m)) : result
    finally
        close(c)
    end
end

# --- Flux models ---------------------------------------------------------------
# The methods live in the SNNFluxExt extension (ext/SNNFluxExt.jl), loaded with
# Flux; without it these say so.

"""
    from_flux(chain::Flux.Chain; input=nothing) -> Model

An snn model with the layers and weights of a Flux chain (load Flux first:
the method lives in the `SNNFluxExt` extension). `input` is the sample's
shape, as for `Chain` (`n`, or `(w, h, c)` for images); a chain that begins
with `Dense` states its own. The layers are Flux's `Dense`, `Conv` and
`CrossCor` (2-D, no dilation or groups, the same padding on both sides),
`BatchNorm` (with its running statistics), `LayerNorm`, `MaxPool`,
`MeanPool`, `GlobalMeanPool`, `Dropout`, `SkipConnection` (`+` or a
concatenation), nested `Chain`s, activation functions, `flatten` and
`softmax`; anything else throws an `ArgumentError` naming it.

The weights are copied into snn's layout: a `Dense` weight (out, in) becomes
snn's `[out][in]`; a `Conv` kernel is flipped in both spatial dimensions, as
Flux's `Conv` convolves where snn (like PyTorch and Flux's `CrossCor`)
cross-correlates; a `BatchNorm` gives its scale, shift, running mean and
variance, ϵ and momentum; a `LayerNorm` its scale and bias (1 and 0 without
`affine`). The model is on the CPU, and Flux's model in `testmode!` and the
snn model in inference mode compute the same outputs (to rounding; see the
README for `LayerNorm`).
"""
from_flux(x; input=nothing) =
    throw(ArgumentError("SNN.from_flux takes a Flux.Chain and needs Flux loaded (`using Flux` or `import Flux`); " *
                        "got $(typeof(x))"))

"""
    to_flux(model) -> Flux.Chain

A Flux chain with the layers and weights of an snn model (load Flux first:
the method lives in the `SNNFluxExt` extension), the inverse of `from_flux`:
`Dense`, `Conv` (the kernel flipped back: Flux's `Conv` convolves),
`BatchNorm` with the model's running statistics, `LayerNorm`, `MaxPool`,
`MeanPool`, `GlobalMeanPool`, `Dropout`, activation functions, `flatten`,
`softmax` (over the channels of images), and `SkipConnection` for a layer
named and later added or concatenated. Models of sequences or token ids,
and layers that read an earlier layer (`from=`), throw an `ArgumentError`.
The weights are copies: the chain does not share memory with the model.
"""
to_flux(x) =
    throw(ArgumentError("SNN.to_flux takes an SNN.Model and needs Flux loaded (`using Flux` or `import Flux`); " *
                        "got $(typeof(x))"))
