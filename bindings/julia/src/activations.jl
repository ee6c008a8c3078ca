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
"    gelu(x) = x Φ(x), the exact erf form that snn computes (NNlib's gelu is the tanh approximation)"
gelu(x) = oftype(float(x), x * (1 + erf_approx(Float64(x) / sqrt(2.0))) / 2)
"    softmax(x) — over the features of a vector (dims=1), as a layer of a Chain"
function softmax(x::AbstractArray)
    e = exp.(x .- maximum(x; dims=1))
    e ./ sum(e; dims=1)
end

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
    :sigmoid_fast => "sigmoid", :gelu => "gelu", :gelu_erf => "gelu", :swish => "silu", :silu => "silu",
)
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
`gelu`/`gelu_erf`, `swish`/`silu` from SNN, NNlib, Flux, Lux or Base; throws
an `ArgumentError` naming any other function.
"""
function activation_name(f)
    name = function_name(f)
    name !== nothing && haskey(ACTIVATIONS, name) && return ACTIVATIONS[name]
    throw(ArgumentError("activation $(repr(f)) is not one snn runs; use one of identity, relu, leakyrelu, " *
                        "tanh, tanh_fast, sigmoid, gelu, swish (from SNN, NNlib, Flux or Base)"))
end
