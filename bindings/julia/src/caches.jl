# Forward and backward caches: inputs, modes, forward passes, outputs and
# gradients. Arrays pass by pointer: a Julia (features, batch) matrix,
# (features, steps, batch) or (w, h, c, batch) array of Float32 is exactly
# snn's [batch][features] / [batch][T][F] / [batch][c][h][w] memory, and a
# (steps, batch) Int32 matrix of token ids snn's [batch][T] (see arrays.jl
# for the others).

"""
    batch_of(shape, x) -> (batch, one_sample)

How `x` lays out samples of `shape` ((n,), (features, steps) or (w, h, c)):
an array of that shape is one sample, one more dimension counts the batch; a
`Vector` of all the sample's values is one sample and a `Matrix` of them
(values, batch) a batch; a vector's features may also come as one (w, h, c)
image or a (w, h, c, batch) array. Throws a DimensionMismatch otherwise.
"""
function batch_of(shape::NTuple{K,Int}, x::AbstractArray{<:Any,N}) where {K,N}
    n = prod(shape)
    # K and N are constants here: no tuple of a size known only at run time
    single, batch = if N == K && size(x) == shape
        (true, 1)
    elseif N == K + 1 && ntuple(d -> size(x, d), Val(K)) == shape
        (false, size(x, N))
    elseif N == 1 && length(x) == n
        (true, 1)
    elseif N == 2 && size(x, 1) == n
        (false, size(x, 2))
    elseif K == 1 && (N == 3 || N == 4) && size(x, 1) * size(x, 2) * size(x, 3) == n
        (N == 3, N == 4 ? size(x, 4) : 1)
    else
        throw(DimensionMismatch("the model takes samples of shape $shape ($n values): an array of that shape is one " *
                                "sample and one more dimension is the batch (a Vector and a (values, batch) Matrix " *
                                "work too); got an array of size $(size(x))"))
    end
    batch >= 1 || throw(ArgumentError("an empty batch (size $(size(x)))"))
    (batch, single)
end

"""
    preallocate(model, max_batch; precision=:float32) -> ForwardCache

Every buffer a forward pass of `model` needs for batches up to `max_batch`, on
the model's device. The cache starts in training mode (`trainmode!`), as a
PyTorch module does, with its batch at `max_batch`, and computes in
`precision` (`:float32`, `:bf16` or `:fp16`; see `SNN.precision!`).
"""
function preallocate(m::Model, max_batch::Integer; precision::Symbol=:float32)
    code = precision_code(precision)
    d = raw_device(m)
    ins, outs, tokens = input_shape(m), output_shape(m), input_sequence(m).vocab > 0
    c = ForwardCache(new_handle(out -> snn_preallocate(m, Int64(max_batch), out)), m, d, ins, outs, tokens)
    code == SNN_PRECISION_FLOAT32 && return c
    try
        check(snn_cache_set_precision(c, code))
    catch
        close(c)
        rethrow()
    end
    c
end

"""
    inference_cache(model, max_batch; precision=:float32) -> ForwardCache

A forward cache made for inference: `preallocate` then `testmode!`, so
batchnorm uses the model's running statistics without changing them and
dropout passes its input through. (A cache from `preallocate` starts in
training mode.) Give it to `predict!`, or to `set_inputs!`/`forward!`.
"""
function inference_cache(m::Model, max_batch::Integer; precision::Symbol=:float32)
    c = preallocate(m, max_batch; precision)
    try
        testmode!(c)
    catch
        close(c)
        rethrow()
    end
    c
end

"""
    predict!(cache, model, x) -> outputs

One inference pass in one call: `set_inputs!(cache, x)`, `forward!`, and the
outputs shaped as the model gives them. For a batch (a Matrix of
(features, batch), a (w, h, c, batch) or (features, steps, batch) array),
`get_outputs(cache)`: (outputs, batch), (w, h, c, batch) or
(outputs, steps, batch). For one sample (a Vector, one (w, h, c) image or one
(features, steps) sequence), that sample's outputs: `(outputs,)`,
`(w, h, c)` or `(outputs, steps)`. On the CPU these are zero-copy views of
the cache's memory, valid until its next pass (`copy` keeps them); a GPU
cache gives host copies.

The cache must be an inference cache (`inference_cache`, or `testmode!`): a
training cache throws an `ArgumentError`, since its pass would drop
activations and move batchnorm's running statistics. `model(x)` does the
same for a one-off call, with a cache of its own.
"""
function predict!(c::ForwardCache, m::Model, x::AbstractArray{<:Real})
    istraining(c) && throw(ArgumentError(
        "predict! runs inference, but this cache is in training mode (dropout drops, batchnorm updates its " *
        "running statistics): make it with inference_cache(model, max_batch), or call SNN.testmode!(cache)"))
    _, one_sample = batch_of(c.input_shape, x)
    set_inputs!(c, x)
    forward!(c, m)
    one_sample ? sample_outputs(get_outputs(c), c.output_shape) : get_outputs(c)
end

# The outputs of a batch of one, shaped as one sample.
sample_outputs(out::HostView, shape) = HostView(out.owner, out.ptr, shape)
sample_outputs(out::Array, shape) = reshape(out, shape)

"The cache's current and maximum batch size, `(batch=..., max_batch=...)`."
function batch_size(c::ForwardCache)
    b, mx = Ref{Int64}(0), Ref{Int64}(0)
    check(snn_cache_batch(c, b, mx))
    (batch=Int(b[]), max_batch=Int(mx[]))
end

"    truncate_batch!(cache, n)  — the next passes use batches of n (≤ max_batch) without reallocating."
truncate_batch!(c::ForwardCache, n::Integer) = (check(snn_cache_set_batch(c, Int64(n))); c)

"""
    trainmode!(cache, on=true)

Training mode for the cache's forward passes: batchnorm uses the batch's
statistics and updates the model's running statistics; dropout drops. Modes
belong to caches, not to models, so a training cache and an inference cache
may serve one model at once.
"""
trainmode!(c::ForwardCache, on::Bool=true) = (check(snn_cache_set_training(c, Int32(on))); c)
"    testmode!(cache, on=true)  — inference mode: running statistics, no dropout; the pass only reads the model."
testmode!(c::ForwardCache, on::Bool=true) = trainmode!(c, !on)
# Flux sets modes on models; in snn they belong to caches: say so, rather than a MethodError.
trainmode!(::Model, _...) = throw(ArgumentError("modes belong to forward caches in snn: trainmode!(cache) / testmode!(cache)"))
testmode!(m::Model, _...) = trainmode!(m)

"Whether the cache's forward passes run in training mode."
function istraining(c::ForwardCache)
    on = Ref{Int32}(0)
    check(snn_cache_training(c, on))
    on[] != 0
end

"""
    seed!(cache, seed)

Seeds the cache's dropout masks and restarts their sequence: the masks of the
following training passes depend only on the seed, the passes since and the
layer (the same on the CPU and a GPU). A new cache has seed 0.
"""
seed!(c::ForwardCache, seed::Integer) = (check(snn_cache_set_seed(c, UInt64(seed))); c)

"""
    rngstate(cache) -> (seed=..., passes=...)

The cache's dropout generator state: the seed last set (`seed!`, 0 for a new
cache) and the number of training passes run since (inference passes do not
count), as `UInt64`s. Together they decide the masks of the next training
pass: save them with a checkpoint and give them to `rngstate!` to resume a
model with dropout bit for bit.
"""
function rngstate(c::ForwardCache)
    seed, passes = Ref{UInt64}(0), Ref{UInt64}(0)
    check(snn_cache_rng_state(c, seed, passes))
    (seed=seed[], passes=passes[])
end

"""
    rngstate!(cache, state) / rngstate!(cache, seed, passes)

Restores a dropout generator state read by `rngstate` (a value with fields
`seed` and `passes`), in this or any cache of a model with the same layers,
on the CPU or a GPU: the training passes that follow draw the masks that
followed the reading. `rngstate!(cache, s, 0)` is `seed!(cache, s)`.
"""
rngstate!(c::ForwardCache, seed::Integer, passes::Integer) =
    (check(snn_cache_set_rng_state(c, UInt64(seed), UInt64(passes))); c)
rngstate!(c::ForwardCache, state) = rngstate!(c, state.seed, state.passes)

"""
    set_inputs!(cache, x)

Copies `x` into the cache and sets the batch: a `Vector` is one sample, a
`Matrix` is (features, batch), a 3-D array one (w, h, c) image and a 4-D array
(w, h, c, batch); for a model of sequences (`input seq TxF`) a (features,
steps) matrix is one sample and a (features, steps, batch) array a batch,
and every sample's length becomes T (set lengths after, `set_lengths!`).
Float32 arrays whose elements are adjacent (an `Array`, a
`view(x, :, 3:10)` of whole columns, a `HostView`) pass by pointer, with no
copy in Julia (see `by_pointer`); any other array (Float64, a
non-contiguous view, a transpose) is converted into the cache's staging
buffer, allocated on the first such call and reused by the following ones.
A CuArray goes from GPU memory to a GPU cache (load CUDA.jl).
"""
function set_inputs!(c::ForwardCache, x::AbstractArray{<:Real})
    batch, _ = batch_of(c.input_shape, x)
    batch_size(c).batch == batch || truncate_batch!(c, batch)
    v = floats!(c, x)
    GC.@preserve v check(snn_set_inputs(c, pointer(v), length(x)))
    c.device_inputs = nothing
    c
end

"""
    set_inputs!(cache, data, indices)

Gathers the samples `indices` (1-based, along the last dimension) of `data`,
(features, n) or (w, h, c, n), into the cache: the batch becomes
`length(indices)`. Data that passes by pointer (see `by_pointer`) is read
by the library in place; from any other array only the gathered samples are
converted, into the cache's staging buffer.
"""
function set_inputs!(c::ForwardCache, data::AbstractArray{<:Real}, indices::AbstractVector{<:Integer})
    samples, one_sample = batch_of(c.input_shape, data)
    one_sample && throw(ArgumentError("gathering needs a batch of samples (a Matrix or a 4-D array)"))
    if by_pointer(data)
        idx = zero_based!(c, indices, samples)
        GC.@preserve data idx check(snn_set_inputs_gather(c, pointer(data), samples, pointer(idx), length(indices)))
    else
        n, features = length(indices), length(data) ÷ samples
        batch_size(c).batch == n || truncate_batch!(c, n)
        buffer = staging!(c, n * features)
        for (k, i) in enumerate(indices)
            1 <= i <= samples || throw(BoundsError(1:samples, i))
            copyto!(buffer, (k - 1) * features + 1, data, (i - 1) * features + 1, features)
        end
        GC.@preserve buffer check(snn_set_inputs(c, pointer(buffer), n * features))
    end
    c.device_inputs = nothing
    c
end

"""
    set_inputs!(cache, dataset, indices)

Gathers samples (1-based) of a `Dataset` on the cache's device. A data set of
token ids (`token_dataset`) feeds a model of token ids, and also sets the
gathered samples' lengths when it has them (else every length is T).
"""
function set_inputs!(c::ForwardCache, d::Dataset, indices::AbstractVector{<:Integer})
    idx = zero_based!(c, indices, d.count)
    GC.@preserve idx check(snn_set_inputs_from_dataset(c, d, pointer(idx), length(indices)))
    c.device_inputs = nothing
    c
end

"""
    set_tokens!(cache, ids)
    set_tokens!(cache, ids, indices)

Token ids for a model whose input is `input tokens T vocab=V`
(`SNN.Tokens(T; vocab=V)`): snn's 0-based ids in `0:V-1`, not
Flux.Embedding's 1-based indices. A `Vector` of T ids is one sample, a
(T, batch) `Matrix` a batch, which is snn's [batch][T] memory: an
`Array{Int32}` (or a view of whole columns) passes by pointer, with no copy
in Julia; any other integer array is converted into the cache's Int32
staging buffer. The batch becomes the number of samples and every length T
(set lengths after, `set_lengths!`). An id outside `0:V-1` throws an
`SNNError` with status `SNN.SNN_ERR_TOKEN` naming the sample and step
(0-based) and the id, and copies nothing; a model of floats throws one with
`SNN.SNN_ERR_UNSUPPORTED`.

With `indices` (1-based columns of the (T, n) matrix `ids`), the library
gathers those samples; the batch becomes `length(indices)`.
"""
function set_tokens!(c::ForwardCache, ids::AbstractVecOrMat{<:Integer})
    if c.tokens
        batch, _ = batch_of(c.input_shape, ids)
        batch_size(c).batch == batch || truncate_batch!(c, batch)
    end
    v = int32s!(c, ids)
    GC.@preserve v check(snn_set_tokens(c, pointer(v), length(ids)))
    c.device_inputs = nothing
    c
end

function set_tokens!(c::ForwardCache, ids::AbstractMatrix{<:Integer}, indices::AbstractVector{<:Integer})
    # a model of floats: the library refuses the ids, naming its input
    samples = c.tokens ? first(batch_of(c.input_shape, ids)) : size(ids, 2)
    v = int32s!(c, ids)
    idx = zero_based!(c, indices, samples)
    GC.@preserve v idx check(snn_set_tokens_gather(c, pointer(v), samples, pointer(idx), length(indices)))
    c.device_inputs = nothing
    c
end

"""
    set_lengths!(cache, lengths)
    set_lengths!(cache, lengths, indices)

The valid steps of each sample of the inputs or token ids set last, one per
sample, each in `1:T`: sample `j` holds steps `1:lengths[j]` and padding
after, which the recurrent layers (their outputs there are 0), attention
(padded keys are masked), `SeqPool` and the label losses leave out, as
PyTorch's packed sequences do. Setting inputs or ids resets every length to
T, so set the lengths after them and before `forward!`. An `Array{Int32}`
passes by pointer, another integer vector through the cache's Int32 staging
buffer. With `indices` (1-based), length `i` is `lengths[indices[i]]`, for
samples gathered with the same indices.

Throws an `SNNError`: `SNN_ERR_INVALID_ARGUMENT` for a length outside `1:T`
(or an index out of range), `SNN_ERR_COUNT` when there is not one length per
sample of the batch, `SNN_ERR_UNSUPPORTED` for a model whose input is not a
sequence (or whose layers change the number of steps), `SNN_ERR_STATE`
before any inputs.
"""
function set_lengths!(c::ForwardCache, lengths::AbstractVector{<:Integer})
    v = int32s!(c, lengths)
    GC.@preserve v check(snn_set_lengths(c, pointer(v), length(lengths)))
    c
end

function set_lengths!(c::ForwardCache, lengths::AbstractVector{<:Integer}, indices::AbstractVector{<:Integer})
    v = int32s!(c, lengths)
    idx = zero_based!(c, indices, length(lengths))
    GC.@preserve v idx check(snn_set_lengths_gather(c, pointer(v), length(lengths), pointer(idx), length(indices)))
    c
end

"""
    set_inputs_device!(cache, ptr, count)

Copies `count` floats (batch × features) that already lie in GPU memory of
the cache's device, given as a raw device pointer. The copy is queued on the
cache's stream: the memory must stay allocated and unchanged until the next
`get_outputs` or `backprop!` on the cache. With CUDA.jl loaded,
`set_inputs!(cache, cu_array)` does this safely.
"""
set_inputs_device!(c::ForwardCache, ptr::Ptr{Cfloat}, count::Integer) =
    (check(snn_set_inputs_device(c, ptr, Csize_t(count))); c)

"    forward!(cache, model)  — runs the model on the cache's inputs, in the cache's mode."
function forward!(c::ForwardCache, m::Model)
    check(snn_forward(c, m))
    followed!(c, m)
end

"""
    get_outputs(cache)

The outputs of the last forward pass as an (outputs, batch) matrix, or
(w, h, c, batch) for image outputs. On the CPU it is a zero-copy `HostView`
that keeps the cache alive, holds the values until the next `forward!`, and
throws if used after the cache is closed or has moved to another device; for
a GPU cache it is a host copy.
"""
function get_outputs(c::ForwardCache)
    b = batch_size(c).batch
    dims = (c.output_shape..., b)
    if c.device == SNN_DEVICE_CPU
        data, n = Ref{Ptr{Cfloat}}(C_NULL), Ref{Csize_t}(0)
        check(snn_outputs(c, data, n))
        return HostView(c, data[], dims)
    end
    dst = Array{Float32}(undef, dims)
    GC.@preserve dst check(snn_get_outputs(c, pointer(dst), length(dst)))
    dst
end

"""
    preallocate_grads(model, max_batch) -> BackwardCache

The buffers `backprop!` needs for batches up to `max_batch`, on the model's device.
"""
function preallocate_grads(m::Model, max_batch::Integer)
    d = raw_device(m)
    ins, np = input_shape(m), parameter_count(m)
    BackwardCache(new_handle(out -> snn_preallocate_grads(m, Int64(max_batch), out)), m, d, ins, np)
end

"""
    gradients(cache) -> HostView or Vector{Float32}

The flat gradient of the last `backprop!`, laid out as `parameters(model)`:
a zero-copy `HostView` on the CPU (it keeps the cache alive and refuses to be
used after the cache is closed or moved), a host copy for a GPU cache. With
CUDA.jl loaded, `gradients(cache, CuArray)` views a GPU cache's gradient.
"""
function gradients(c::BackwardCache)
    c.device == SNN_DEVICE_CPU || return get_gradients(c)
    data, n = Ref{Ptr{Cfloat}}(C_NULL), Ref{Csize_t}(0)
    check(snn_gradients(c, data, n))
    HostView(c, data[], (Int(n[]),))
end

"Copies the gradient out (any device)."
function get_gradients(c::BackwardCache)
    dst = Vector{Float32}(undef, c.parameters)
    GC.@preserve dst check(snn_get_gradients(c, pointer(dst), length(dst)))
    dst
end

"""
    set_gradients!(cache, g)

Overwrites the gradient (e.g. averaged over workers) before `update!`. `g`
passes by pointer or through the cache's staging buffer, as inputs do.
"""
function set_gradients!(c::BackwardCache, g::AbstractVector{<:Real})
    v = floats!(c, g)
    GC.@preserve v check(snn_set_gradients(c, pointer(v), length(g)))
    c
end

"    input_gradients!(cache, true)  — makes `backprop!` also compute the gradient of the inputs."
input_gradients!(c::BackwardCache, enabled::Bool) = (check(snn_set_input_gradient(c, Int32(enabled))); c)

"""
    set_loss_parameter!(backward_cache, loss_kind, value)
    loss_parameter(backward_cache, loss_kind)

The parameter of a loss that has one (`SNN.SNN_LOSS_*`) on this cache, used
by its `backprop!` calls with that loss (its default until set). A loss
without one, or a value outside its range, throws an `SNNError`.
"""
set_loss_parameter!(c::BackwardCache, loss::Integer, value::Real) =
    (check(snn_set_loss_parameter(c, Int32(loss), Float64(value))); c)
function loss_parameter(c::BackwardCache, loss::Integer)
    v = Ref{Cdouble}(0)
    check(snn_get_loss_parameter(c, Int32(loss), v))
    v[]
end

"The gradient of the loss with respect to the inputs of `fwd`'s last pass, shaped as those inputs (a batch)."
function input_gradients(c::BackwardCache, fwd::ForwardCache)
    dst = Array{Float32}(undef, (c.input_shape..., batch_size(fwd).batch))
    GC.@preserve dst check(snn_get_input_gradients(c, pointer(dst), length(dst)))
    dst
end

"""
    synchronize(cache)

Waits until the work queued on a GPU backward cache has finished (see
`gradients(cache, CuArray)`); returns at once on the CPU.
"""
synchronize(c::BackwardCache) = (check(snn_backward_cache_synchronize(c)); c)

"""
    Dataset(samples; labels=nothing, num_classes=nothing, device=:cpu)

Copies `samples` ((features, n), (features, steps, n) or (w, h, c, n)) and optional 1-based class
`labels` once to `device` (`:cpu` or a GPU index); batches are then gathered
by index on that device (`set_inputs!(cache, dataset, indices)`,
`LogitCrossEntropyLoss(dataset, indices)`). A label below 1, or above
`num_classes` when it is given, throws an `ArgumentError` naming the first
one; without `num_classes`, a label above the model's outputs is refused
when it is gathered (an `SNNError`).
"""
function Dataset(samples::AbstractArray{<:Real}; labels=nothing, num_classes=nothing, device=:cpu)
    ndims(samples) in (2, 3, 4) ||
        throw(ArgumentError("samples are (features, n), (features, steps, n) or (w, h, c, n), " *
                            "got size $(size(samples))"))
    n = size(samples, ndims(samples))
    features = length(samples) ÷ max(n, 1)
    dev = device_index(device)
    v = host_floats(samples)
    lab = labels === nothing ? nothing : zero_based_labels(labels, num_classes, "Dataset")
    lab === nothing || length(lab) == n || throw(DimensionMismatch("$(length(lab)) labels for $n samples"))
    ptr = GC.@preserve v lab new_handle(out -> snn_dataset_create(dev, pointer(v), n, features,
        lab === nothing ? Ptr{Int32}(C_NULL) : pointer(lab), out))
    Dataset(ptr, dev, features, n)
end

"""
    token_dataset(ids; lengths=nothing, labels=nothing, num_classes=nothing, device=:cpu) -> Dataset

A data set of token ids, copied once to `device`: `ids` is a (steps, n)
integer matrix of snn's 0-based ids (each in `0:2^24`; a model's vocabulary
is checked when batches are gathered, where an id outside it throws an
`SNNError` with `SNN_ERR_TOKEN`), `lengths` one length in `1:steps` per
sample (gathered with the ids by `set_inputs!(cache, dataset, indices)`;
`nothing`: every sample is full length), `labels` either one 1-based class
per sample (a vector of n) or one per step for a sequence output (a (steps,
n) matrix, `missing` ignoring a step). A negative id throws an `SNNError`
with `SNN_ERR_TOKEN`.
"""
function token_dataset(ids::AbstractMatrix{<:Integer}; lengths=nothing, labels=nothing, num_classes=nothing,
                       device=:cpu)
    steps, n = size(ids)
    dev = device_index(device)
    v = int32_by_pointer(ids) ? ids : Array{Int32}(ids)
    lens = lengths === nothing ? nothing : Array{Int32}(lengths)
    lens === nothing || length(lens) == n || throw(DimensionMismatch("$(length(lens)) lengths for $n samples"))
    lab, per = if labels === nothing
        (nothing, 1)
    elseif labels isa AbstractMatrix
        size(labels) == (steps, n) ||
            throw(DimensionMismatch("step labels of size $(size(labels)) for ids of size $(size(ids))"))
        (zero_based_step_labels(labels, num_classes, "token_dataset"), steps)
    else
        length(labels) == n || throw(DimensionMismatch("$(length(labels)) labels for $n samples"))
        (zero_based_labels(labels, num_classes, "token_dataset"), 1)
    end
    ptr = GC.@preserve v lens lab new_handle(out -> snn_dataset_create_tokens(dev, pointer(v), n, steps,
        lens === nothing ? Ptr{Int32}(C_NULL) : pointer(lens), lab === nothing ? Ptr{Int32}(C_NULL) : pointer(lab),
        per, out))
    Dataset(ptr, dev, steps, n)
end
