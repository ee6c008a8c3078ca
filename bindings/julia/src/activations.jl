# Activations, recognised by the function's name and the package it comes from,
# so that NNlib's relu (which Flux re-exports), SNN.relu and Base's tanh all
# select snn's relu. A function from any other module, an anonymous function
# or a closure is refused with an error naming it: snn cannot know what it
# computes.

"    relu(x) = max(0, x)"
relu(x) = max(zero(x), x)
"    leakyrelu(x) — x for x > 0, else 0.01x (NNlib's default slope, snn's leaky_relu)"
leakyrelu(x) = x > zero(x) ? x : oftype(x, 0.01) * x
"    sigmoid(x) = 1 / (1 + exp(-x))"
sigmoid(x) = one(x) / (one(x) + exp(-x))
"    tanh_fast(x) — tanh"
tanh_fast(x) = tanh(x)
"    swish(x) = silu(x) = x sigmoid(x)"
swish(x) = x * sigmoid(x)
silu(x) = swish(x)
"""
    gelu(x) = x Φ(x) = x (1 + erf(x / √2)) / 2

The exact erf form, which snn's `gelu` computes (NNlib's `gelu_erf`). NNlib's
`gelu` is a different function, the tanh approximation (see `activation_name`).
"""
gelu(x) = oftype(float(x), x * (1 + erf_approx(Float64(x) / sqrt(2.0))) / 2)
"""
    softmax(x)

What snn's softmax layer computes: over the features of a vector or a
(features, batch) matrix (dims=1), over the channels of a (w, h, c) image or
a (w, h, c, batch) array (dims=3). NNlib's `softmax(x)` is over dims=1 in
both cases, the width of images.
"""
softmax(x::AbstractArray) = softmax_over(x, ndims(x) in (3, 4) ? 3 : 1)
# exp(x) / sum(exp(x)) over dimension d, shifted by the maximum.
softmax_over(x, d) = (e = exp.(x .- maximum(x; dims=d)); e ./ sum(e; dims=d))

# erf within 1.2e-7 (Numerical Recipes' erfc by Chebyshev fitting), enough
# for Float32 results without a dependency on SpecialFunctions.
function erf_approx(x::Float64)
    z = abs(x)
    t = 1 / (1 + z / 2)
    r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
        t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
        t * (-0.82215223 + t * 0.17087277)))))))))
    x >= 0 ? 1 - r : r - 1
end

# snn's name of each activation, by the Julia function's name.
const ACTIVATIONS = Dict{Symbol,String}(
    :identity => "identity", :relu => "relu", :leakyrelu => "leaky_relu", :leaky_relu => "leaky_relu",
    :tanh => "tanh", :tanh_fast => "tanh", :sigmoid => "sigmoid", :σ => "sigmoid",
    :sigmoid_fast => "sigmoid", :gelu_erf => "gelu", :swish => "silu", :silu => "silu",
)
# The tanh approximation of gelu, 0.5x (1 + tanh(√(2/π) (x + 0.044715x³))), under
# NNlib's names: `gelu` before NNlib 0.9.28, `gelu_tanh` (with `gelu` an alias
# of it, and `gelu_sigmoid`, the same function) since. snn has no such
# activation, so these are refused rather than run as the erf form.
const TANH_GELUS = (:gelu, :gelu_tanh, :gelu_sigmoid)
# Packages whose functions of those names compute what snn computes (a module
# of one of these names, or inside one, such as Base.Math).
const KNOWN_MODULES = (:SNN, :NNlib, :Flux, :MLUtils, :Base, :Core, :Lux, :LuxLib, :SimpleNNs)

function function_name(f)
    f isa Function || return nothing
    any(in(KNOWN_MODULES), fullname(parentmodule(f))) || return nothing
    nameof(f)
end

"""
    activation_name(f) -> String

snn's name for the activation function `f` ("relu", "tanh", ...). Accepts
`identity`, `relu`, `leakyrelu`, `tanh`/`tanh_fast`, `sigmoid`/`σ`,
`swish`/`silu` from SNN, NNlib, Flux, Lux or Base, and the exact gelu
x Φ(x): `NNlib.gelu_erf` (NNlib 0.9.28 and later) or `SNN.gelu`.

NNlib's `gelu` is the tanh approximation (`gelu_tanh` since NNlib 0.9.28, of
which `gelu` is an alias; the function itself before), which snn does not
compute: `NNlib.gelu`, `gelu_tanh` and `gelu_sigmoid` throw an
`ArgumentError` saying so. Any other function throws an `ArgumentError`
naming it.
"""
function activation_name(f)
    f === gelu && return "gelu"
    name = function_name(f)
    name in TANH_GELUS &&
        throw(ArgumentError("activation $(repr(f)) is the tanh approximation of gelu, which snn does not compute: " *
                            "snn's gelu is the exact erf form x Φ(x); use NNlib.gelu_erf (NNlib 0.9.28 or later) " *
                            "or SNN.gelu for it"))
    name !== nothing && haskey(ACTIVATIONS, name) && return ACTIVATIONS[name]
    throw(ArgumentError("activation $(repr(f)) is not one snn runs; use one of identity, relu, leakyrelu, " *
                        "tanh, tanh_fast, sigmoid, swish (from SNN, NNlib, Flux or Base), gelu_erf or SNN.gelu"))
end
