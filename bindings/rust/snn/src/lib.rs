#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

/// The raw declarations of `snn.h` (the `snn-sys` crate).
pub use snn_sys as sys;

use std::any::Any;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::os::raw::{c_char, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::{Arc, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// What went wrong, one variant per status of `snn.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A required pointer or handle was NULL (`SNN_ERR_NULL_ARGUMENT`).
    NullArgument,
    /// A value out of its documented range (`SNN_ERR_INVALID_ARGUMENT`).
    InvalidArgument,
    /// The model spec does not parse (`SNN_ERR_SPEC`).
    Spec,
    /// A layer does not fit its input (`SNN_ERR_SHAPE`).
    Shape,
    /// A buffer has the wrong number of elements (`SNN_ERR_COUNT`).
    Count,
    /// A batch of 0 or above the cache's maximum (`SNN_ERR_BATCH`).
    Batch,
    /// A class label out of range (`SNN_ERR_LABEL`).
    Label,
    /// A cache or optimiser used with another model (`SNN_ERR_MODEL_MISMATCH`).
    ModelMismatch,
    /// Handles or buffers on different devices (`SNN_ERR_DEVICE_MISMATCH`).
    DeviceMismatch,
    /// A call out of order, e.g. backprop before forward (`SNN_ERR_STATE`).
    State,
    /// A host or device allocation failed (`SNN_ERR_OUT_OF_MEMORY`).
    OutOfMemory,
    /// NaN or Inf found, see [`set_check_finite`] (`SNN_ERR_NOT_FINITE`).
    NotFinite,
    /// A file could not be read or written (`SNN_ERR_IO`).
    Io,
    /// A file or buffer is malformed (`SNN_ERR_FILE_FORMAT`).
    FileFormat,
    /// Not available on this device or build, or a library of another major version (`SNN_ERR_UNSUPPORTED`).
    Unsupported,
    /// The CUDA plugin `libsnn_cuda.so` could not be loaded (`SNN_ERR_GPU_PLUGIN_NOT_FOUND`).
    GpuPluginNotFound,
    /// The CUDA driver or runtime is missing or too old (`SNN_ERR_GPU_DRIVER`).
    GpuDriver,
    /// CUDA works but sees no device (`SNN_ERR_NO_GPU`).
    NoGpu,
    /// A GPU index out of range (`SNN_ERR_GPU_INDEX`).
    GpuIndex,
    /// A CUDA, cuBLAS or cuDNN call failed (`SNN_ERR_CUDA`).
    Cuda,
    /// A bug in snn: the message says what to report (`SNN_ERR_INTERNAL`).
    Internal,
    /// A token id outside the model's vocabulary (`SNN_ERR_TOKEN`); the
    /// message names the sample, the step and the id.
    Token,
    /// A status this binding does not know (a newer library).
    Other(i32),
}

const KINDS: [ErrorKind; 22] = [
    ErrorKind::NullArgument,
    ErrorKind::InvalidArgument,
    ErrorKind::Spec,
    ErrorKind::Shape,
    ErrorKind::Count,
    ErrorKind::Batch,
    ErrorKind::Label,
    ErrorKind::ModelMismatch,
    ErrorKind::DeviceMismatch,
    ErrorKind::State,
    ErrorKind::OutOfMemory,
    ErrorKind::NotFinite,
    ErrorKind::Io,
    ErrorKind::FileFormat,
    ErrorKind::Unsupported,
    ErrorKind::GpuPluginNotFound,
    ErrorKind::GpuDriver,
    ErrorKind::NoGpu,
    ErrorKind::GpuIndex,
    ErrorKind::Cuda,
    ErrorKind::Internal,
    ErrorKind::Token,
];

impl ErrorKind {
    /// The kind of a non-zero `snn_status`.
    pub fn from_status(status: i32) -> ErrorKind {
        usize::try_from(status)
            .ok()
            .and_then(|s| s.checked_sub(1))
            .and_then(|i| KINDS.get(i).copied())
            .unwrap_or(ErrorKind::Other(status))
    }

    /// The `snn_status` code of this kind.
    pub fn status(self) -> i32 {
        match self {
            ErrorKind::Other(status) => status,
            kind => KINDS.iter().zip(1..).find(|(k, _)| **k == kind).map_or(0, |(_, s)| s),
        }
    }
}

/// A failed call: its status and the library's message, e.g.
/// `snn_set_inputs: expected 12800 floats (batch 128 x 100), got 12700`.
/// Checks made by this crate before calling the library (a `usize` that does
/// not fit the C type, a slice that is not a whole number of samples) give
/// the same kinds, with messages naming the Rust method.
///
/// `{}` prints the message and the status's text; `{:?}`, which is what a
/// `main` returning `Err` prints, adds the kind in front:
/// `Error: Spec: snn_model_create: ... (the model spec does not parse)`.
/// `{:#?}` shows the fields.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    status: i32,
    message: String,
    log_panic: Option<String>,
}

impl Error {
    fn new(kind: ErrorKind, message: String) -> Error {
        Error { status: kind.status(), message, log_panic: None }
    }
    /// The raw `snn_status` code.
    pub fn status(&self) -> i32 {
        self.status
    }
    /// The status as an [`ErrorKind`].
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_status(self.status)
    }
    /// The library's message (or this crate's, for its own checks).
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The message of a panic of the log callback while it received this
    /// error's message (see [`set_log_callback`]).
    pub fn log_callback_panic(&self) -> Option<&str> {
        self.log_panic.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, status_string(self.status))?;
        if let Some(p) = &self.log_panic {
            write!(f, "; the log callback panicked: {p}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            return f
                .debug_struct("Error")
                .field("kind", &self.kind())
                .field("message", &self.message)
                .field("log_panic", &self.log_panic)
                .finish();
        }
        write!(f, "{:?}: {self}", self.kind())
    }
}

impl std::error::Error for Error {}

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the library returns NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Turns a status into a `Result`, reading the thread's last error message
/// right away, before any other call can replace it.
fn check(status: sys::snn_status) -> Result<(), Error> {
    let log_panic = take_log_panic();
    if status == sys::SNN_OK {
        return Ok(());
    }
    // SAFETY: no arguments; the returned text is copied at once.
    let message = text(unsafe { sys::snn_last_error() });
    Err(Error { status, message, log_panic })
}

fn c_string(what: &str, s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|e| {
        Error::new(ErrorKind::InvalidArgument, format!("{what}: contains a NUL byte at {}", e.nul_position()))
    })
}

fn path_string(what: &str, path: &Path) -> Result<CString, Error> {
    match path.to_str() {
        Some(s) => c_string(what, s),
        None => Err(Error::new(ErrorKind::InvalidArgument, format!("{what}: path {path:?} is not UTF-8"))),
    }
}

/// A `usize` as the library's `int64_t`, or an error naming the value.
fn to_i64(what: &str, value: usize, kind: ErrorKind) -> Result<i64, Error> {
    i64::try_from(value)
        .map_err(|_| Error::new(kind, format!("{what}: {value} does not fit in int64_t (at most {})", i64::MAX)))
}

/// An `int64_t` the library returned, as a `usize`.
fn to_usize(what: &str, value: i64) -> Result<usize, Error> {
    usize::try_from(value)
        .map_err(|_| Error::new(ErrorKind::Internal, format!("{what}: the library returned {value}")))
}

/// The number of whole samples of `steps` token ids in `len` ids.
fn whole_ids(what: &str, len: usize, steps: usize) -> Result<usize, Error> {
    if steps == 0 || len % steps != 0 {
        return Err(Error::new(
            ErrorKind::Count,
            format!("{what}: {len} ids are not a whole number of samples of {steps} steps"),
        ));
    }
    Ok(len / steps)
}

/// The number of whole samples of `features` floats in `len` floats.
fn whole_samples(what: &str, len: usize, features: usize) -> Result<usize, Error> {
    if features == 0 || len % features != 0 {
        return Err(Error::new(
            ErrorKind::Count,
            format!("{what}: {len} floats are not a whole number of samples of {features} features"),
        ));
    }
    Ok(len / features)
}

/// Static English text for a status code.
pub fn status_string(status: i32) -> String {
    // SAFETY: any code is accepted.
    text(unsafe { sys::snn_status_string(status) })
}

/// The loaded library's version as MAJOR * 1000000 + MINOR * 1000 + PATCH.
pub fn version_number() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::snn_version_number() }
}

/// The loaded library's version, e.g. "0.1.0".
pub fn version_string() -> String {
    // SAFETY: no arguments.
    text(unsafe { sys::snn_version_string() })
}

/// The features of the loaded library, e.g. "cpu openblas cuda-plugin".
pub fn build_features() -> String {
    // SAFETY: no arguments.
    text(unsafe { sys::snn_build_features() })
}

/// Whether `feature` (one word of [`build_features`]) is in this build.
pub fn has_feature(feature: &str) -> bool {
    match CString::new(feature) {
        // SAFETY: a valid C string.
        Ok(f) => unsafe { sys::snn_has_feature(f.as_ptr()) != 0 },
        Err(_) => false,
    }
}

/// Checks once that the loaded library's major version is this crate's.
/// Every constructor calls it, so a mismatch is an error before any handle
/// exists.
pub fn check_version() -> Result<(), Error> {
    static CHECKED: OnceLock<Result<(), Error>> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let major: i32 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap_or(-1);
            let loaded = version_number();
            if loaded / 1_000_000 == major {
                Ok(())
            } else {
                Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("libsnn {} is loaded but this crate needs major version {major}", version_string()),
                ))
            }
        })
        .clone()
}

/// Bounds the CPU threads the library uses (OpenBLAS included); `n >= 1`.
pub fn set_num_threads(n: usize) -> Result<(), Error> {
    let n = i32::try_from(n).map_err(|_| {
        Error::new(ErrorKind::InvalidArgument, format!("set_num_threads: {n} does not fit in int32_t"))
    })?;
    // SAFETY: plain value.
    check(unsafe { sys::snn_set_num_threads(n) })
}

/// The current CPU thread bound.
pub fn num_threads() -> usize {
    // SAFETY: no arguments.
    usize::try_from(unsafe { sys::snn_get_num_threads() }).unwrap_or(1)
}

/// Makes backprop and optimiser steps fail with [`ErrorKind::NotFinite`]
/// instead of writing NaN or Inf into the model.
pub fn set_check_finite(on: bool) -> Result<(), Error> {
    // SAFETY: plain value.
    check(unsafe { sys::snn_set_check_finite(i32::from(on)) })
}

/// Lets GPU caches created afterwards use TF32 tensor-core math.
pub fn set_allow_tf32(on: bool) -> Result<(), Error> {
    // SAFETY: plain value.
    check(unsafe { sys::snn_set_allow_tf32(i32::from(on)) })
}

// ---------------------------------------------------------------------------
// Log callback

/// Severity passed to the log callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    /// A failed call's message (`SNN_LOG_ERROR`).
    Error,
    /// Something the caller may want to fix, the call went on (`SNN_LOG_WARNING`).
    Warning,
    /// A note, e.g. which GPU plugin was loaded (`SNN_LOG_INFO`).
    Info,
}

type LogCallback = Arc<dyn Fn(LogLevel, &str) + Send + Sync>;

/// The installed callback. The trampoline clones the `Arc` and calls it with
/// no lock held, so a replaced callback lives until its last call returns
/// (the library may still run it on another thread after the replacement).
static LOG_CALLBACK: RwLock<Option<LogCallback>> = RwLock::new(None);

thread_local! {
    /// A panic of the callback during the current call on this thread.
    static LOG_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn take_log_panic() -> Option<String> {
    LOG_PANIC.try_with(|p| p.borrow_mut().take()).ok().flatten()
}

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic whose payload is not a string".to_owned()
    }
}

unsafe extern "C" fn log_trampoline(_user_data: *mut c_void, level: i32, message: *const c_char) {
    // Nothing may unwind into the library's C frames: everything, the lock
    // included, runs inside catch_unwind.
    let outcome = panic::catch_unwind(|| {
        let callback = LOG_CALLBACK.read().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(callback) = callback {
            let message = if message.is_null() {
                Cow::Borrowed("")
            } else {
                // SAFETY: the library passes a NUL-terminated string, valid
                // during this call.
                unsafe { CStr::from_ptr(message) }.to_string_lossy()
            };
            let level = match level {
                sys::SNN_LOG_ERROR => LogLevel::Error,
                sys::SNN_LOG_WARNING => LogLevel::Warning,
                _ => LogLevel::Info,
            };
            callback(level, &message);
        }
    });
    if let Err(payload) = outcome {
        let text = panic_text(payload.as_ref());
        // Dropping a payload may panic in turn; that stops here too.
        let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
        let _ = LOG_PANIC.try_with(|p| *p.borrow_mut() = Some(text));
    }
}

/// Installs the process-wide log callback, replacing any other. It receives
/// every failed call's message (level [`LogLevel::Error`]) and notes of the
/// GPU plugin, on the thread of the call that logged, possibly on several
/// threads at once: hence `Fn + Send + Sync` (keep mutable state behind a
/// `Mutex` or an atomic). It must not call into snn, except
/// [`set_log_callback`] and [`clear_log_callback`].
///
/// A panic inside the callback never unwinds into the library. Under the
/// default `panic = "unwind"` it is caught: the message being logged is
/// dropped, and the callback stays installed. When the call that logged
/// failed, its [`Error`] carries the panic's message
/// ([`Error::log_callback_panic`]); when it succeeded (a note), it still
/// returns `Ok` and the panic is known only to the panic hook, which reports
/// it as for any panic. Under `panic = "abort"` (a setting of the profile
/// that builds the final binary) nothing can catch a panic: one inside the
/// callback aborts the process, as it would anywhere else.
pub fn set_log_callback<F>(callback: F) -> Result<(), Error>
where
    F: Fn(LogLevel, &str) + Send + Sync + 'static,
{
    let mut slot = LOG_CALLBACK.write().unwrap_or_else(PoisonError::into_inner);
    *slot = Some(Arc::new(callback));
    // SAFETY: the trampoline ignores user_data and reads LOG_CALLBACK.
    check(unsafe { sys::snn_set_log_callback(Some(log_trampoline), ptr::null_mut()) })
}

/// Removes the log callback.
pub fn clear_log_callback() -> Result<(), Error> {
    let mut slot = LOG_CALLBACK.write().unwrap_or_else(PoisonError::into_inner);
    *slot = None;
    // SAFETY: removing the callback.
    check(unsafe { sys::snn_set_log_callback(None, ptr::null_mut()) })
}

// ---------------------------------------------------------------------------
// Devices

/// Where a model lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// The CPU (`SNN_DEVICE_CPU`).
    Cpu,
    /// The GPU of this index, from 0.
    Gpu(i32),
}

impl Device {
    fn from_raw(id: i32) -> Device {
        if id == sys::SNN_DEVICE_CPU {
            Device::Cpu
        } else {
            Device::Gpu(id)
        }
    }
    fn raw(self) -> i32 {
        match self {
            Device::Cpu => sys::SNN_DEVICE_CPU,
            Device::Gpu(i) => i,
        }
    }
}

/// Number of usable GPUs (0 without plugin, driver or device).
pub fn gpu_count() -> usize {
    // SAFETY: no arguments.
    let n = unsafe { sys::snn_gpu_count() };
    take_log_panic();
    usize::try_from(n).unwrap_or(0)
}

/// `Ok` when GPU `device` can be used, else the reason.
pub fn gpu_status(device: i32) -> Result<(), Error> {
    // SAFETY: plain value.
    check(unsafe { sys::snn_gpu_status(device) })
}

// ---------------------------------------------------------------------------
// Mixed precision

/// The precision of a [`ForwardCache`]'s passes, `torch.autocast`'s rule:
/// the matrix products of dense, conv, conv1d, attention, lstm and gru
/// layers (forward and backward) round their operands to bf16 or fp16 and
/// accumulate in float32; everything else (activations, normalisations,
/// softmax, pooling, losses, optimiser steps) computes in float32. The
/// parameters stay float32 (the master copy) and gradients arrive float32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Precision {
    /// float32 everywhere (`SNN_PRECISION_FLOAT32`, the default).
    #[default]
    Float32 = 0,
    /// bf16 operands, float32 accumulation (`SNN_PRECISION_BF16`): natively
    /// on CPUs with AVX-512 BF16 and GPUs of compute capability 8.0 or
    /// newer, emulated on other CPUs (same values, no speed-up).
    Bf16 = 1,
    /// fp16 operands, float32 accumulation (`SNN_PRECISION_FP16`), GPUs
    /// only; use it with loss scaling ([`BackwardCache::set_loss_scaling`]).
    Fp16 = 2,
}

impl Precision {
    fn from_raw(raw: sys::snn_precision) -> Result<Precision, Error> {
        match raw {
            sys::SNN_PRECISION_FLOAT32 => Ok(Precision::Float32),
            sys::SNN_PRECISION_BF16 => Ok(Precision::Bf16),
            sys::SNN_PRECISION_FP16 => Ok(Precision::Fp16),
            other => Err(Error::new(ErrorKind::Internal, format!("the library returned precision {other}"))),
        }
    }
}

/// Whether `device` can compute in `precision`: `Ok(true)` when natively,
/// `Ok(false)` when emulated (bf16 on a CPU without AVX-512 BF16: the same
/// values, no speed-up), [`ErrorKind::Unsupported`] with the reason when it
/// cannot (fp16 on the CPU), and the errors of [`gpu_status`] for a GPU.
pub fn precision_support(device: Device, precision: Precision) -> Result<bool, Error> {
    let mut native = 0i32;
    // SAFETY: plain values, valid out pointer.
    check(unsafe { sys::snn_precision_support(device.raw(), precision as i32, &mut native) })?;
    Ok(native != 0)
}

/// Dynamic loss scaling of a [`BackwardCache`], as PyTorch's `GradScaler`:
/// read with [`BackwardCache::loss_scaling`], set with
/// [`BackwardCache::set_loss_scaling_state`].
///
/// While on, backprop multiplies the loss's gradient by `scale`, divides
/// the gradients by it and checks them: finite gradients count a good step
/// (after `growth_interval` in a row the scale is multiplied by
/// `growth_factor`); an overflow marks the step `skipped` (the next
/// [`Optimiser::step`] changes nothing) and multiplies the scale by
/// `backoff_factor`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossScaling {
    /// Whether loss scaling is on.
    pub on: bool,
    /// The scale of the next backprop (1 when off); finite and > 0 as a float.
    pub scale: f64,
    /// Multiplies the scale after `growth_interval` good steps; > 1.
    pub growth_factor: f64,
    /// Multiplies the scale after an overflow; in (0, 1).
    pub backoff_factor: f64,
    /// Good steps in a row before the scale grows; in [1, 2^53].
    pub growth_interval: u64,
    /// Good steps counted towards the next growth; below `growth_interval`.
    pub good_steps: u64,
    /// Whether the last backprop overflowed, so its step is skipped (read
    /// only: [`BackwardCache::set_loss_scaling_state`] ignores it).
    pub skipped: bool,
}

impl Default for LossScaling {
    /// On, with PyTorch's defaults: scale 65536, growth 2, backoff 0.5,
    /// interval 2000, no good steps yet.
    fn default() -> LossScaling {
        LossScaling {
            on: true,
            scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            good_steps: 0,
            skipped: false,
        }
    }
}

// ---------------------------------------------------------------------------
// Models

/// Where one layer's parameters lie in the flat vector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerParams {
    /// The weights: dense `[out][in]`, conv `[out][in][kh][kw]`, norms `[shape]`.
    pub weight: Range<usize>,
    /// The bias, right after the weights (empty with `nobias`).
    pub bias: Range<usize>,
}

/// A network: its layers, its flat parameter vector and its state (the
/// running statistics of batchnorm layers).
///
/// `Model` is `Send` and `Sync`. Its `&self` methods only read the model,
/// which the C library allows from several threads at once (several caches
/// may run one model concurrently); everything that writes the parameters or
/// the state takes `&mut self` (an optimiser step, [`Model::init`],
/// [`Model::set_parameters`], [`Model::set_state`], moving to another
/// device). The one write behind `&self` is a forward pass in training mode
/// of a model with state, which updates the running statistics: the model
/// serialises those passes with the readers of its state through a
/// read-write lock (taken only by models that have state).
pub struct Model {
    raw: NonNull<sys::snn_model>,
    has_state: bool,
    state_lock: RwLock<()>,
}

// SAFETY: the handle may move between threads; shared use is read-only, as
// the type's documentation explains, and the state's one writer behind
// `&self` holds the write lock.
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

fn take<T>(status: sys::snn_status, out: *mut T) -> Result<NonNull<T>, Error> {
    check(status)?;
    NonNull::new(out).ok_or_else(|| Error::new(ErrorKind::Internal, "the library returned a NULL handle".to_owned()))
}

/// What an ONNX file may leave open, for [`Model::import_onnx`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OnnxImportOptions {
    /// Steps of a sequence input whose length the file leaves symbolic;
    /// 0: none given (such a file is then refused).
    pub sequence_length: i64,
    /// The batch at which shape subgraphs that read the batch are folded; 0: none.
    pub batch: i64,
}

impl OnnxImportOptions {
    fn raw(&self) -> sys::snn_onnx_import_options {
        sys::snn_onnx_import_options {
            size: std::mem::size_of::<sys::snn_onnx_import_options>(),
            sequence_length: self.sequence_length,
            batch: self.batch,
        }
    }
}

/// Options of [`Model::export_onnx`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OnnxExportOptions {
    /// A sequence model gets a second graph input "lengths" (int32, one per sample).
    pub lengths: bool,
}

impl OnnxExportOptions {
    fn raw(&self) -> sys::snn_onnx_export_options {
        sys::snn_onnx_export_options {
            size: std::mem::size_of::<sys::snn_onnx_export_options>(),
            lengths: i32::from(self.lengths),
        }
    }
}

impl Model {
    fn from_raw(raw: NonNull<sys::snn_model>) -> Result<Model, Error> {
        let mut model = Model { raw, has_state: false, state_lock: RwLock::new(()) };
        model.has_state = model.state_count()? > 0;
        Ok(model)
    }

    /// Parses a spec such as `"input 28x28x1; conv 5x5 16 relu; maxpool 2; flatten; dense 10"`.
    pub fn new(spec: &str) -> Result<Model, Error> {
        check_version()?;
        let spec = c_string("Model::new: spec", spec)?;
        let mut out = ptr::null_mut();
        // SAFETY: valid string and out pointer.
        let status = unsafe { sys::snn_model_create(spec.as_ptr(), &mut out) };
        Model::from_raw(take(status, out)?)
    }

    /// Loads a model file (safetensors) onto the CPU.
    pub fn load(path: impl AsRef<Path>) -> Result<Model, Error> {
        check_version()?;
        let path = path_string("Model::load", path.as_ref())?;
        let mut out = ptr::null_mut();
        // SAFETY: valid string and out pointer.
        let status = unsafe { sys::snn_model_load(path.as_ptr(), &mut out) };
        Model::from_raw(take(status, out)?)
    }

    /// Reads a model from the bytes of a model file.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model, Error> {
        check_version()?;
        let mut out = ptr::null_mut();
        // SAFETY: the slice is valid for its length; it is not kept.
        let status = unsafe { sys::snn_model_load_from_buffer(bytes.as_ptr().cast(), bytes.len(), &mut out) };
        Model::from_raw(take(status, out)?)
    }

    /// Imports an ONNX file (what `torch.onnx.export` writes for the models
    /// snn holds, or snn's own export) as a new CPU model, ready to run and
    /// to train. A file snn cannot represent gives [`ErrorKind::Unsupported`]
    /// whose message lists every node that cannot be mapped.
    pub fn import_onnx(path: impl AsRef<Path>, options: &OnnxImportOptions) -> Result<Model, Error> {
        check_version()?;
        let path = path_string("Model::import_onnx", path.as_ref())?;
        let raw = options.raw();
        let mut out = ptr::null_mut();
        // SAFETY: valid string, options struct and out pointer.
        let status = unsafe { sys::snn_model_import_onnx(path.as_ptr(), &raw, &mut out) };
        Model::from_raw(take(status, out)?)
    }

    /// [`Model::import_onnx`] from the bytes of an ONNX file.
    pub fn import_onnx_bytes(bytes: &[u8], options: &OnnxImportOptions) -> Result<Model, Error> {
        check_version()?;
        let raw = options.raw();
        let mut out = ptr::null_mut();
        // SAFETY: the slice is valid for its length and not kept; valid options and out pointer.
        let status =
            unsafe { sys::snn_model_import_onnx_from_buffer(bytes.as_ptr().cast(), bytes.len(), &raw, &mut out) };
        Model::from_raw(take(status, out)?)
    }

    /// Loads a training checkpoint as a CPU model and its optimiser.
    pub fn load_checkpoint(path: impl AsRef<Path>) -> Result<(Model, Optimiser), Error> {
        check_version()?;
        let path = path_string("Model::load_checkpoint", path.as_ref())?;
        let mut model = ptr::null_mut();
        let mut optimiser = ptr::null_mut();
        // SAFETY: valid string and out pointers.
        let status = unsafe { sys::snn_checkpoint_load(path.as_ptr(), &mut model, &mut optimiser) };
        check(status)?;
        let optimiser = Optimiser { raw: take(sys::SNN_OK, optimiser)?, _not_sync: PhantomData };
        let model = Model::from_raw(take(sys::SNN_OK, model)?)?;
        Ok((model, optimiser))
    }

    fn ptr(&self) -> *mut sys::snn_model {
        self.raw.as_ptr()
    }

    /// Held while the state is read (inference passes, backprop, saves).
    fn read_state(&self) -> Option<RwLockReadGuard<'_, ()>> {
        self.has_state.then(|| self.state_lock.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Held while a training-mode forward pass writes the state.
    fn write_state(&self) -> Option<RwLockWriteGuard<'_, ()>> {
        self.has_state.then(|| self.state_lock.write().unwrap_or_else(PoisonError::into_inner))
    }

    /// Saves atomically to a model file (parameters and state).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path_string("Model::save", path.as_ref())?;
        let _state = self.read_state();
        // SAFETY: live handle, valid string.
        check(unsafe { sys::snn_model_save(self.ptr(), path.as_ptr()) })
    }

    /// The bytes of the model file.
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        let _state = self.read_state();
        let mut size = 0usize;
        // SAFETY: a size query (NULL buffer, capacity 0).
        check(unsafe { sys::snn_model_save_to_buffer(self.ptr(), ptr::null_mut(), 0, &mut size) })?;
        let mut bytes = vec![0u8; size];
        // SAFETY: the buffer holds `size` bytes.
        check(unsafe { sys::snn_model_save_to_buffer(self.ptr(), bytes.as_mut_ptr().cast(), size, &mut size) })?;
        bytes.truncate(size);
        Ok(bytes)
    }

    /// Writes the model as an ONNX file (opset 17, symbolic batch), atomically.
    pub fn export_onnx(&self, path: impl AsRef<Path>, options: &OnnxExportOptions) -> Result<(), Error> {
        let path = path_string("Model::export_onnx", path.as_ref())?;
        let raw = options.raw();
        let _state = self.read_state();
        // SAFETY: live handle, valid options and string.
        check(unsafe { sys::snn_model_export_onnx(self.ptr(), &raw, path.as_ptr()) })
    }

    /// The bytes of the model's ONNX file.
    pub fn export_onnx_bytes(&self, options: &OnnxExportOptions) -> Result<Vec<u8>, Error> {
        let raw = options.raw();
        let _state = self.read_state();
        let mut size = 0usize;
        // SAFETY: a size query (NULL buffer, capacity 0).
        check(unsafe { sys::snn_model_export_onnx_to_buffer(self.ptr(), &raw, ptr::null_mut(), 0, &mut size) })?;
        let mut bytes = vec![0u8; size];
        // SAFETY: the buffer holds `size` bytes.
        check(unsafe {
            sys::snn_model_export_onnx_to_buffer(self.ptr(), &raw, bytes.as_mut_ptr().cast(), size, &mut size)
        })?;
        bytes.truncate(size);
        Ok(bytes)
    }

    /// Saves a training checkpoint: the model plus the optimiser's kind,
    /// settings, step count and moments; training resumed from it continues
    /// bit-identically.
    pub fn save_checkpoint(&self, optimiser: &Optimiser, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path_string("Model::save_checkpoint", path.as_ref())?;
        let _state = self.read_state();
        // SAFETY: live handles, valid string. The optimiser may follow the
        // model to its device here; it is not Sync, so no other thread uses it.
        check(unsafe { sys::snn_checkpoint_save(self.ptr(), optimiser.raw.as_ptr(), path.as_ptr()) })
    }

    /// [`Model::save_checkpoint`] plus the loss scaling of `grads` when it is
    /// on (its settings, scale and good steps), so training with a
    /// `GradScaler` resumes where it was: [`Model::load_checkpoint`] reads
    /// the file as any checkpoint, [`BackwardCache::load_loss_scaling`] gives
    /// a backward cache its scaling back.
    pub fn save_checkpoint_with_loss_scaling(
        &self,
        optimiser: &Optimiser,
        grads: &BackwardCache,
        path: impl AsRef<Path>,
    ) -> Result<(), Error> {
        let path = path_string("Model::save_checkpoint_with_loss_scaling", path.as_ref())?;
        let _state = self.read_state();
        // SAFETY: live handles, valid string; as save_checkpoint.
        check(unsafe {
            sys::snn_checkpoint_save_v2(self.ptr(), optimiser.raw.as_ptr(), grads.ptr(), path.as_ptr())
        })
    }

    /// The canonical spec, which [`Model::new`] parses back into the same model.
    pub fn describe(&self) -> Result<String, Error> {
        let mut length = 0usize;
        // SAFETY: a length query.
        check(unsafe { sys::snn_model_describe(self.ptr(), ptr::null_mut(), 0, &mut length) })?;
        let mut buf = vec![0u8; length + 1];
        // SAFETY: the buffer holds length + 1 bytes.
        check(unsafe { sys::snn_model_describe(self.ptr(), buf.as_mut_ptr().cast(), buf.len(), &mut length) })?;
        buf.truncate(length);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Number of layers, the input layer (layer 0) included.
    pub fn layer_count(&self) -> Result<usize, Error> {
        let mut n = 0i64;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_model_layer_count(self.ptr(), &mut n) })?;
        to_usize("Model::layer_count", n)
    }

    fn layer_index(what: &str, layer: usize) -> Result<i64, Error> {
        to_i64(what, layer, ErrorKind::InvalidArgument)
    }

    /// The output shape of a layer as (channels, height, width); a vector of
    /// N features is (N, 1, 1).
    pub fn layer_shape(&self, layer: usize) -> Result<(usize, usize, usize), Error> {
        let index = Model::layer_index("Model::layer_shape: layer", layer)?;
        let (mut c, mut h, mut w) = (0i64, 0i64, 0i64);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_model_layer_shape(self.ptr(), index, &mut c, &mut h, &mut w) })?;
        let what = "Model::layer_shape";
        Ok((to_usize(what, c)?, to_usize(what, h)?, to_usize(what, w)?))
    }

    /// Where a layer's weights and bias lie in the flat parameter vector
    /// (empty ranges for layers without them).
    pub fn layer_params(&self, layer: usize) -> Result<LayerParams, Error> {
        let index = Model::layer_index("Model::layer_params: layer", layer)?;
        let (mut wo, mut wc, mut bo, mut bc) = (0usize, 0usize, 0usize, 0usize);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_model_layer_params(self.ptr(), index, &mut wo, &mut wc, &mut bo, &mut bc) })?;
        Ok(LayerParams { weight: wo..wo + wc, bias: bo..bo + bc })
    }

    /// Where a layer's state lies in the state vector (batchnorm:
    /// `running_mean[C]`, `running_var[C]`, `num_batches_tracked[1]`; empty for
    /// layers without state).
    pub fn layer_state(&self, layer: usize) -> Result<Range<usize>, Error> {
        let index = Model::layer_index("Model::layer_state: layer", layer)?;
        let (mut offset, mut count) = (0usize, 0usize);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_model_layer_state(self.ptr(), index, &mut offset, &mut count) })?;
        Ok(offset..offset + count)
    }

    /// The input of a sequence model: its steps T (`input seq TxF`,
    /// `input tokens T vocab=V`) and its vocabulary V (token ids only); both
    /// 0 for a model whose input is not a sequence.
    pub fn input_sequence(&self) -> Result<SequenceInput, Error> {
        let (mut steps, mut vocab) = (0i64, 0i64);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_model_input_sequence(self.ptr(), &mut steps, &mut vocab) })?;
        let what = "Model::input_sequence";
        Ok(SequenceInput { steps: to_usize(what, steps)?, vocab: to_usize(what, vocab)? })
    }

    /// Class labels per sample of the output: T for a sequence of T steps
    /// (one label per step), 1 otherwise. A model with a sequence input
    /// keeps sequences (`c` features, `h` steps, `w` = 1) or ends in vectors.
    fn labels_per_sample(&self) -> Result<usize, Error> {
        if self.input_sequence()?.steps == 0 {
            return Ok(1);
        }
        let (_, steps, width) = self.layer_shape(self.layer_count()? - 1)?;
        Ok(if width == 1 { steps } else { 1 })
    }

    /// Input features per sample (C*H*W for images, T*F for sequences, T for token ids).
    pub fn input_size(&self) -> Result<usize, Error> {
        let mut n = 0usize;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_model_input_size(self.ptr(), &mut n) })?;
        Ok(n)
    }

    /// Outputs per sample.
    pub fn output_size(&self) -> Result<usize, Error> {
        let mut n = 0usize;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_model_output_size(self.ptr(), &mut n) })?;
        Ok(n)
    }

    /// Number of trainable parameters, the length of the flat vector.
    pub fn parameter_count(&self) -> Result<usize, Error> {
        let mut n = 0usize;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_parameter_count(self.ptr(), &mut n) })?;
        Ok(n)
    }

    /// Re-initialises every parameter from `seed` (bit-identical everywhere).
    pub fn init(&mut self, seed: u64) -> Result<(), Error> {
        // SAFETY: live handle, exclusive borrow.
        check(unsafe { sys::snn_model_init(self.ptr(), seed) })
    }

    fn view(&self) -> Result<(*mut f32, usize), Error> {
        let mut data = ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: live handle, valid out pointers; the call only reads.
        check(unsafe { sys::snn_parameters(self.ptr(), &mut data, &mut count) })?;
        Ok((data, count))
    }

    /// Zero-copy view of a CPU model's flat parameter vector
    /// ([`ErrorKind::DeviceMismatch`] on a GPU).
    pub fn parameters(&self) -> Result<&[f32], Error> {
        let (data, count) = self.view()?;
        // SAFETY: valid for `count` floats until the model is destroyed or
        // moved, and written only through `&mut self`: the borrow excludes both.
        Ok(unsafe { std::slice::from_raw_parts(data, count) })
    }

    /// Writable zero-copy view of a CPU model's parameters.
    pub fn parameters_mut(&mut self) -> Result<&mut [f32], Error> {
        let (data, count) = self.view()?;
        // SAFETY: as `parameters`, and the borrow is exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(data, count) })
    }

    /// Copies the parameters out, on any device; `dst.len()` must be the
    /// parameter count.
    pub fn get_parameters(&self, dst: &mut [f32]) -> Result<(), Error> {
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_parameters(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }

    /// The parameters as a new vector, on any device.
    pub fn parameters_vec(&self) -> Result<Vec<f32>, Error> {
        let mut v = vec![0f32; self.parameter_count()?];
        self.get_parameters(&mut v)?;
        Ok(v)
    }

    /// Copies the parameters in, on any device.
    pub fn set_parameters(&mut self, src: &[f32]) -> Result<(), Error> {
        // SAFETY: src is valid for its length; exclusive borrow.
        check(unsafe { sys::snn_set_parameters(self.ptr(), src.as_ptr(), src.len()) })
    }

    /// Number of state values (0 for a model without batchnorm).
    pub fn state_count(&self) -> Result<usize, Error> {
        let mut n = 0usize;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_state_count(self.ptr(), &mut n) })?;
        Ok(n)
    }

    /// Copies the state out; `dst.len()` must be the state count.
    pub fn get_state(&self, dst: &mut [f32]) -> Result<(), Error> {
        let _state = self.read_state();
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_state(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }

    /// The state as a new vector.
    pub fn state(&self) -> Result<Vec<f32>, Error> {
        let mut v = vec![0f32; self.state_count()?];
        self.get_state(&mut v)?;
        Ok(v)
    }

    /// Overwrites the state; `src.len()` must be the state count.
    pub fn set_state(&mut self, src: &[f32]) -> Result<(), Error> {
        // SAFETY: src is valid for its length; exclusive borrow.
        check(unsafe { sys::snn_set_state(self.ptr(), src.as_ptr(), src.len()) })
    }

    /// Where the model lives.
    pub fn device(&self) -> Result<Device, Error> {
        let mut d = 0i32;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_model_device(self.ptr(), &mut d) })?;
        Ok(Device::from_raw(d))
    }

    /// Moves the model to GPU `device`; on failure it stays where it was.
    /// Its caches and optimisers follow it on their next use with it.
    pub fn to_gpu(&mut self, device: i32) -> Result<(), Error> {
        // SAFETY: live handle; the exclusive borrow ends every parameter view.
        check(unsafe { sys::snn_to_gpu(self.ptr(), device) })
    }

    /// Moves the model back to the CPU.
    pub fn to_cpu(&mut self) -> Result<(), Error> {
        // SAFETY: as to_gpu.
        check(unsafe { sys::snn_to_cpu(self.ptr()) })
    }

    /// Moves the model to GPU 0 when one can be used, else keeps it on the CPU.
    pub fn to_best_device(&mut self) -> Result<Device, Error> {
        let mut d = 0i32;
        // SAFETY: as to_gpu.
        check(unsafe { sys::snn_to_best_device(self.ptr(), &mut d) })?;
        Ok(Device::from_raw(d))
    }

    /// A forward cache for batches up to `max_batch`, on the model's device,
    /// in training mode (batchnorm updates the model's running statistics,
    /// dropout drops: [`Model::preallocate_inference`] makes one for
    /// inference). Each [`ForwardCache::set_inputs`] sets the batch
    /// of the passes that follow to its number of samples, `max_batch` at most.
    pub fn preallocate(&self, max_batch: usize) -> Result<ForwardCache, Error> {
        let max_batch = to_i64("Model::preallocate: max_batch", max_batch, ErrorKind::Batch)?;
        let features = self.input_size()?;
        let tokens = self.input_sequence()?.vocab > 0;
        let mut out = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        let status = unsafe { sys::snn_preallocate(self.ptr(), max_batch, &mut out) };
        Ok(ForwardCache { raw: take(status, out)?, features, tokens, _not_sync: PhantomData })
    }

    /// A forward cache for batches up to `max_batch` in inference mode:
    /// batchnorm uses the running statistics and leaves them alone, dropout
    /// passes everything through. [`Model::preallocate`]'s caches start in
    /// training mode instead; this is `preallocate` then
    /// `set_training(false)`.
    pub fn preallocate_inference(&self, max_batch: usize) -> Result<ForwardCache, Error> {
        let mut fwd = self.preallocate(max_batch)?;
        fwd.set_training(false)?;
        Ok(fwd)
    }

    /// Runs the model in inference mode on `inputs`, `[batch][features]`
    /// (`[batch][T][F]` for `input seq TxF`), and returns the outputs with
    /// their shape. One call: it allocates a cache for the batch each time,
    /// so a loop over many batches is faster with one cache of
    /// [`Model::preallocate_inference`]. A slice that is not a whole number
    /// of samples is [`ErrorKind::Count`], an empty one [`ErrorKind::Batch`];
    /// a model of token ids takes [`Model::predict_tokens`].
    pub fn predict(&self, inputs: &[f32]) -> Result<Prediction, Error> {
        let samples = whole_samples("Model::predict: inputs", inputs.len(), self.input_size()?)?;
        if samples == 0 {
            return Err(Error::new(ErrorKind::Batch, "Model::predict: inputs hold no sample".to_owned()));
        }
        let mut fwd = self.preallocate_inference(samples)?;
        fwd.set_inputs(inputs)?;
        self.run_prediction(&mut fwd, samples)
    }

    /// [`Model::predict`] for a model of token ids (`input tokens T vocab=V`):
    /// `tokens` is `[batch][T]`, errors as [`ForwardCache::set_tokens`].
    pub fn predict_tokens(&self, tokens: &[i32]) -> Result<Prediction, Error> {
        let steps = self.input_sequence()?.steps.max(1);
        let samples = whole_ids("Model::predict_tokens: tokens", tokens.len(), steps)?;
        if samples == 0 {
            return Err(Error::new(ErrorKind::Batch, "Model::predict_tokens: tokens hold no sample".to_owned()));
        }
        let mut fwd = self.preallocate_inference(samples)?;
        fwd.set_tokens(tokens)?;
        self.run_prediction(&mut fwd, samples)
    }

    fn run_prediction(&self, fwd: &mut ForwardCache, batch: usize) -> Result<Prediction, Error> {
        fwd.forward(self)?;
        let mut values = vec![0.0; batch * self.output_size()?];
        fwd.get_outputs(&mut values)?;
        let (c, h, w) = self.layer_shape(self.layer_count()? - 1)?;
        let shape = if h == 1 && w == 1 {
            vec![batch, c]
        } else if w == 1 && self.input_sequence()?.steps > 0 {
            vec![batch, h, c]
        } else {
            vec![batch, c, h, w]
        };
        Ok(Prediction { values, shape })
    }

    /// Gradient buffers for batches up to `max_batch`.
    pub fn preallocate_grads(&self, max_batch: usize) -> Result<BackwardCache, Error> {
        let max_batch = to_i64("Model::preallocate_grads: max_batch", max_batch, ErrorKind::Batch)?;
        let labels_per_sample = self.labels_per_sample()?;
        let mut out = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        let status = unsafe { sys::snn_preallocate_grads(self.ptr(), max_batch, &mut out) };
        Ok(BackwardCache { raw: take(status, out)?, labels_per_sample, _not_sync: PhantomData })
    }

    /// An optimiser with PyTorch's default hyperparameters.
    pub fn optimiser(&self, kind: OptimiserKind) -> Result<Optimiser, Error> {
        let mut out = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        let status = unsafe { sys::snn_optimiser_create(self.ptr(), kind as i32, &mut out) };
        Ok(Optimiser { raw: take(status, out)?, _not_sync: PhantomData })
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once. Its caches and optimisers stay
        // valid (the library allows any order); a call that needs the model
        // takes a `&Model`, so none can name a dropped one.
        unsafe { sys::snn_model_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model").field("spec", &self.describe().unwrap_or_default()).finish()
    }
}

/// The outputs of [`Model::predict`] and their shape: `[batch, outputs]`
/// for vectors, `[batch, T, features]` for a sequence output (`[batch][T][F]`
/// as the inputs), `[batch, channels, height, width]` for an image.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// The outputs, row-major in `shape`.
    pub values: Vec<f32>,
    /// The batch first, then each sample's dimensions.
    pub shape: Vec<usize>,
}

impl Prediction {
    /// The index of the largest output of each row of the last dimension:
    /// each sample's class for a classifier (each step's for a sequence
    /// output). The first wins a tie.
    pub fn classes(&self) -> Vec<usize> {
        let width = self.shape.last().copied().unwrap_or(1).max(1);
        self.values
            .chunks(width)
            .map(|row| row.iter().enumerate().fold(0, |best, (i, v)| if *v > row[best] { i } else { best }))
            .collect()
    }
}

/// Where a forward cache's dropout generator stands ([`ForwardCache::rng_state`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RngState {
    /// The seed last set ([`ForwardCache::set_seed`]; 0 for a new cache).
    pub seed: u64,
    /// Training passes run since the seed was set (inference passes do not count).
    pub passes: u64,
}

/// The input of a sequence model ([`Model::input_sequence`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SequenceInput {
    /// Steps T per sample; 0 when the input is not a sequence.
    pub steps: usize,
    /// Token ids lie in `0..vocab` (`input tokens T vocab=V`); 0 for a model of floats.
    pub vocab: usize,
}

/// Marks a handle `Send` but not `Sync`: one thread uses it at a time.
type NotSync = PhantomData<Cell<()>>;

// ---------------------------------------------------------------------------
// Forward pass

/// The buffers of forward passes of one model, for batches up to its
/// maximum. It keeps no reference to the model: each call that needs the
/// model takes it, and the library refuses another model's
/// ([`ErrorKind::ModelMismatch`]). `Send`, not `Sync`:
///
/// ```compile_fail
/// fn sync<T: Sync>() {}
/// sync::<snn::ForwardCache>();
/// ```
///
/// and a model cannot change while a thread runs it:
///
/// ```compile_fail,E0502
/// let mut model = snn::Model::new("input 1; dense 1")?;
/// std::thread::scope(|s| {
///     s.spawn(|| model.preallocate(1));
///     model.init(1)
/// })?;
/// # Ok::<(), snn::Error>(())
/// ```
pub struct ForwardCache {
    raw: NonNull<sys::snn_forward_cache>,
    /// The model's input features per sample, fixed by its spec (T for token ids).
    features: usize,
    /// Whether the model's input is token ids.
    tokens: bool,
    _not_sync: NotSync,
}

// SAFETY: a handle may move between threads; `NotSync` keeps it on one at a time.
unsafe impl Send for ForwardCache {}

impl ForwardCache {
    fn ptr(&self) -> *mut sys::snn_forward_cache {
        self.raw.as_ptr()
    }

    /// Sets the batch of the next [`ForwardCache::forward`] (1..=max_batch)
    /// without reallocating. [`ForwardCache::set_inputs`] and the gathers set
    /// it themselves; this is for [`ForwardCache::set_inputs_device`].
    pub fn set_batch(&mut self, batch: usize) -> Result<(), Error> {
        let batch = to_i64("ForwardCache::set_batch: batch", batch, ErrorKind::Batch)?;
        // SAFETY: live handle.
        check(unsafe { sys::snn_cache_set_batch(self.ptr(), batch) })
    }

    /// The current and the maximum batch size.
    pub fn batch(&self) -> Result<(usize, usize), Error> {
        let (mut b, mut m) = (0i64, 0i64);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_cache_batch(self.ptr(), &mut b, &mut m) })?;
        Ok((to_usize("ForwardCache::batch", b)?, to_usize("ForwardCache::batch", m)?))
    }

    /// Training mode (the default: batchnorm uses the batch's statistics and
    /// updates the model's, dropout drops) or inference mode (batchnorm uses
    /// the running statistics, dropout passes through).
    pub fn set_training(&mut self, on: bool) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_cache_set_training(self.ptr(), i32::from(on)) })
    }

    /// Inference rewrites (off for a new cache): an inference-mode float32
    /// pass on the CPU runs each batchnorm folded into the convolution or
    /// dense layer before it (and a relu after it in the same output pass),
    /// over a folded copy of the parameters the cache keeps and makes again
    /// when they change. Outputs match the plain pass within float32
    /// rounding; backprop of a rewritten pass fails with
    /// [`ErrorKind::State`]. Turning them on allocates once.
    pub fn set_inference_rewrites(&mut self, on: bool) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_cache_set_inference_rewrites(self.ptr(), i32::from(on)) })
    }

    /// Whether the cache's inference rewrites are on.
    pub fn inference_rewrites(&self) -> Result<bool, Error> {
        let mut on = 0i32;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_cache_inference_rewrites(self.ptr(), &mut on) })?;
        Ok(on != 0)
    }

    /// Whether the cache's passes run in training mode.
    pub fn training(&self) -> Result<bool, Error> {
        let mut on = 0i32;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_cache_training(self.ptr(), &mut on) })?;
        Ok(on != 0)
    }

    /// Sets the precision of the next passes (see [`Precision`]) and makes
    /// the layers' plans again: an allocation, so call it before the
    /// training loop. [`ErrorKind::Unsupported`] when the cache's device
    /// cannot run it or a layer has no kernels for it there (the message
    /// names the layer); the cache is unchanged on failure. The backward
    /// pass follows the precision of the forward pass it differentiates.
    pub fn set_precision(&mut self, precision: Precision) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_cache_set_precision(self.ptr(), precision as i32) })
    }

    /// The precision of the cache's passes ([`Precision::Float32`] for a new cache).
    pub fn precision(&self) -> Result<Precision, Error> {
        let mut p = 0i32;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_cache_precision(self.ptr(), &mut p) })?;
        Precision::from_raw(p)
    }

    /// Seeds the dropout masks and restarts their sequence: the masks of the
    /// training passes that follow depend only on the seed, the number of
    /// passes since and the layer. A new cache has seed 0.
    pub fn set_seed(&mut self, seed: u64) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_cache_set_seed(self.ptr(), seed) })
    }

    /// The dropout generator's state: the seed last set and the training
    /// passes run since. Save it with a checkpoint and restore it with
    /// [`ForwardCache::set_rng_state`] to resume a model with dropout bit for bit.
    pub fn rng_state(&self) -> Result<RngState, Error> {
        let (mut seed, mut passes) = (0u64, 0u64);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_cache_rng_state(self.ptr(), &mut seed, &mut passes) })?;
        Ok(RngState { seed, passes })
    }

    /// Restores a state read by [`ForwardCache::rng_state`], from this cache
    /// or any cache of a model with the same layers: the training passes that
    /// follow draw the masks the passes after that reading drew.
    /// `set_rng_state(RngState { seed, passes: 0 })` is `set_seed(seed)`.
    pub fn set_rng_state(&mut self, state: RngState) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_cache_set_rng_state(self.ptr(), state.seed, state.passes) })
    }

    /// Copies a batch of inputs, `[batch][features]` (`[batch][T][F]` for
    /// `input seq TxF`; token ids go through [`ForwardCache::set_tokens`]),
    /// resetting any lengths to full; the batch becomes
    /// `inputs.len() / features`, so the last, smaller batch of an epoch
    /// needs no [`ForwardCache::set_batch`]. A slice that is not a whole
    /// number of samples is [`ErrorKind::Count`]; none, or more samples than
    /// the cache's maximum batch, [`ErrorKind::Batch`]. A failed call changes
    /// nothing.
    pub fn set_inputs(&mut self, inputs: &[f32]) -> Result<(), Error> {
        let samples = whole_samples("ForwardCache::set_inputs: inputs", inputs.len(), self.features)?;
        let (_, max_batch) = self.batch()?;
        if samples == 0 || samples > max_batch {
            return Err(Error::new(
                ErrorKind::Batch,
                format!("ForwardCache::set_inputs: inputs hold {samples} samples; the cache takes 1 to {max_batch}"),
            ));
        }
        self.set_batch(samples)?;
        // SAFETY: the slice is valid for its length and copied.
        check(unsafe { sys::snn_set_inputs(self.ptr(), inputs.as_ptr(), inputs.len()) })
    }

    /// Gathers samples `indices` of `data`, which holds whole samples of
    /// the model's input size (anything else is [`ErrorKind::Count`]); the
    /// batch becomes `indices.len()`. As every gather
    /// ([`ForwardCache::set_tokens_gather`], [`ForwardCache::set_lengths_gather`],
    /// [`BackwardCache::set_labels_gather`]), it takes the data and the
    /// indices only: the cache knows its model's input size.
    pub fn set_inputs_gather(&mut self, data: &[f32], indices: &[i64]) -> Result<(), Error> {
        let samples = whole_samples("ForwardCache::set_inputs_gather: data", data.len(), self.features)?;
        // SAFETY: data holds `samples` whole samples; indices are checked by the library.
        check(unsafe { sys::snn_set_inputs_gather(self.ptr(), data.as_ptr(), samples, indices.as_ptr(), indices.len()) })
    }

    /// Gathers samples `indices` of a data set on the cache's device; the
    /// batch becomes `indices.len()`. A token data set ([`Dataset::tokens`])
    /// feeds a model of token ids (ids outside its vocabulary are
    /// [`ErrorKind::Token`]) and sets the gathered samples' lengths, when it
    /// has them, else every length is T.
    pub fn set_inputs_from_dataset(&mut self, dataset: &Dataset, indices: &[i64]) -> Result<(), Error> {
        // SAFETY: live handles, valid slice.
        check(unsafe {
            sys::snn_set_inputs_from_dataset(self.ptr(), dataset.raw.as_ptr(), indices.as_ptr(), indices.len())
        })
    }

    /// Copies `count` floats of inputs that already live in GPU memory on the
    /// cache's device (a GPU cache only: [`ErrorKind::DeviceMismatch`] on the
    /// CPU). `count` must be batch * features for the current batch: unlike
    /// [`ForwardCache::set_inputs`], this call does not set the batch (use
    /// [`ForwardCache::set_batch`] first).
    ///
    /// # Safety
    /// `device_inputs` must point to at least `count` floats of device memory
    /// on the cache's GPU.
    pub unsafe fn set_inputs_device(&mut self, device_inputs: *const f32, count: usize) -> Result<(), Error> {
        // SAFETY: the caller's contract.
        check(unsafe { sys::snn_set_inputs_device(self.ptr(), device_inputs, count) })
    }

    /// Runs `model` on the cache's inputs. Several threads may run one model
    /// at once, each with its own cache; a training-mode pass of a model
    /// with batchnorm, which updates its running statistics, waits for the
    /// other passes of that model.
    pub fn forward(&mut self, model: &Model) -> Result<(), Error> {
        let writes_state = model.has_state && self.training()?;
        let _write = if writes_state { model.write_state() } else { None };
        let _read = if writes_state { None } else { model.read_state() };
        // SAFETY: live handles; the library checks that the cache is the model's.
        check(unsafe { sys::snn_forward(self.ptr(), model.ptr()) })
    }

    /// Zero-copy view of the outputs of the last pass, `[batch][outputs]`
    /// (CPU caches; [`ErrorKind::DeviceMismatch`] on a GPU).
    pub fn outputs(&self) -> Result<&[f32], Error> {
        let mut data = ptr::null();
        let mut count = 0usize;
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_outputs(self.ptr(), &mut data, &mut count) })?;
        // SAFETY: valid until the next forward or a move, which need `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(data, count) })
    }

    /// Copies the outputs, on any device; `dst.len()` must be batch * outputs.
    pub fn get_outputs(&self, dst: &mut [f32]) -> Result<(), Error> {
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_outputs(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }

    /// Copies token ids for a model whose input is `input tokens T vocab=V`,
    /// `[batch][T]`; the batch becomes `tokens.len() / T`, as
    /// [`ForwardCache::set_inputs`] does, and every length is reset to T.
    /// An id outside `0..V` is [`ErrorKind::Token`] (the message names the
    /// sample, step and id), a model of floats [`ErrorKind::Unsupported`], a
    /// slice that is not whole samples [`ErrorKind::Count`]. A failed call
    /// copies nothing.
    pub fn set_tokens(&mut self, tokens: &[i32]) -> Result<(), Error> {
        if !self.tokens {
            // SAFETY: valid slice; the library refuses it, naming the model's input.
            return check(unsafe { sys::snn_set_tokens(self.ptr(), tokens.as_ptr(), tokens.len()) });
        }
        let samples = whole_ids("ForwardCache::set_tokens: tokens", tokens.len(), self.features)?;
        let (_, max_batch) = self.batch()?;
        if samples == 0 || samples > max_batch {
            return Err(Error::new(
                ErrorKind::Batch,
                format!("ForwardCache::set_tokens: tokens hold {samples} samples; the cache takes 1 to {max_batch}"),
            ));
        }
        self.set_batch(samples)?;
        // SAFETY: the slice is valid for its length and copied.
        check(unsafe { sys::snn_set_tokens(self.ptr(), tokens.as_ptr(), tokens.len()) })
    }

    /// Gathers rows `indices` of `tokens`, whole samples of T ids; the batch
    /// becomes `indices.len()` and every length T. Errors as
    /// [`ForwardCache::set_tokens`], and [`ErrorKind::InvalidArgument`] for an
    /// index out of range.
    pub fn set_tokens_gather(&mut self, tokens: &[i32], indices: &[i64]) -> Result<(), Error> {
        // A model of floats: the library refuses the ids, naming its input.
        let samples = if self.tokens {
            whole_ids("ForwardCache::set_tokens_gather: tokens", tokens.len(), self.features)?
        } else {
            tokens.len()
        };
        // SAFETY: tokens holds `samples` whole samples; indices are checked by the library.
        check(unsafe {
            sys::snn_set_tokens_gather(self.ptr(), tokens.as_ptr(), samples, indices.as_ptr(), indices.len())
        })
    }

    /// The valid steps of each sample of the inputs or tokens set last, one
    /// per sample, each in `1..=T`: sample s holds steps `0..lengths[s]` and
    /// padding after, which recurrent layers, attention, sequence pooling
    /// and the label losses leave out. Setting inputs or tokens resets every
    /// length to T, so set the lengths after them (and before the forward
    /// pass). A length outside `1..=T` is [`ErrorKind::InvalidArgument`], a
    /// count other than the batch [`ErrorKind::Count`], a model whose input
    /// is not a sequence (or whose layers change the steps)
    /// [`ErrorKind::Unsupported`], no inputs set [`ErrorKind::State`].
    pub fn set_lengths(&mut self, lengths: &[i32]) -> Result<(), Error> {
        // SAFETY: valid slice, copied.
        check(unsafe { sys::snn_set_lengths(self.ptr(), lengths.as_ptr(), lengths.len()) })
    }

    /// Length i becomes `lengths[indices[i]]`, for samples gathered with the
    /// same indices ([`ForwardCache::set_inputs_gather`],
    /// [`ForwardCache::set_tokens_gather`]). Errors as
    /// [`ForwardCache::set_lengths`], and [`ErrorKind::InvalidArgument`] for
    /// an index out of range.
    pub fn set_lengths_gather(&mut self, lengths: &[i32], indices: &[i64]) -> Result<(), Error> {
        // SAFETY: valid slices; indices are checked by the library.
        check(unsafe {
            sys::snn_set_lengths_gather(self.ptr(), lengths.as_ptr(), lengths.len(), indices.as_ptr(), indices.len())
        })
    }
}

impl Drop for ForwardCache {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { sys::snn_forward_cache_destroy(self.raw.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Backpropagation

/// A loss computed by [`BackwardCache::backprop`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Mean squared error against targets ([`BackwardCache::set_targets`]).
    Mse = 1,
    /// Softmax cross-entropy against 0-based labels ([`BackwardCache::set_labels`]).
    LogitCrossEntropy = 2,
    /// PyTorch's `HuberLoss(delta)` against targets, the mean over every
    /// output: `0.5 r^2` where `|r| < delta`, else `delta (|r| - 0.5 delta)`,
    /// `r = y - t`; delta (default 1) is set with
    /// [`BackwardCache::set_loss_parameter`].
    Huber = 3,
    /// PyTorch's `SmoothL1Loss(beta)` against targets, the mean over every
    /// output: `0.5 r^2 / beta` where `|r| < beta`, else `|r| - 0.5 beta`;
    /// beta (default 1, 0 for the L1 loss) is the loss parameter.
    SmoothL1 = 4,
    /// PyTorch's `BCEWithLogitsLoss`: binary cross-entropy of logits against
    /// probability targets, the mean over every output, stable for logits
    /// of +-1e4.
    BceWithLogits = 5,
}

/// Gradient buffers for one model. `Send`, not `Sync`, as [`ForwardCache`].
pub struct BackwardCache {
    raw: NonNull<sys::snn_backward_cache>,
    /// Labels per sample: T for a sequence output of T steps, else 1.
    labels_per_sample: usize,
    _not_sync: NotSync,
}

// SAFETY: as ForwardCache.
unsafe impl Send for BackwardCache {}

impl BackwardCache {
    fn ptr(&self) -> *mut sys::snn_backward_cache {
        self.raw.as_ptr()
    }

    /// Turns dynamic loss scaling on with PyTorch's defaults
    /// ([`LossScaling::default`]) unless it is on already, or off (forgetting
    /// its state). Works at every precision and on every device.
    pub fn set_loss_scaling(&mut self, on: bool) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_set_loss_scaling(self.ptr(), i32::from(on)) })
    }

    /// Sets loss scaling's settings and state: with `state.on` it turns
    /// scaling on with `scale`, the factors, `growth_interval` and
    /// `good_steps` (a value out of its range is
    /// [`ErrorKind::InvalidArgument`] naming it, nothing changed); without,
    /// it turns scaling off. `skipped` is not set.
    pub fn set_loss_scaling_state(&mut self, state: LossScaling) -> Result<(), Error> {
        if !state.on {
            return self.set_loss_scaling(false);
        }
        let interval = i64::try_from(state.growth_interval).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("BackwardCache::set_loss_scaling_state: growth_interval {} is above 2^53", state.growth_interval),
            )
        })?;
        let good = i64::try_from(state.good_steps).map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "BackwardCache::set_loss_scaling_state: good_steps {} is not below growth_interval",
                    state.good_steps
                ),
            )
        })?;
        // SAFETY: live handle, plain values.
        check(unsafe {
            sys::snn_set_loss_scaling_state(
                self.ptr(),
                state.scale,
                state.growth_factor,
                state.backoff_factor,
                interval,
                good,
            )
        })
    }

    /// The loss scaling: on or off, the scale of the next backprop (1 when
    /// off), the settings, the good steps counted and whether the last
    /// backprop overflowed (its step is skipped).
    pub fn loss_scaling(&self) -> Result<LossScaling, Error> {
        let (mut on, mut skipped) = (0i32, 0i32);
        let (mut scale, mut growth, mut backoff) = (0f64, 0f64, 0f64);
        let (mut interval, mut good) = (0i64, 0i64);
        // SAFETY: live handle, valid out pointers.
        check(unsafe {
            sys::snn_loss_scaling_state(
                self.ptr(),
                &mut on,
                &mut scale,
                &mut growth,
                &mut backoff,
                &mut interval,
                &mut good,
                &mut skipped,
            )
        })?;
        let count = |what: &str, v: i64| {
            u64::try_from(v).map_err(|_| {
                Error::new(ErrorKind::Internal, format!("BackwardCache::loss_scaling: {what} {v}"))
            })
        };
        Ok(LossScaling {
            on: on != 0,
            scale,
            growth_factor: growth,
            backoff_factor: backoff,
            growth_interval: count("growth_interval", interval)?,
            good_steps: count("good_steps", good)?,
            skipped: skipped != 0,
        })
    }

    /// Sets the loss scaling to that of a checkpoint saved by
    /// [`Model::save_checkpoint_with_loss_scaling`]: on with its settings and
    /// state, or off when the checkpoint holds none. Errors as
    /// [`Model::load_checkpoint`]; the cache is unchanged on failure.
    pub fn load_loss_scaling(&mut self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path_string("BackwardCache::load_loss_scaling", path.as_ref())?;
        // SAFETY: valid string, live handle.
        check(unsafe { sys::snn_checkpoint_load_loss_scaling(path.as_ptr(), self.ptr()) })
    }

    /// Targets for [`Loss::Mse`], `[batch][outputs]`, copied: any whole
    /// number of samples up to the cache's maximum batch, which the next
    /// backprop's forward batch must equal (else [`ErrorKind::State`]).
    pub fn set_targets(&mut self, targets: &[f32]) -> Result<(), Error> {
        // SAFETY: valid slice, copied.
        check(unsafe { sys::snn_set_targets(self.ptr(), targets.as_ptr(), targets.len()) })
    }

    /// 0-based class labels for [`Loss::LogitCrossEntropy`], one per sample,
    /// copied: up to the cache's maximum batch, as many as the next
    /// backprop's forward batch. A label outside `0..outputs` is
    /// [`ErrorKind::Label`].
    ///
    /// For a model whose output is a sequence of T steps of K values, one
    /// label per step: `[batch][T]`, `batch * T` labels, each in `0..K` or
    /// -1 to ignore the step. The loss is the mean over the steps counted,
    /// which leave out the -1 steps and the padded steps of samples given
    /// lengths ([`ForwardCache::set_lengths`]), as PyTorch's `ignore_index`
    /// does (0 when none is left); a count that is not a multiple of T is
    /// [`ErrorKind::Count`].
    pub fn set_labels(&mut self, labels: &[i32]) -> Result<(), Error> {
        // SAFETY: valid slice, copied.
        check(unsafe { sys::snn_set_labels(self.ptr(), labels.as_ptr(), labels.len()) })
    }

    /// Label i becomes `labels[indices[i]]`; for a sequence output of T
    /// steps, `labels` holds T labels per sample and sample i's are
    /// `labels[indices[i] * T..][..T]` (a length that is not a multiple of T
    /// is [`ErrorKind::Count`]).
    pub fn set_labels_gather(&mut self, labels: &[i32], indices: &[i64]) -> Result<(), Error> {
        let per = self.labels_per_sample;
        if labels.len() % per != 0 {
            return Err(Error::new(
                ErrorKind::Count,
                format!(
                    "BackwardCache::set_labels_gather: {} labels are not a whole number of samples of {per} steps",
                    labels.len()
                ),
            ));
        }
        // SAFETY: labels holds labels.len() / per whole samples; indices are checked by the library.
        check(unsafe {
            sys::snn_set_labels_gather(self.ptr(), labels.as_ptr(), labels.len() / per, indices.as_ptr(), indices.len())
        })
    }

    /// Gathers labels of a data set on the cache's device.
    pub fn set_labels_from_dataset(&mut self, dataset: &Dataset, indices: &[i64]) -> Result<(), Error> {
        // SAFETY: live handles, valid slice.
        check(unsafe {
            sys::snn_set_labels_from_dataset(self.ptr(), dataset.raw.as_ptr(), indices.as_ptr(), indices.len())
        })
    }

    /// Makes backprop also compute the gradient with respect to the inputs.
    pub fn set_input_gradient(&mut self, enabled: bool) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_set_input_gradient(self.ptr(), i32::from(enabled)) })
    }

    /// Sets the parameter of `loss` for this cache's backprops with it. A
    /// loss without a parameter, or a value outside its range (NaN and
    /// infinities included), is [`ErrorKind::InvalidArgument`].
    pub fn set_loss_parameter(&mut self, loss: Loss, value: f64) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_set_loss_parameter(self.ptr(), loss as i32, value) })
    }

    /// The parameter of `loss` on this cache: its default until set.
    pub fn loss_parameter(&self, loss: Loss) -> Result<f64, Error> {
        let mut value = 0f64;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_get_loss_parameter(self.ptr(), loss as i32, &mut value) })?;
        Ok(value)
    }

    /// Computes the loss of `fwd`'s last pass of `model` and its gradient
    /// with respect to every parameter; returns the loss.
    pub fn backprop(&mut self, fwd: &mut ForwardCache, model: &Model, loss: Loss) -> Result<f32, Error> {
        let mut value = 0f32;
        let _state = model.read_state();
        // SAFETY: live handles; the library checks that both caches are the model's.
        check(unsafe { sys::snn_backprop(self.ptr(), fwd.ptr(), model.ptr(), loss as i32, &mut value) })?;
        Ok(value)
    }

    /// Backpropagates a caller-supplied gradient of the loss with respect to
    /// the outputs, `[batch][outputs]` (custom losses, reinforcement learning).
    pub fn backprop_with_output_gradient(
        &mut self,
        fwd: &mut ForwardCache,
        model: &Model,
        output_gradient: &[f32],
    ) -> Result<(), Error> {
        let _state = model.read_state();
        // SAFETY: live handles, valid slice.
        check(unsafe {
            sys::snn_backprop_with_output_gradient(
                self.ptr(),
                fwd.ptr(),
                model.ptr(),
                output_gradient.as_ptr(),
                output_gradient.len(),
            )
        })
    }

    /// Zero-copy view of the flat gradient (CPU caches).
    pub fn gradients(&self) -> Result<&[f32], Error> {
        let mut data = ptr::null();
        let mut count = 0usize;
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_gradients(self.ptr(), &mut data, &mut count) })?;
        // SAFETY: valid until the next backprop or a move (an optimiser step
        // after the model moved), which need `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(data, count) })
    }

    /// Copies the gradient, on any device; `dst.len()` = parameter count.
    pub fn get_gradients(&self, dst: &mut [f32]) -> Result<(), Error> {
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_gradients(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }

    /// Overwrites the gradient (e.g. with an average over data-parallel
    /// workers) before an optimiser step; `src.len()` = parameter count.
    pub fn set_gradients(&mut self, src: &[f32]) -> Result<(), Error> {
        // SAFETY: live handle; src is valid for its length.
        check(unsafe { sys::snn_set_gradients(self.ptr(), src.as_ptr(), src.len()) })
    }

    /// Copies the gradient with respect to the inputs, `[batch][features]`.
    pub fn get_input_gradients(&self, dst: &mut [f32]) -> Result<(), Error> {
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_input_gradients(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }

    /// The device pointer and length of a GPU cache's flat gradient, for
    /// native CUDA code (an NCCL all-reduce); [`ErrorKind::DeviceMismatch`]
    /// for a CPU cache. Reading or writing that memory is `unsafe` and must
    /// wait for [`BackwardCache::synchronize`]; the pointer is valid while
    /// the cache lives on that device.
    pub fn gradients_device(&mut self) -> Result<(*mut f32, usize), Error> {
        let mut data = ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_gradients_device(self.ptr(), &mut data, &mut count) })?;
        Ok((data, count))
    }

    /// Waits until the work queued on the cache has finished (at once on the CPU).
    pub fn synchronize(&mut self) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_backward_cache_synchronize(self.ptr()) })
    }
}

impl Drop for BackwardCache {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { sys::snn_backward_cache_destroy(self.raw.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Optimisers

/// The update rule of an [`Optimiser`], as PyTorch's `torch.optim` classes,
/// with their default hyperparameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptimiserKind {
    /// Stochastic gradient descent with optional momentum, Nesterov and weight
    /// decay (`torch.optim.SGD`, learning rate 0.01, momentum 0).
    Sgd = 1,
    /// Adam (`torch.optim.Adam`, learning rate 0.001, betas 0.9 and 0.999,
    /// epsilon 1e-8).
    Adam = 2,
    /// Adam with decoupled weight decay (`torch.optim.AdamW`, weight decay 0.01).
    AdamW = 3,
    /// RMSprop (`torch.optim.RMSprop`, learning rate 0.01, alpha 0.99,
    /// epsilon 1e-8).
    RmsProp = 4,
    /// Lion (Chen et al. 2023, as the `lion-pytorch` package: learning rate
    /// 1e-4, betas 0.9 and 0.99, decoupled weight decay 0).
    Lion = 5,
}

/// A setting of an [`Optimiser`]; each kind accepts the ones PyTorch's
/// class of the same name has, and refuses the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hyperparameter {
    /// The step size, at least 0 (all kinds).
    LearningRate = 1,
    /// Momentum in [0, 1) (SGD).
    Momentum = 2,
    /// 1 for Nesterov momentum (needs momentum > 0), 0 for classical (SGD).
    Nesterov = 3,
    /// Decay of the first moment in [0, 1) (Adam, AdamW); Lion's
    /// interpolation of the update direction.
    Beta1 = 4,
    /// Decay of the second moment in [0, 1) (Adam, AdamW); Lion's momentum.
    Beta2 = 5,
    /// Added to the denominator for stability, at least `f32::MIN_POSITIVE`
    /// (Adam, AdamW, RMSprop).
    Epsilon = 6,
    /// L2 penalty (SGD, Adam, RMSprop) or decoupled decay (AdamW, Lion), at
    /// least 0.
    WeightDecay = 7,
    /// Decay of the squared-gradient average in [0, 1) (RMSprop).
    Alpha = 8,
    /// Dampening of the momentum buffer's new gradient in [0, 1], as
    /// `torch.optim.SGD`'s; Nesterov needs 0 (SGD).
    Dampening = 9,
    /// Clipping by the global gradient norm, as
    /// `torch.nn.utils.clip_grad_norm_` before each step: 0 (off) or the
    /// largest norm, at most `f32::MAX` (all kinds). Only the update sees the
    /// clipped gradient; see [`Optimiser::grad_norm`].
    MaxGradNorm = 10,
}

/// An optimiser's state (moments and step count) for one model. It keeps no
/// reference to the model and may outlive it: each step names the model, and
/// the library checks that it is the one the optimiser was made for.
/// `Send`, not `Sync`.
pub struct Optimiser {
    raw: NonNull<sys::snn_optimiser>,
    _not_sync: NotSync,
}

// SAFETY: as ForwardCache.
unsafe impl Send for Optimiser {}

impl Optimiser {
    /// Sets a hyperparameter; a value out of its range changes nothing and
    /// is [`ErrorKind::InvalidArgument`].
    pub fn set(&mut self, which: Hyperparameter, value: f64) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_optimiser_set(self.raw.as_ptr(), which as i32, value) })
    }

    /// Reads a hyperparameter; one the kind does not have is
    /// [`ErrorKind::InvalidArgument`].
    pub fn get(&self, which: Hyperparameter) -> Result<f64, Error> {
        let mut v = 0f64;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_optimiser_get(self.raw.as_ptr(), which as i32, &mut v) })?;
        Ok(v)
    }

    /// Updates `model`'s parameters in place from the gradient in `grads`.
    /// `grads` is borrowed mutably because it follows a model that moved to
    /// another device, which ends its gradient views.
    pub fn step(&mut self, model: &mut Model, grads: &mut BackwardCache) -> Result<(), Error> {
        // SAFETY: live handles; the exclusive borrow of the model keeps every
        // other reader away while the parameters change.
        check(unsafe { sys::snn_optimiser_step(self.raw.as_ptr(), model.ptr(), grads.ptr()) })
    }

    /// Zeroes the moments and the step count.
    pub fn reset(&mut self) -> Result<(), Error> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_optimiser_reset(self.raw.as_ptr()) })
    }

    /// The L2 norm of the whole gradient at the last step, before clipping
    /// (`clip_grad_norm_`'s return value); waits for that step on a GPU.
    /// [`ErrorKind::State`] when the last step did not clip or there was none.
    pub fn grad_norm(&self) -> Result<f64, Error> {
        let mut norm = 0f64;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_optimiser_grad_norm(self.raw.as_ptr(), &mut norm) })?;
        Ok(norm)
    }

    /// Steps taken since creation or reset.
    pub fn step_count(&self) -> Result<u64, Error> {
        let mut n = 0i64;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_optimiser_step_count(self.raw.as_ptr(), &mut n) })?;
        u64::try_from(n).map_err(|_| Error::new(ErrorKind::Internal, format!("Optimiser::step_count: {n}")))
    }
}

impl Drop for Optimiser {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { sys::snn_optimiser_destroy(self.raw.as_ptr()) }
    }
}

// ---------------------------------------------------------------------------
// Data sets

/// A data set copied once to a device, gathered from by index.
/// `Send`, not `Sync`.
pub struct Dataset {
    raw: NonNull<sys::snn_dataset>,
    _not_sync: NotSync,
}

// SAFETY: as ForwardCache.
unsafe impl Send for Dataset {}

impl Dataset {
    /// `samples` holds whole samples of `features` floats (anything else is
    /// [`ErrorKind::Count`]); `labels`, when given, one 0-based label per
    /// sample.
    pub fn new(device: Device, samples: &[f32], features: usize, labels: Option<&[i32]>) -> Result<Dataset, Error> {
        check_version()?;
        let count = whole_samples("Dataset::new: samples", samples.len(), features)?;
        if let Some(l) = labels {
            if l.len() != count {
                return Err(Error::new(ErrorKind::Count, format!("Dataset::new: {} labels for {count} samples", l.len())));
            }
        }
        let labels = labels.map_or(ptr::null(), <[i32]>::as_ptr);
        let mut out = ptr::null_mut();
        // SAFETY: valid slices, copied; valid out pointer.
        let status =
            unsafe { sys::snn_dataset_create(device.raw(), samples.as_ptr(), count, features, labels, &mut out) };
        Ok(Dataset { raw: take(status, out)?, _not_sync: PhantomData })
    }

    /// A data set of token ids: `tokens` holds whole samples of `steps` ids
    /// (each in `0..=2^24`; a model's vocabulary is checked when batches are
    /// gathered, where an id outside it is [`ErrorKind::Token`]), `lengths`
    /// one length in `1..=steps` per sample, gathered with the tokens by
    /// [`ForwardCache::set_inputs_from_dataset`] (`None`: every sample is
    /// full length), and `labels` 0-based labels, either one per sample or
    /// one per step (`steps` per sample, -1 ignoring a step) for a sequence
    /// output. A negative id is [`ErrorKind::Token`].
    pub fn tokens(
        device: Device,
        tokens: &[i32],
        steps: usize,
        lengths: Option<&[i32]>,
        labels: Option<&[i32]>,
    ) -> Result<Dataset, Error> {
        check_version()?;
        let count = whole_ids("Dataset::tokens: tokens", tokens.len(), steps)?;
        if let Some(l) = lengths {
            if l.len() != count {
                return Err(Error::new(
                    ErrorKind::Count,
                    format!("Dataset::tokens: {} lengths for {count} samples", l.len()),
                ));
            }
        }
        let per = match labels {
            None => 1,
            Some(l) if l.len() == count => 1,
            Some(l) if l.len() == count * steps => steps,
            Some(l) => {
                return Err(Error::new(
                    ErrorKind::Count,
                    format!(
                        "Dataset::tokens: {} labels for {count} samples of {steps} steps (one per sample or per step)",
                        l.len()
                    ),
                ))
            }
        };
        let lengths = lengths.map_or(ptr::null(), <[i32]>::as_ptr);
        let labels = labels.map_or(ptr::null(), <[i32]>::as_ptr);
        let mut out = ptr::null_mut();
        // SAFETY: valid slices of the sizes given, copied; valid out pointer.
        let status = unsafe {
            sys::snn_dataset_create_tokens(device.raw(), tokens.as_ptr(), count, steps, lengths, labels, per, &mut out)
        };
        Ok(Dataset { raw: take(status, out)?, _not_sync: PhantomData })
    }
}

impl Drop for Dataset {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { sys::snn_dataset_destroy(self.raw.as_ptr()) }
    }
}

macro_rules! debug_handle {
    ($($t:ty),*) => {$(
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($t)).field("raw", &self.raw).finish()
            }
        }
    )*};
}

debug_handle!(ForwardCache, BackwardCache, Optimiser, Dataset);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_matches_the_crate() {
        assert_eq!(version_number() / 1_000_000, 0);
        assert!(version_string().starts_with("0."));
        assert!(check_version().is_ok());
    }

    #[test]
    fn features_name_the_cpu() {
        assert!(build_features().split(' ').any(|f| f == "cpu"));
        assert!(has_feature("cpu"));
        assert!(!has_feature("no-such-feature"));
        assert!(!has_feature("nul\0byte"));
    }

    #[test]
    fn each_kind_is_the_status_of_its_name() {
        let pairs = [
            (sys::SNN_ERR_NULL_ARGUMENT, ErrorKind::NullArgument),
            (sys::SNN_ERR_INVALID_ARGUMENT, ErrorKind::InvalidArgument),
            (sys::SNN_ERR_SPEC, ErrorKind::Spec),
            (sys::SNN_ERR_SHAPE, ErrorKind::Shape),
            (sys::SNN_ERR_COUNT, ErrorKind::Count),
            (sys::SNN_ERR_BATCH, ErrorKind::Batch),
            (sys::SNN_ERR_LABEL, ErrorKind::Label),
            (sys::SNN_ERR_MODEL_MISMATCH, ErrorKind::ModelMismatch),
            (sys::SNN_ERR_DEVICE_MISMATCH, ErrorKind::DeviceMismatch),
            (sys::SNN_ERR_STATE, ErrorKind::State),
            (sys::SNN_ERR_OUT_OF_MEMORY, ErrorKind::OutOfMemory),
            (sys::SNN_ERR_NOT_FINITE, ErrorKind::NotFinite),
            (sys::SNN_ERR_IO, ErrorKind::Io),
            (sys::SNN_ERR_FILE_FORMAT, ErrorKind::FileFormat),
            (sys::SNN_ERR_UNSUPPORTED, ErrorKind::Unsupported),
            (sys::SNN_ERR_GPU_PLUGIN_NOT_FOUND, ErrorKind::GpuPluginNotFound),
            (sys::SNN_ERR_GPU_DRIVER, ErrorKind::GpuDriver),
            (sys::SNN_ERR_NO_GPU, ErrorKind::NoGpu),
            (sys::SNN_ERR_GPU_INDEX, ErrorKind::GpuIndex),
            (sys::SNN_ERR_CUDA, ErrorKind::Cuda),
            (sys::SNN_ERR_INTERNAL, ErrorKind::Internal),
            (sys::SNN_ERR_TOKEN, ErrorKind::Token),
        ];
        assert_eq!(pairs.len(), KINDS.len());
        for (status, kind) in pairs {
            assert_eq!(ErrorKind::from_status(status), kind);
            assert_eq!(kind.status(), status);
        }
    }

    #[test]
    fn a_spec_beyond_the_header_limits_is_a_spec_error() {
        let longest = " ".repeat(sys::SNN_MAX_SPEC_LENGTH + 1);
        let e = Model::new(&longest).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Spec);
        assert!(e.message().contains(&sys::SNN_MAX_SPEC_LENGTH.to_string()), "{}", e.message());
        let mut layers = String::from("input 1");
        for _ in 0..=sys::SNN_MAX_LAYERS {
            layers.push_str(";relu");
        }
        let e = Model::new(&layers).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Spec);
        assert!(e.message().contains(&sys::SNN_MAX_LAYERS.to_string()), "{}", e.message());
    }

    #[test]
    fn every_status_has_a_kind_and_text() {
        for status in 1..=sys::SNN_ERR_TOKEN {
            assert_eq!(ErrorKind::from_status(status).status(), status);
        }
        assert_eq!(ErrorKind::from_status(3), ErrorKind::Spec);
        assert_eq!(ErrorKind::from_status(21), ErrorKind::Internal);
        assert_eq!(ErrorKind::from_status(22), ErrorKind::Token);
        assert_eq!(ErrorKind::from_status(23), ErrorKind::Other(23));
        assert_eq!(ErrorKind::from_status(99), ErrorKind::Other(99));
        assert_eq!(ErrorKind::from_status(-1), ErrorKind::Other(-1));
        assert_eq!(status_string(99), "unknown status");
        assert_ne!(status_string(5), status_string(6));
    }

    #[test]
    fn threads_setting_round_trips() {
        let before = num_threads();
        set_num_threads(1).unwrap();
        assert_eq!(num_threads(), 1);
        set_num_threads(before).unwrap();
        assert_eq!(set_num_threads(0).unwrap_err().kind(), ErrorKind::InvalidArgument);
        let e = set_num_threads(usize::MAX).unwrap_err();
        assert!(e.message().contains(&usize::MAX.to_string()), "{e}");
    }
}
