# Mixed precision and dynamic loss scaling: the precision of a forward cache's
# passes (torch.autocast's rule), what a device can run, and GradScaler-style
# loss scaling of a backward cache, which checkpoints keep (training.jl).
#
# Precisions are Symbols: :float32 (the default), :bf16 and :fp16. They belong
# to forward caches, as training modes do, so one model may serve a float32
# inference cache and a bf16 training cache at once:
#
#     fwd = preallocate(model, 64; precision=:bf16)    # or SNN.precision!(fwd, :bf16)

const PRECISIONS = (float32=SNN_PRECISION_FLOAT32, bf16=SNN_PRECISION_BF16, fp16=SNN_PRECISION_FP16)

function precision_code(p::Symbol)
    haskey(PRECISIONS, p) || throw(ArgumentError("a precision is :float32, :bf16 or :fp16, got :$p"))
    PRECISIONS[p]
end

function precision_symbol(code::Integer)
    for (name, c) in pairs(PRECISIONS)
        c == code && return name
    end
    throw(SNNError(SNN_ERR_INTERNAL, "the library returned precision $code"))
end

"""
    precision!(cache, p) -> cache

Sets the precision of the forward cache's next passes: `:float32`, `:bf16` or
`:fp16`. At `:bf16` and `:fp16` the matrix products of dense, conv, conv1d,
attention, lstm and gru layers (forward and backward) round their operands to
the low precision and accumulate in float32; everything else (activations,
normalisations, softmax, pooling, losses, optimiser steps) computes in
float32. Parameters stay float32 (the master copy) and gradients arrive
float32; `backprop!` follows the precision of the forward pass it
differentiates. Makes the layers' plans again (an allocation: set it before
the training loop). Throws an `SNNError` (SNN_ERR_UNSUPPORTED, the cache
unchanged) when the cache's device cannot run `p` (`:fp16` on the CPU) or a
layer has no kernels for it there (the message names the layer).
"""
precision!(c::ForwardCache, p::Symbol) = (check(snn_cache_set_precision(c, precision_code(p))); c)

"    cache_precision(cache) -> Symbol  — the precision of the cache's passes (`:float32` for a new cache)."
function cache_precision(c::ForwardCache)
    p = Ref{Int32}(0)
    check(snn_cache_precision(c, p))
    precision_symbol(p[])
end

"""
    precision_support(device, p) -> Bool

Whether `device` (`:cpu` or a GPU index) computes in precision `p` natively
(`true`) or emulated (`false`: `:bf16` on a CPU without AVX-512 BF16 rounds
the operands the same way, with float32 products: the same values, no
speed-up). Throws an `SNNError` with the reason when it cannot (`:fp16` on the
CPU is SNN_ERR_UNSUPPORTED), and `gpu_status`'s errors for a GPU.
"""
function precision_support(device::Union{Symbol,Integer}, p::Symbol)
    native = Ref{Int32}(0)
    check(snn_precision_support(device_index(device), precision_code(p), native))
    native[] != 0
end

"""
    loss_scaling!(bwd, on::Bool) -> bwd
    loss_scaling!(bwd; scale=65536, growth_factor=2, backoff_factor=0.5, growth_interval=2000, good_steps=0) -> bwd
    loss_scaling!(bwd, state) -> bwd

Dynamic loss scaling of a backward cache, `torch.cuda.amp.GradScaler`'s rule.
While on, `backprop!` multiplies the loss's gradient by the scale, divides
the gradients by it and checks them: finite gradients count a good step
(after `growth_interval` in a row the scale is multiplied by
`growth_factor`); an overflow marks the step skipped (the next `update!`
changes nothing) and multiplies the scale by `backoff_factor`.

`loss_scaling!(bwd, true)` turns it on with PyTorch's defaults unless it is on
already; `false` turns it off and forgets its state. The keyword form turns
it on with those settings and state (a value out of range is an `SNNError`
naming it, nothing changed). A `state` read by `loss_scaling` is set back as
it was (off when `state.on` is false; `state.skipped` is not set).
"""
loss_scaling!(b::BackwardCache, on::Bool) = (check(snn_set_loss_scaling(b, Int32(on))); b)

function loss_scaling!(b::BackwardCache; scale::Real=65536.0, growth_factor::Real=2.0, backoff_factor::Real=0.5,
                       growth_interval::Integer=2000, good_steps::Integer=0)
    check(snn_set_loss_scaling_state(b, Float64(scale), Float64(growth_factor), Float64(backoff_factor),
                                     Int64(growth_interval), Int64(good_steps)))
    b
end

function loss_scaling!(b::BackwardCache, state::NamedTuple)
    state.on || return loss_scaling!(b, false)
    loss_scaling!(b; scale=state.scale, growth_factor=state.growth_factor, backoff_factor=state.backoff_factor,
                  growth_interval=state.growth_interval, good_steps=state.good_steps)
end

"""
    loss_scaling(bwd) -> (on, scale, growth_factor, backoff_factor, growth_interval, good_steps, skipped)

The backward cache's loss scaling as a NamedTuple: whether it is on, the
scale of the next `backprop!` (1 when off), the settings, the good steps
counted towards the next growth, and whether the last `backprop!` overflowed
(its step is skipped).
"""
function loss_scaling(b::BackwardCache)
    on, skipped = Ref{Int32}(0), Ref{Int32}(0)
    scale, growth, backoff = Ref{Cdouble}(0), Ref{Cdouble}(0), Ref{Cdouble}(0)
    interval, good = Ref{Int64}(0), Ref{Int64}(0)
    check(snn_loss_scaling_state(b, on, scale, growth, backoff, interval, good, skipped))
    (on=on[] != 0, scale=scale[], growth_factor=growth[], backoff_factor=backoff[],
     growth_interval=Int(interval[]), good_steps=Int(good[]), skipped=skipped[] != 0)
end

"""
    load_loss_scaling!(bwd, path) -> bwd

Sets the backward cache's loss scaling to that of a checkpoint written by
`save_checkpoint(path, model, opt, bwd)`: on with its settings and state, or
off when the file holds none. Throws as `load_checkpoint` does (a plain model
file is SNN_ERR_FILE_FORMAT), the cache unchanged.
"""
load_loss_scaling!(b::BackwardCache, path::AbstractString) = (check(snn_checkpoint_load_loss_scaling(path, b)); b)
