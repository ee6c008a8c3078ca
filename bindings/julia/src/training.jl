# Losses, backpropagation and optimisers, named as in SimpleNNs.jl. The losses
# are snn's, PyTorch's means, not SimpleNNs' scales (see each docstring).

"""
    MSELoss(targets)

Mean squared error against targets shaped as the outputs ((outputs, batch)),
copied to host Float32 memory once, when the loss is made. `backprop!`
returns, and differentiates, PyTorch's `nn.MSELoss()`:

    L = sum((y - t)^2) / (outputs * batch),    dL/dy = 2 (y - t) / (outputs * batch)

SimpleNNs' `MSELoss` of the same name scales differently: its gradient is
`y - t` (the derivative of `sum((y - t)^2) / 2`) and the value it reports is
`sum((y - t)^2) / (2 * outputs * batch)` in its earlier versions,
`sum((y - t)^2) / (outputs * batch)` in later ones. An snn gradient times
`outputs * batch / 2` is SimpleNNs' (this matters for SGD; Adam, AdamW and
RMSProp steps hardly depend on the scale).
"""
struct MSELoss
    targets::Array{Float32}
    MSELoss(targets::AbstractArray{<:Real}) = new(Array{Float32}(targets))
end

"""
    HuberLoss(targets; delta=1)

PyTorch's `nn.HuberLoss(delta=delta)` against targets shaped as the outputs:
with `r = y - t`, the mean over outputs * batch of `0.5 r^2` where
`|r| < delta`, else `delta (|r| - 0.5 delta)`; its gradient is `r` clamped to
`[-delta, delta]` over outputs * batch. delta must be in (0, floatmax(Float32)].
"""
struct HuberLoss
    targets::Array{Float32}
    delta::Float64
    HuberLoss(targets::AbstractArray{<:Real}; delta::Real=1.0) = new(Array{Float32}(targets), Float64(delta))
end

function set_loss_data!(b::BackwardCache, l::HuberLoss)
    targets = l.targets
    GC.@preserve targets check(snn_set_targets(b, pointer(targets), length(targets)))
    check(snn_set_loss_parameter(b, SNN_LOSS_HUBER, l.delta))
    SNN_LOSS_HUBER
end

"""
    SmoothL1Loss(targets; beta=1)

PyTorch's `nn.SmoothL1Loss(beta=beta)` against targets shaped as the outputs:
with `r = y - t`, the mean over outputs * batch of `0.5 r^2 / beta` where
`|r| < beta`, else `|r| - 0.5 beta`; `beta = 0` is the L1 loss `|r|`.
beta must be in [0, floatmax(Float32)].
"""
struct SmoothL1Loss
    targets::Array{Float32}
    beta::Float64
    SmoothL1Loss(targets::AbstractArray{<:Real}; beta::Real=1.0) = new(Array{Float32}(targets), Float64(beta))
end

function set_loss_data!(b::BackwardCache, l::SmoothL1Loss)
    targets = l.targets
    GC.@preserve targets check(snn_set_targets(b, pointer(targets), length(targets)))
    check(snn_set_loss_parameter(b, SNN_LOSS_SMOOTH_L1, l.beta))
    SNN_LOSS_SMOOTH_L1
end

"""
    BCEWithLogitsLoss(targets)

PyTorch's `nn.BCEWithLogitsLoss()`: the outputs are logits, the targets
(shaped as the outputs) probabilities; the mean over outputs * batch of
`max(x, 0) - x t + log1p(exp(-|x|))`, whose gradient is `sigmoid(x) - t` over
outputs * batch. Stable for logits of +-1e4; targets outside [0, 1] are not
refused (nor by PyTorch).
"""
struct BCEWithLogitsLoss
    targets::Array{Float32}
    BCEWithLogitsLoss(targets::AbstractArray{<:Real}) = new(Array{Float32}(targets))
end

function set_loss_data!(b::BackwardCache, l::BCEWithLogitsLoss)
    targets = l.targets
    GC.@preserve targets check(snn_set_targets(b, pointer(targets), length(targets)))
    SNN_LOSS_BCE_WITH_LOGITS
end

"""
    LogitCrossEntropyLoss(labels, num_classes)

Softmax cross-entropy of the outputs (logits) against 1-based class labels,
as SimpleNNs.jl takes them (converted to snn's 0-based Int32 here; a label
outside `1:num_classes` throws an `ArgumentError` naming the first). The
value `backprop!` returns, and differentiates, is the **mean** over the
batch, as PyTorch's `nn.CrossEntropyLoss()`:

    L = sum over samples j of -log softmax(y[:, j])[label j] / batch,
    dL/dy[:, j] = (softmax(y[:, j]) - onehot(label j)) / batch

SimpleNNs' `LogitCrossEntropyLoss` **sums** over the batch: its value and
gradient are snn's times `batch`.

    LogitCrossEntropyLoss(step_labels::AbstractMatrix, num_classes)

For a model whose output is a sequence ((num_classes, steps) per sample), one
label per step: a (steps, batch) matrix of 1-based classes, where `missing`
ignores the step (snn's -1, PyTorch's `ignore_index`). The loss is the mean
over the steps counted, which leave out the `missing` ones and the padded
steps of samples given lengths (`set_lengths!`); 0 when none is left:

    L = sum over counted steps (t, j) of -log softmax(y[:, t, j])[label t, j] / counted
"""
struct LogitCrossEntropyLoss
    labels::Vector{Int32}
    num_classes::Int
    LogitCrossEntropyLoss(labels::AbstractVector{<:Integer}, num_classes::Integer) =
        new(zero_based_labels(labels, num_classes, "LogitCrossEntropyLoss"), Int(num_classes))
    LogitCrossEntropyLoss(labels::AbstractMatrix{<:Union{Missing,Integer}}, num_classes::Integer) =
        new(zero_based_step_labels(labels, num_classes, "LogitCrossEntropyLoss"), Int(num_classes))
end

# The loss of LogitCrossEntropyLoss(dataset, indices).
struct DatasetLabelsLoss{I<:AbstractVector{<:Integer}}
    dataset::Dataset
    indices::I
end
"""
    LogitCrossEntropyLoss(dataset, indices)

Cross-entropy against the labels of the `Dataset` samples `indices`
(1-based), gathered by the library on the data set's device. The loss holds
`indices` itself (do not change them before `backprop!`); `backprop!`
converts them into the backward cache's index buffer, so a training step
with it allocates nothing. An index outside the data set throws a
`BoundsError` here.
"""
function LogitCrossEntropyLoss(d::Dataset, indices::AbstractVector{<:Integer})
    check_indices(indices, d.count)
    DatasetLabelsLoss(d, indices)
end

# The loss of LogitCrossEntropyLoss(labels, num_classes, indices).
struct GatheredLabelsLoss{L<:AbstractVecOrMat,I<:AbstractVector{<:Integer}}
    labels::L
    num_classes::Int
    indices::I
end
"""
    LogitCrossEntropyLoss(labels, num_classes, indices)

Cross-entropy against `labels[indices]` (both 1-based), for a minibatch of
samples gathered with the same `indices` (`set_inputs!(cache, data,
indices)`). With a (steps, n) matrix of step labels (`missing` ignoring a
step), the columns `indices`. The loss holds `labels` and `indices`
themselves, copying nothing: `backprop!` converts only the gathered labels,
into the backward cache's Int32 staging buffer, so a training step with it
allocates nothing. An index outside the labels throws a `BoundsError` here;
a gathered label outside `1:num_classes` throws an `ArgumentError` naming it
in `backprop!`.
"""
function LogitCrossEntropyLoss(labels::AbstractVector{<:Integer}, num_classes::Integer,
                               indices::AbstractVector{<:Integer})
    check_indices(indices, length(labels))
    GatheredLabelsLoss(labels, Int(num_classes), indices)
end
function LogitCrossEntropyLoss(labels::AbstractMatrix{<:Union{Missing,Integer}}, num_classes::Integer,
                               indices::AbstractVector{<:Integer})
    check_indices(indices, size(labels, 2))
    GatheredLabelsLoss(labels, Int(num_classes), indices)
end

# labels[indices] as snn's 0-based labels in the cache's Int32 staging buffer;
# returns how many were written.
function gather_labels!(b::BackwardCache, labels::AbstractVector{<:Integer}, num_classes::Int,
                        indices::AbstractVector{<:Integer})
    buffer = int_staging!(b, length(indices))
    n = length(labels)
    for (k, i) in enumerate(indices)
        1 <= i <= n || throw(BoundsError(1:n, i))
        l = labels[i]
        1 <= l <= num_classes || throw(ArgumentError("LogitCrossEntropyLoss: labels[$i] is $l, but labels are " *
                                                     "1-based class indices in 1:$num_classes"))
        buffer[k] = l - 1
    end
    length(indices)
end

# The columns `indices` of (steps, n) step labels, [batch][T], -1 for missing.
function gather_labels!(b::BackwardCache, labels::AbstractMatrix{<:Union{Missing,Integer}}, num_classes::Int,
                        indices::AbstractVector{<:Integer})
    steps, n = size(labels)
    buffer = int_staging!(b, steps * length(indices))
    k = 0
    for i in indices
        1 <= i <= n || throw(BoundsError(1:n, i))
        for t in 1:steps
            l = labels[t, i]
            k += 1
            if l === missing
                buffer[k] = -1
            elseif 1 <= l <= num_classes
                buffer[k] = l - 1
            else
                throw(ArgumentError("LogitCrossEntropyLoss: labels[$t, $i] is $l, but step labels are 1-based " *
                                    "class indices in 1:$num_classes, or missing to ignore the step"))
            end
        end
    end
    k
end

# Each passes its arrays by pointer, preserved for the duration of the call.
function set_loss_data!(b::BackwardCache, l::GatheredLabelsLoss)
    n = gather_labels!(b, l.labels, l.num_classes, l.indices)
    labels = b.int_staging
    GC.@preserve labels check(snn_set_labels(b, pointer(labels), n))
    SNN_LOSS_LOGIT_CROSSENTROPY
end

function set_loss_data!(b::BackwardCache, l::MSELoss)
    targets = l.targets
    GC.@preserve targets check(snn_set_targets(b, pointer(targets), length(targets)))
    SNN_LOSS_MSE
end

function set_loss_data!(b::BackwardCache, l::LogitCrossEntropyLoss)
    labels = l.labels
    GC.@preserve labels check(snn_set_labels(b, pointer(labels), length(labels)))
    SNN_LOSS_LOGIT_CROSSENTROPY
end

function set_loss_data!(b::BackwardCache, l::DatasetLabelsLoss)
    indices = zero_based!(b, l.indices, l.dataset.count)
    GC.@preserve indices check(snn_set_labels_from_dataset(b, l.dataset, pointer(indices), length(l.indices)))
    SNN_LOSS_LOGIT_CROSSENTROPY
end

"""
    backprop!(backward_cache, forward_cache, model, loss) -> Float32

The loss of the last forward pass and its gradient with respect to every
parameter (see `gradients`), differentiating the pass in the mode it ran.
"""
function backprop!(b::BackwardCache, f::ForwardCache, m::Model, loss)
    kind = set_loss_data!(b, loss)
    value = Ref{Cfloat}(0)
    check(snn_backprop(b, f, m, kind, value))
    followed!(f, m)
    followed!(b, m)
    value[]
end

"""
    backprop!(backward_cache, forward_cache, model, output_gradient)

Backpropagates a caller's gradient of the loss with respect to the outputs,
shaped as `get_outputs(forward_cache)` (custom losses, reinforcement
learning). It passes by pointer or through the cache's staging buffer, as
inputs do (see `set_inputs!`).
"""
function backprop!(b::BackwardCache, f::ForwardCache, m::Model, output_gradient::AbstractArray{<:Real})
    v = floats!(b, output_gradient)
    GC.@preserve v check(snn_backprop_with_output_gradient(b, f, m, pointer(v), length(output_gradient)))
    followed!(f, m)
    followed!(b, m)
    nothing
end

const HP = (lr=SNN_HP_LEARNING_RATE, momentum=SNN_HP_MOMENTUM, nesterov=SNN_HP_NESTEROV, beta1=SNN_HP_BETA1,
            beta2=SNN_HP_BETA2, eps=SNN_HP_EPSILON, weight_decay=SNN_HP_WEIGHT_DECAY, alpha=SNN_HP_ALPHA,
            dampening=SNN_HP_DAMPENING, max_grad_norm=SNN_HP_MAX_GRAD_NORM)

function optimiser(m::Model, kind::Integer; settings...)
    o = Optimiser(new_handle(out -> snn_optimiser_create(m, Int32(kind), out)), m)
    for (name, value) in settings
        value === nothing || set_hyperparameter!(o, name, value)
    end
    o
end

"    set_hyperparameter!(opt, :lr, 0.01)  — also :momentum, :dampening, :nesterov, :beta1, :beta2, :eps, :weight_decay, :alpha."
set_hyperparameter!(o::Optimiser, name::Symbol, value::Real) =
    (check(snn_optimiser_set(o, hp(name), Float64(value))); o)

hp(name::Symbol) = haskey(HP, name) ? HP[name] :
    throw(ArgumentError("no hyperparameter :$name; the names are $(join(map(repr, keys(HP)), ", "))"))

"    hyperparameter(opt, :lr) -> Float64"
function hyperparameter(o::Optimiser, name::Symbol)
    v = Ref{Cdouble}(0)
    check(snn_optimiser_get(o, hp(name), v))
    v[]
end

"    AdamOptimiser(model; lr=0.001, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0)"
AdamOptimiser(m::Model; lr=nothing, beta1=nothing, beta2=nothing, eps=nothing, weight_decay=nothing) =
    optimiser(m, SNN_OPTIMISER_ADAM; lr, beta1, beta2, eps, weight_decay)
"    AdamWOptimiser(model; lr=0.001, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)"
AdamWOptimiser(m::Model; lr=nothing, beta1=nothing, beta2=nothing, eps=nothing, weight_decay=nothing) =
    optimiser(m, SNN_OPTIMISER_ADAMW; lr, beta1, beta2, eps, weight_decay)
"    SGDOptimiser(model; lr=0.01, momentum=0, nesterov=false, weight_decay=0)"
SGDOptimiser(m::Model; lr=nothing, momentum=nothing, nesterov=nothing, weight_decay=nothing) =
    optimiser(m, SNN_OPTIMISER_SGD; lr, momentum, nesterov, weight_decay)
"    LionOptimiser(model; lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0)  — decoupled decay"
LionOptimiser(m::Model; lr=nothing, beta1=nothing, beta2=nothing, weight_decay=nothing) =
    optimiser(m, SNN_OPTIMISER_LION; lr, beta1, beta2, weight_decay)
"    RMSPropOptimiser(model; lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0)"
RMSPropOptimiser(m::Model; lr=nothing, alpha=nothing, eps=nothing, weight_decay=nothing) =
    optimiser(m, SNN_OPTIMISER_RMSPROP; lr, alpha, eps, weight_decay)

"    update!(model, backward_cache, opt)  — one optimiser step from the last gradient (SimpleNNs' name)."
function update!(m::Model, b::BackwardCache, o::Optimiser)
    check(snn_optimiser_step(o, m, b))
    followed!(b, m)
    m
end

"    reset!(opt)  — zeroes the moments and the step count."
reset!(o::Optimiser) = (check(snn_optimiser_reset(o)); o)

"""
    grad_norm(opt) -> Float64

The L2 norm of the whole gradient at the last step, before clipping
(`:max_grad_norm` > 0; `clip_grad_norm_`'s return value). Waits for that step
on a GPU; an `SNNError` (SNN_ERR_STATE) when the last step did not clip.
"""
function grad_norm(o::Optimiser)
    v = Ref{Cdouble}(0)
    check(snn_optimiser_grad_norm(o, v))
    v[]
end

"Number of steps the optimiser has taken since its creation or `reset!`."
step_count(o::Optimiser) = count_query(snn_optimiser_step_count, o, Int64)

"""
    save_checkpoint(path, model, opt)

The model file plus the optimiser's kind, settings, step count and moments,
saved atomically: training resumed from it continues bit-identically.
"""
save_checkpoint(path::AbstractString, m::Model, o::Optimiser) = (check(snn_checkpoint_save(m, o, path)); nothing)

"""
    save_checkpoint(path, model, opt, bwd)

The checkpoint above plus the loss scaling of the backward cache `bwd` when it
is on (its settings, scale and good steps), so training with a GradScaler
resumes where it was: `load_checkpoint` reads it as any checkpoint, and
`load_loss_scaling!(bwd, path)` gives a backward cache its scaling back.
"""
save_checkpoint(path::AbstractString, m::Model, o::Optimiser, b::BackwardCache) =
    (check(snn_checkpoint_save_v2(m, o, b, path)); nothing)

"    load_checkpoint(path) -> (model, optimiser)  — both on the CPU."
function load_checkpoint(path::AbstractString)
    m, o = Ref{Ptr{Cvoid}}(C_NULL), Ref{Ptr{Cvoid}}(C_NULL)
    check(snn_checkpoint_load(path, m, o))
    model = Model(m[])
    (model, Optimiser(o[], model))
end
