"""
    SNNError(status, message)

A failed snn call: `status` is the `snn_status` code, `message` the library's
text (`snn_last_error()`), e.g. "snn_set_inputs: expected 12800 floats ...".
"""
struct SNNError <: Exception
    status::Int32
    message::String
end

function Base.showerror(io::IO, e::SNNError)
    print(io, "SNNError ", e.status, " (", unsafe_string(snn_status_string(e.status)), "): ", e.message)
end

# Turns a status into an exception. The message is read by the very next ccall,
# before anything that could yield or run another snn call on this thread.
@inline function check(status::Integer)
    status == 0 && return nothing
    message = snn_last_error()
    throw(SNNError(Int32(status), unsafe_string(message)))
end

const LOG_RECEIVER = Ref{Any}(nothing)
const LOG_RECEIVER_ERROR = Ref{Any}(nothing)

# Called by the library through a C function pointer: nothing may be thrown
# from here (unwinding through the library's C frames is undefined), so an
# exception of the receiver is caught and kept for take_log_callback_error.
function log_trampoline(user_data::Ptr{Cvoid}, level::Int32, message::Cstring)::Cvoid
    try
        receiver = LOG_RECEIVER[]
        receiver === nothing || receiver(Int(level), unsafe_string(message))
    catch e
        LOG_RECEIVER_ERROR[] = e
    end
    nothing
end

"""
    set_log_callback(f)

Calls `f(level, message)` for every failed call (level 0) and the library's
notes; `nothing` removes it. It runs on the thread of the call and must not call
into snn. An exception thrown by `f` never reaches the library: that message is
dropped, the failing call still throws its own `SNNError`, `f` stays installed,
and `take_log_callback_error()` returns the exception.
"""
function set_log_callback(f)
    if f === nothing
        check(snn_set_log_callback(C_NULL, C_NULL))
        LOG_RECEIVER[] = nothing
    else
        LOG_RECEIVER[] = f
        fptr = @cfunction(log_trampoline, Cvoid, (Ptr{Cvoid}, Int32, Cstring))
        check(snn_set_log_callback(fptr, C_NULL))
    end
    nothing
end

"""
    take_log_callback_error()

The last exception the log callback threw since the previous call, or
`nothing`; taking it clears it.
"""
function take_log_callback_error()
    e = LOG_RECEIVER_ERROR[]
    LOG_RECEIVER_ERROR[] = nothing
    e
end
