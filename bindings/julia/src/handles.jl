# Owned handles: each frees its native object in a finalizer and in `close`,
# whichever comes first, in any order (the library allows it). Caches keep their
# model reachable and the sizes they need, so after `close(model)` they answer
# every call that takes only the cache; a call given a closed handle (such as
# `forward!(cache, closed_model)`) throws an ArgumentError and never passes a
# dangling pointer.

function destroy!(x, f)
    if x.ptr != C_NULL
        f(x.ptr)
        x.ptr = C_NULL
    end
    nothing
end

function live(x)
    x.ptr == C_NULL && throw(ArgumentError("this SNN.$(nameof(typeof(x))) has been closed"))
    x.ptr
end

"A network: its layers and its flat parameter vector."
mutable struct Model
    ptr::Ptr{Cvoid}
    function Model(ptr::Ptr{Cvoid})
        m = new(ptr)
        finalizer(close, m)
    end
end

Base.close(m::Model) = destroy!(m, snn_model_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, m::Model) = live(m)

function new_handle(f)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(f(out))
    out[]
end

"    Model(spec::AbstractString)  — parses a textual snn spec."
Model(spec::AbstractString) = Model(new_handle(out -> snn_model_create(spec, out)))

"""
    chain(layers...)

Builds a model from SimpleNNs-style layers, e.g.
`chain(Static((28, 28, 1)), Conv((5, 5), 16, activation_fn=relu), MaxPool((2, 2)), Flatten(), Dense(10))`.
"""
chain(layers::Layer...) = Model(spec(layers...))

"The canonical spec of the model."
function describe(m::Model)
    len = Ref{Csize_t}(0)
    check(snn_model_describe(m, C_NULL, 0, len))
    buf = Vector{UInt8}(undef, len[] + 1)
    GC.@preserve buf check(snn_model_describe(m, pointer(buf), length(buf), len))
    String(buf[1:len[]])
end

Base.show(io::IO, m::Model) = print(io, "SNN.Model(\"", m.ptr == C_NULL ? "closed" : describe(m), "\")")

function size_query(f, m)
    n = Ref{Csize_t}(0)
    check(f(m, n))
    Int(n[])
end
input_size(m::Model) = size_query(snn_model_input_size, m)
output_size(m::Model) = size_query(snn_model_output_size, m)
parameter_count(m::Model) = size_query(snn_parameter_count, m)

function layer_count(m::Model)
    n = Ref{Int64}(0)
    check(snn_model_layer_count(m, n))
    Int(n[])
end

"The output shape of layer `layer` (0 is the input) as (channels, height, width)."
function layer_shape(m::Model, layer::Integer)
    c, h, w = Ref{Int64}(0), Ref{Int64}(0), Ref{Int64}(0)
    check(snn_model_layer_shape(m, layer, c, h, w))
    (Int(c[]), Int(h[]), Int(w[]))
end

"1-based ranges of layer `layer`'s weights and bias in `parameters(model)`."
function layer_parameters(m::Model, layer::Integer)
    wo, wc, bo, bc = Ref{Csize_t}(0), Ref{Csize_t}(0), Ref{Csize_t}(0), Ref{Csize_t}(0)
    check(snn_model_layer_params(m, layer, wo, wc, bo, bc))
    (weights=Int(wo[])+1:Int(wo[]+wc[]), bias=Int(bo[])+1:Int(bo[]+bc[]))
end

"    initialise!(model; seed=0)  — re-initialises every parameter (biases zero)."
initialise!(m::Model; seed::Integer=0) = (check(snn_model_init(m, UInt64(seed))); m)

"""
    parameters(model)

Zero-copy view of a CPU model's flat parameter vector (writable). It stays
valid while the model is alive and on the CPU: keep `model` referenced while
using it.
"""
function parameters(m::Model)
    data, n = Ref{Ptr{Cfloat}}(C_NULL), Ref{Csize_t}(0)
    check(snn_parameters(m, data, n))
    unsafe_wrap(Array, data[], Int(n[]); own=false)
end

"Copies the parameters out (any device)."
function get_parameters(m::Model)
    dst = Vector{Float32}(undef, parameter_count(m))
    GC.@preserve dst check(snn_get_parameters(m, pointer(dst), length(dst)))
    dst
end

"Copies the parameters in (any device)."
function set_parameters!(m::Model, src::DenseVector{Float32})
    GC.@preserve src check(snn_set_parameters(m, pointer(src), length(src)))
    m
end

function device(m::Model)
    d = Ref{Int32}(0)
    check(snn_model_device(m, d))
    d[] == CPU_DEVICE ? :cpu : Int(d[])
end

"    gpu(model; device=0)  — moves the model to a GPU (an SNNError says why not)."
gpu(m::Model; device::Integer=0) = (check(snn_to_gpu(m, Int32(device))); m)
"    cpu(model)  — moves the model to the CPU."
cpu(m::Model) = (check(snn_to_cpu(m)); m)
"Moves the model to GPU 0 when one can be used; returns where it is (:cpu or an index)."
function to_best_device!(m::Model)
    d = Ref{Int32}(0)
    check(snn_to_best_device(m, d))
    d[] == CPU_DEVICE ? :cpu : Int(d[])
end

"    save(path, model)  — writes a model file (safetensors), atomically."
save(path::AbstractString, m::Model) = check(snn_model_save(m, path))
"    load(path)  — reads a model file onto the CPU."
load(path::AbstractString) = Model(new_handle(out -> snn_model_load(path, out)))

function Base.read(io::IO, ::Type{Model})
    bytes = read(io)
    GC.@preserve bytes Model(new_handle(out -> snn_model_load_from_buffer(pointer(bytes), length(bytes), out)))
end

function Base.write(io::IO, m::Model)
    n = Ref{Csize_t}(0)
    check(snn_model_save_to_buffer(m, C_NULL, 0, n))
    bytes = Vector{UInt8}(undef, n[])
    GC.@preserve bytes check(snn_model_save_to_buffer(m, pointer(bytes), length(bytes), n))
    write(io, bytes)
end

"The buffers of forward passes of `model`, for batches up to a maximum."
mutable struct ForwardCache
    ptr::Ptr{Cvoid}
    model::Model
    outputs::Int
    function ForwardCache(ptr::Ptr{Cvoid}, model::Model, outputs::Int)
        c = new(ptr, model, outputs)
        finalizer(close, c)
    end
end
Base.close(c::ForwardCache) = destroy!(c, snn_forward_cache_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, c::ForwardCache) = live(c)

"    preallocate(model, max_batch)  — every buffer a forward pass needs."
function preallocate(m::Model, max_batch::Integer)
    outputs = output_size(m)
    ForwardCache(new_handle(out -> snn_preallocate(m, Int64(max_batch), out)), m, outputs)
end

function batch_size(c::ForwardCache)
    b, mx = Ref{Int64}(0), Ref{Int64}(0)
    check(snn_cache_batch(c, b, mx))
    (batch=Int(b[]), max_batch=Int(mx[]))
end

"    truncate_batch!(cache, n)  — the next passes use batches of n (≤ max) without reallocating."
truncate_batch!(c::ForwardCache, n::Integer) = (check(snn_cache_set_batch(c, Int64(n))); c)

"""
    set_inputs!(cache, x)

Copies `x` — (features, batch) or (w, h, c, batch), Float32, dense — into the
cache, setting the batch to the last dimension. No intermediate copy is made.
"""
function set_inputs!(c::ForwardCache, x::DenseArray{Float32})
    batch = size(x, ndims(x))
    batch_size(c).batch == batch || truncate_batch!(c, batch)
    GC.@preserve x check(snn_set_inputs(c, pointer(x), length(x)))
    c
end
set_inputs!(c::ForwardCache, x::AbstractArray) = set_inputs!(c, convert(Array{Float32}, x))

"    set_inputs!(cache, data, indices)  — gathers columns `indices` (1-based) of `data`."
function set_inputs!(c::ForwardCache, data::DenseArray{Float32}, indices::AbstractVector{<:Integer})
    idx = Int64[i - 1 for i in indices]
    samples = size(data, ndims(data))
    GC.@preserve data idx check(snn_set_inputs_gather(c, pointer(data), samples, pointer(idx), length(idx)))
    c
end

"""
    set_inputs_device!(cache, ptr, count)

Copies `count` floats already in GPU memory of the cache's device (e.g.
`pointer(cu_array)`); the caller keeps that memory alive during the call.
"""
set_inputs_device!(c::ForwardCache, ptr::Ptr{Cfloat}, count::Integer) =
    (check(snn_set_inputs_device(c, ptr, count)); c)

"    forward!(cache, model)  — runs the model on the cache's inputs."
forward!(c::ForwardCache, m::Model) = (check(snn_forward(c, m)); c)

"""
    get_outputs(cache)

The outputs of the last forward pass as an (outputs, batch) matrix: a
zero-copy view on the CPU (valid until the next `forward!`), a copy on a GPU
or once the model is closed.
"""
function get_outputs(c::ForwardCache)
    if isopen(c.model) && device(c.model) === :cpu
        data, n = Ref{Ptr{Cfloat}}(C_NULL), Ref{Csize_t}(0)
        check(snn_outputs(c, data, n))
        return unsafe_wrap(Array, data[], (c.outputs, Int(n[]) ÷ c.outputs); own=false)
    end
    dst = Matrix{Float32}(undef, c.outputs, batch_size(c).batch)
    GC.@preserve dst check(snn_get_outputs(c, pointer(dst), length(dst)))
    dst
end

"Gradient buffers of `model` for batches up to a maximum."
mutable struct BackwardCache
    ptr::Ptr{Cvoid}
    model::Model
    inputs::Int
    parameters::Int
    function BackwardCache(ptr::Ptr{Cvoid}, model::Model, inputs::Int, parameters::Int)
        c = new(ptr, model, inputs, parameters)
        finalizer(close, c)
    end
end
Base.close(c::BackwardCache) = destroy!(c, snn_backward_cache_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, c::BackwardCache) = live(c)

"    preallocate_grads(model, max_batch)  — the buffers backprop! needs."
function preallocate_grads(m::Model, max_batch::Integer)
    inputs, parameters = input_size(m), parameter_count(m)
    BackwardCache(new_handle(out -> snn_preallocate_grads(m, Int64(max_batch), out)), m, inputs, parameters)
end

"""
    gradients(cache)

Zero-copy view of the flat gradient of the last `backprop!` (CPU), laid out as
`parameters(model)`; a copy on a GPU or once the model is closed.
"""
function gradients(c::BackwardCache)
    if isopen(c.model) && device(c.model) === :cpu
        data, n = Ref{Ptr{Cfloat}}(C_NULL), Ref{Csize_t}(0)
        check(snn_gradients(c, data, n))
        return unsafe_wrap(Array, data[], Int(n[]); own=false)
    end
    dst = Vector{Float32}(undef, c.parameters)
    GC.@preserve dst check(snn_get_gradients(c, pointer(dst), length(dst)))
    dst
end

"    set_gradients!(cache, g)  — overwrites the gradient (e.g. averaged over workers) before update!."
function set_gradients!(c::BackwardCache, g::Vector{Float32})
    GC.@preserve g check(snn_set_gradients(c, pointer(g), length(g)))
    c
end

"    input_gradients!(cache, true)  — makes backprop! also compute the gradient of the inputs."
input_gradients!(c::BackwardCache, enabled::Bool) = (check(snn_set_input_gradient(c, Int32(enabled))); c)

"The gradient with respect to the inputs, shaped as the inputs of `fwd`."
function input_gradients(c::BackwardCache, fwd::ForwardCache)
    dst = Matrix{Float32}(undef, c.inputs, batch_size(fwd).batch)
    GC.@preserve dst check(snn_get_input_gradients(c, pointer(dst), length(dst)))
    dst
end

"An optimiser's state for one model."
mutable struct Optimiser
    ptr::Ptr{Cvoid}
    function Optimiser(ptr::Ptr{Cvoid})
        o = new(ptr)
        finalizer(close, o)
    end
end
Base.close(o::Optimiser) = destroy!(o, snn_optimiser_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, o::Optimiser) = live(o)

"    save_checkpoint(path, model, optimiser)  — model plus optimiser state, atomically."
save_checkpoint(path::AbstractString, m::Model, o::Optimiser) = check(snn_checkpoint_save(m, o, path))

"    load_checkpoint(path) -> (model, optimiser)"
function load_checkpoint(path::AbstractString)
    m, o = Ref{Ptr{Cvoid}}(C_NULL), Ref{Ptr{Cvoid}}(C_NULL)
    check(snn_checkpoint_load(path, m, o))
    (Model(m[]), Optimiser(o[]))
end

"A data set copied once to a device (`:cpu` or a GPU index), gathered from by index."
mutable struct Dataset
    ptr::Ptr{Cvoid}
    function Dataset(ptr::Ptr{Cvoid})
        d = new(ptr)
        finalizer(close, d)
    end
end
Base.close(d::Dataset) = destroy!(d, snn_dataset_destroy)
Base.unsafe_convert(::Type{Ptr{Cvoid}}, d::Dataset) = live(d)

"""
    Dataset(samples; labels=nothing, device=:cpu)

`samples` is (features, n) or (w, h, c, n); `labels` 1-based classes, one per sample.
"""
function Dataset(samples::DenseArray{Float32}; labels=nothing, device=:cpu)
    n = size(samples, ndims(samples))
    dev = device === :cpu ? CPU_DEVICE : Int32(device)
    lab = labels === nothing ? nothing : Int32[l - 1 for l in labels]
    ptr = GC.@preserve samples lab new_handle(out -> snn_dataset_create(dev, pointer(samples), n, length(samples) ÷ n,
        lab === nothing ? Ptr{Int32}(C_NULL) : pointer(lab), out))
    Dataset(ptr)
end

"Whether a handle is still open (not yet `close`d)."
Base.isopen(x::Union{Model,ForwardCache,BackwardCache,Optimiser,Dataset}) = x.ptr != C_NULL

"    set_inputs!(cache, dataset, indices)  — gathers samples (1-based) of a data set."
function set_inputs!(c::ForwardCache, d::Dataset, indices::AbstractVector{<:Integer})
    idx = Int64[i - 1 for i in indices]
    GC.@preserve idx check(snn_set_inputs_from_dataset(c, d, pointer(idx), length(idx)))
    c
end
