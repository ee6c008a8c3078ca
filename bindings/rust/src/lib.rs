//! Safe Rust binding of snn, an embeddable engine for training and running
//! small neural networks (MLPs and CNNs) on the CPU and on NVIDIA GPUs.
//!
//! ```
//! use snn::{Loss, Model, OptimiserKind, Hyperparameter};
//!
//! let model = Model::new("input 1; dense 10 tanh; dense 10 sigmoid; dense 1")?;
//! model.init(42)?;
//! let xs: Vec<f32> = (0..64).map(|i| i as f32 * std::f32::consts::TAU / 63.0).collect();
//! let ys: Vec<f32> = xs.iter().map(|x| x.sin()).collect();
//!
//! let mut fwd = model.preallocate(xs.len())?;
//! let mut bwd = model.preallocate_grads(xs.len())?;
//! let mut adam = model.optimiser(OptimiserKind::Adam)?;
//! adam.set(Hyperparameter::LearningRate, 0.01)?;
//! fwd.set_inputs(&xs)?;
//! bwd.set_targets(&ys)?;
//! let mut first = 0.0;
//! for step in 0..200 {
//!     fwd.forward()?;
//!     let loss = bwd.backprop(&mut fwd, Loss::Mse)?;
//!     if step == 0 { first = loss; }
//!     adam.step(&model, &bwd)?;
//! }
//! fwd.forward()?;
//! assert_eq!(fwd.outputs()?.len(), 64);
//! assert!(bwd.backprop(&mut fwd, Loss::Mse)? < first);
//! # Ok::<(), snn::Error>(())
//! ```
//!
//! Ownership follows the C library: every handle is freed by `Drop`, and the
//! library lets handles be destroyed in any order (a cache or an optimiser
//! keeps its own copy of what it needs of its model). Caches borrow the model
//! they were made for, so the model outlives them and cannot move to another
//! device while they exist; the calls that pass the model
//! ([`ForwardCache::forward`], [`BackwardCache::backprop`]) therefore always
//! pass a live one, and dropping a model while a cache of it is still used
//! does not compile:
//!
//! ```compile_fail,E0505
//! let model = snn::Model::new("input 1; dense 1")?;
//! let mut fwd = model.preallocate(1)?;
//! drop(model);
//! fwd.set_inputs(&[1.0])?;
//! # Ok::<(), snn::Error>(())
//! ```
//!
//! An [`Optimiser`] borrows nothing: it may outlive its model (its settings
//! and step count stay readable), and each step names the model.
//!
//! A model's parameters change through shared references (an optimiser
//! step, [`Model::init`], [`Model::set_parameters`]), as a `Cell` does; that
//! is why handles are `Send` but not `Sync`, and why the zero-copy parameter
//! views need `&mut Model`.

pub mod sys;

use std::any::Any;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_void};
use std::panic;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::{Mutex, OnceLock, PoisonError};

/// What went wrong, one variant per status of `snn.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NullArgument,
    InvalidArgument,
    Spec,
    Shape,
    Count,
    Batch,
    Label,
    ModelMismatch,
    DeviceMismatch,
    State,
    OutOfMemory,
    NotFinite,
    Io,
    FileFormat,
    Unsupported,
    GpuPluginNotFound,
    GpuDriver,
    NoGpu,
    GpuIndex,
    Cuda,
    Internal,
    /// A status this binding does not know (a newer library).
    Other(i32),
}

impl ErrorKind {
    /// The kind of a non-zero `snn_status`.
    pub fn from_status(status: i32) -> ErrorKind {
        use ErrorKind::*;
        match status {
            1 => NullArgument,
            2 => InvalidArgument,
            3 => Spec,
            4 => Shape,
            5 => Count,
            6 => Batch,
            7 => Label,
            8 => ModelMismatch,
            9 => DeviceMismatch,
            10 => State,
            11 => OutOfMemory,
            12 => NotFinite,
            13 => Io,
            14 => FileFormat,
            15 => Unsupported,
            16 => GpuPluginNotFound,
            17 => GpuDriver,
            18 => NoGpu,
            19 => GpuIndex,
            20 => Cuda,
            21 => Internal,
            other => Other(other),
        }
    }
}

/// A failed call: its status and the library's message, e.g.
/// `snn_set_inputs: expected 12800 floats (batch 128 x 100), got 12700`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: i32,
    message: String,
}

impl Error {
    /// The raw `snn_status` code.
    pub fn status(&self) -> i32 {
        self.status
    }
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_status(self.status)
    }
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, status_string(self.status))
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the library returns NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Turns a status into a `Result`, reading the thread's last error message
/// right away, before any other call can replace it.
fn check(status: sys::snn_status) -> Result<()> {
    if status == sys::SNN_OK {
        return Ok(());
    }
    // SAFETY: no arguments; the returned text is copied at once.
    let message = text(unsafe { sys::snn_last_error() });
    Err(Error { status, message })
}

fn c_string(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error {
        status: 2,
        message: "string argument contains a NUL byte".to_owned(),
    })
}

fn path_string(path: &Path) -> Result<CString> {
    match path.to_str() {
        Some(s) => c_string(s),
        None => Err(Error { status: 2, message: format!("path {path:?} is not UTF-8") }),
    }
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
pub fn check_version() -> Result<()> {
    static CHECKED: OnceLock<Result<()>> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let major: i32 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap_or(-1);
            let loaded = version_number();
            if loaded / 1_000_000 == major {
                Ok(())
            } else {
                Err(Error {
                    status: 15,
                    message: format!(
                        "libsnn {} is loaded but this crate needs major version {major}",
                        version_string()
                    ),
                })
            }
        })
        .clone()
}

/// Bounds the CPU threads the library uses (OpenBLAS included).
pub fn set_num_threads(n: i32) -> Result<()> {
    // SAFETY: plain value.
    check(unsafe { sys::snn_set_num_threads(n) })
}

pub fn num_threads() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::snn_get_num_threads() }
}

/// Makes backprop and optimiser steps fail with [`ErrorKind::NotFinite`]
/// instead of writing NaN or Inf into the model.
pub fn set_check_finite(on: bool) -> Result<()> {
    // SAFETY: plain value.
    check(unsafe { sys::snn_set_check_finite(on as i32) })
}

/// Lets GPU caches created afterwards use TF32 tensor-core math.
pub fn set_allow_tf32(on: bool) -> Result<()> {
    // SAFETY: plain value.
    check(unsafe { sys::snn_set_allow_tf32(on as i32) })
}

/// Severity passed to the log callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Error,
    Warning,
    Info,
}

/// A log receiver: a plain function, so it needs no state kept alive.
pub type LogFn = fn(LogLevel, &str);

/// The message of the last panic of the log receiver that no one has taken yet.
static LOG_PANIC: Mutex<Option<String>> = Mutex::new(None);

fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic whose payload is not a string".to_owned()
    }
}

unsafe extern "C" fn log_trampoline(user_data: *mut c_void, level: i32, message: *const c_char) {
    // SAFETY: user_data is the LogFn that set_log_callback stored there.
    let f: LogFn = unsafe { std::mem::transmute::<*mut c_void, LogFn>(user_data) };
    let level = match level {
        sys::SNN_LOG_ERROR => LogLevel::Error,
        sys::SNN_LOG_WARNING => LogLevel::Warning,
        _ => LogLevel::Info,
    };
    let message = text(message);
    // A panic must not unwind into the library's C frames (that aborts the
    // process): it is stopped here and kept for take_log_callback_panic.
    if let Err(payload) = panic::catch_unwind(|| f(level, &message)) {
        *LOG_PANIC.lock().unwrap_or_else(PoisonError::into_inner) = Some(panic_text(payload.as_ref()));
    }
}

/// Installs (or with `None` removes) the process-wide log callback. It runs
/// on the thread of the failing call and must not call into snn.
///
/// A panic of the callback stops in this crate, never unwinding through the
/// library: the message being logged is dropped, the failing call still
/// returns its own [`Error`], the callback stays installed for the next
/// messages, and the panic's message is kept for [`take_log_callback_panic`]
/// (the panic hook reports it as usual too).
pub fn set_log_callback(callback: Option<LogFn>) -> Result<()> {
    // SAFETY: the trampoline only reads user_data as the function stored here.
    check(unsafe {
        match callback {
            Some(f) => sys::snn_set_log_callback(Some(log_trampoline), f as *mut c_void),
            None => sys::snn_set_log_callback(None, ptr::null_mut()),
        }
    })
}

/// The message of the log callback's last panic, if it panicked since the
/// previous call; taking it clears it.
pub fn take_log_callback_panic() -> Option<String> {
    LOG_PANIC.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// Where a model lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    Cpu,
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
pub fn gpu_count() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::snn_gpu_count() }
}

/// `Ok` when GPU `device` can be used, else the reason.
pub fn gpu_status(device: i32) -> Result<()> {
    // SAFETY: plain value.
    check(unsafe { sys::snn_gpu_status(device) })
}

/// Where one layer's parameters lie in the flat vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerParams {
    pub weight_offset: usize,
    pub weight_count: usize,
    pub bias_offset: usize,
    pub bias_count: usize,
}

/// A network: its layers and its flat parameter vector.
pub struct Model {
    raw: NonNull<sys::snn_model>,
}

// SAFETY: a handle may move between threads; it is used by one at a time.
unsafe impl Send for Model {}

fn take<T>(status: sys::snn_status, out: *mut T) -> Result<NonNull<T>> {
    check(status)?;
    NonNull::new(out).ok_or_else(|| Error {
        status: 21,
        message: "the library returned a NULL handle".to_owned(),
    })
}

impl Model {
    /// Parses a spec such as `"input 28x28x1; conv 5x5 16 relu; maxpool 2; flatten; dense 10"`.
    pub fn new(spec: &str) -> Result<Model> {
        check_version()?;
        let spec = c_string(spec)?;
        let mut out = ptr::null_mut();
        // SAFETY: valid string and out pointer.
        let status = unsafe { sys::snn_model_create(spec.as_ptr(), &mut out) };
        Ok(Model { raw: take(status, out)? })
    }

    /// Loads a model file (safetensors) onto the CPU.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        check_version()?;
        let path = path_string(path.as_ref())?;
        let mut out = ptr::null_mut();
        // SAFETY: valid string and out pointer.
        let status = unsafe { sys::snn_model_load(path.as_ptr(), &mut out) };
        Ok(Model { raw: take(status, out)? })
    }

    /// Reads a model from the bytes of a model file.
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        check_version()?;
        let mut out = ptr::null_mut();
        // SAFETY: the slice is valid for its length; it is not kept.
        let status = unsafe {
            sys::snn_model_load_from_buffer(bytes.as_ptr().cast(), bytes.len(), &mut out)
        };
        Ok(Model { raw: take(status, out)? })
    }

    fn ptr(&self) -> *mut sys::snn_model {
        self.raw.as_ptr()
    }

    /// Saves atomically to a model file.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path_string(path.as_ref())?;
        // SAFETY: live handle, valid string.
        check(unsafe { sys::snn_model_save(self.ptr(), path.as_ptr()) })
    }

    /// The bytes of the model file.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: a size query (NULL buffer, capacity 0).
        check(unsafe { sys::snn_model_save_to_buffer(self.ptr(), ptr::null_mut(), 0, &mut size) })?;
        let mut bytes = vec![0u8; size];
        // SAFETY: the buffer holds `size` bytes.
        check(unsafe {
            sys::snn_model_save_to_buffer(self.ptr(), bytes.as_mut_ptr().cast(), size, &mut size)
        })?;
        bytes.truncate(size);
        Ok(bytes)
    }

    /// The canonical spec, which [`Model::new`] parses back into the same model.
    pub fn describe(&self) -> Result<String> {
        let mut length = 0usize;
        // SAFETY: a length query.
        check(unsafe { sys::snn_model_describe(self.ptr(), ptr::null_mut(), 0, &mut length) })?;
        let mut buf = vec![0u8; length + 1];
        // SAFETY: the buffer holds length + 1 bytes.
        check(unsafe {
            sys::snn_model_describe(self.ptr(), buf.as_mut_ptr().cast(), buf.len(), &mut length)
        })?;
        buf.truncate(length);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// Number of layers, the input layer (layer 0) included.
    pub fn layer_count(&self) -> Result<usize> {
        let mut n = 0i64;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_model_layer_count(self.ptr(), &mut n) })?;
        Ok(n as usize)
    }

    /// The output shape of a layer as (channels, height, width).
    pub fn layer_shape(&self, layer: usize) -> Result<(usize, usize, usize)> {
        let (mut c, mut h, mut w) = (0i64, 0i64, 0i64);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_model_layer_shape(self.ptr(), layer as i64, &mut c, &mut h, &mut w) })?;
        Ok((c as usize, h as usize, w as usize))
    }

    pub fn layer_params(&self, layer: usize) -> Result<LayerParams> {
        let mut p = LayerParams { weight_offset: 0, weight_count: 0, bias_offset: 0, bias_count: 0 };
        // SAFETY: live handle, valid out pointers.
        check(unsafe {
            sys::snn_model_layer_params(
                self.ptr(),
                layer as i64,
                &mut p.weight_offset,
                &mut p.weight_count,
                &mut p.bias_offset,
                &mut p.bias_count,
            )
        })?;
        Ok(p)
    }

    /// Input features per sample (C*H*W for images).
    pub fn input_size(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_model_input_size(self.ptr(), &mut n) })?;
        Ok(n)
    }

    pub fn output_size(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_model_output_size(self.ptr(), &mut n) })?;
        Ok(n)
    }

    pub fn parameter_count(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_parameter_count(self.ptr(), &mut n) })?;
        Ok(n)
    }

    /// Re-initialises every parameter from `seed` (bit-identical everywhere).
    pub fn init(&self, seed: u64) -> Result<()> {
        // SAFETY: live handle; Model is not Sync, so no view or other thread
        // observes the parameters while they change.
        check(unsafe { sys::snn_model_init(self.ptr(), seed) })
    }

    fn view(&mut self) -> Result<(*mut f32, usize)> {
        let mut data = ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_parameters(self.ptr(), &mut data, &mut count) })?;
        Ok((data, count))
    }

    /// Zero-copy view of a CPU model's flat parameter vector
    /// ([`ErrorKind::DeviceMismatch`] on a GPU). It takes `&mut self` because
    /// parameters otherwise change behind shared references.
    pub fn parameters(&mut self) -> Result<&[f32]> {
        let (data, count) = self.view()?;
        // SAFETY: valid for `count` floats while the model lives on the CPU,
        // which the exclusive borrow guarantees.
        Ok(unsafe { std::slice::from_raw_parts(data, count) })
    }

    /// Writable zero-copy view of a CPU model's parameters.
    pub fn parameters_mut(&mut self) -> Result<&mut [f32]> {
        let (data, count) = self.view()?;
        // SAFETY: as `parameters`, and the borrow is exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(data, count) })
    }

    /// Copies the parameters out, on any device; `dst.len()` must be the parameter count.
    pub fn get_parameters(&self, dst: &mut [f32]) -> Result<()> {
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_parameters(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }

    /// Copies the parameters in, on any device.
    pub fn set_parameters(&self, src: &[f32]) -> Result<()> {
        // SAFETY: src is valid for its length; see `init` for the shared borrow.
        check(unsafe { sys::snn_set_parameters(self.ptr(), src.as_ptr(), src.len()) })
    }

    pub fn device(&self) -> Result<Device> {
        let mut d = 0i32;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_model_device(self.ptr(), &mut d) })?;
        Ok(Device::from_raw(d))
    }

    /// Moves the model to GPU `device`; on failure it stays where it was.
    pub fn to_gpu(&mut self, device: i32) -> Result<()> {
        // SAFETY: live handle; no cache borrows the model (exclusive borrow).
        check(unsafe { sys::snn_to_gpu(self.ptr(), device) })
    }

    pub fn to_cpu(&mut self) -> Result<()> {
        // SAFETY: as to_gpu.
        check(unsafe { sys::snn_to_cpu(self.ptr()) })
    }

    /// Moves the model to GPU 0 when one can be used, else keeps it on the CPU.
    pub fn to_best_device(&mut self) -> Result<Device> {
        let mut d = 0i32;
        // SAFETY: as to_gpu.
        check(unsafe { sys::snn_to_best_device(self.ptr(), &mut d) })?;
        Ok(Device::from_raw(d))
    }

    /// A forward cache for batches up to `max_batch`, on the model's device.
    pub fn preallocate(&self, max_batch: usize) -> Result<ForwardCache<'_>> {
        let mut out = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        let status = unsafe { sys::snn_preallocate(self.ptr(), max_batch as i64, &mut out) };
        Ok(ForwardCache { raw: take(status, out)?, model: self })
    }

    /// Gradient buffers for batches up to `max_batch`.
    pub fn preallocate_grads(&self, max_batch: usize) -> Result<BackwardCache<'_>> {
        let mut out = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        let status = unsafe { sys::snn_preallocate_grads(self.ptr(), max_batch as i64, &mut out) };
        Ok(BackwardCache { raw: take(status, out)?, model: self })
    }

    /// An optimiser with PyTorch's default hyperparameters.
    pub fn optimiser(&self, kind: OptimiserKind) -> Result<Optimiser> {
        let mut out = ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        let status = unsafe { sys::snn_optimiser_create(self.ptr(), kind as i32, &mut out) };
        Ok(Optimiser { raw: take(status, out)? })
    }

    /// Saves a training checkpoint: the model plus the optimiser's state.
    pub fn save_checkpoint(&self, optimiser: &Optimiser, path: impl AsRef<Path>) -> Result<()> {
        let path = path_string(path.as_ref())?;
        // SAFETY: live handles, valid string.
        check(unsafe { sys::snn_checkpoint_save(self.ptr(), optimiser.raw.as_ptr(), path.as_ptr()) })
    }

    /// Loads a checkpoint as a CPU model and its optimiser.
    pub fn load_checkpoint(path: impl AsRef<Path>) -> Result<(Model, Optimiser)> {
        check_version()?;
        let path = path_string(path.as_ref())?;
        let mut model = ptr::null_mut();
        let mut optimiser = ptr::null_mut();
        // SAFETY: valid string and out pointers.
        check(unsafe { sys::snn_checkpoint_load(path.as_ptr(), &mut model, &mut optimiser) })?;
        let model = Model { raw: take(sys::SNN_OK, model)? };
        let optimiser = Optimiser { raw: take(sys::SNN_OK, optimiser)? };
        Ok((model, optimiser))
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once. Caches borrow the model, so none
        // is used after this; an optimiser may outlive it (the library allows it).
        unsafe { sys::snn_model_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model").field("spec", &self.describe().unwrap_or_default()).finish()
    }
}

/// The buffers of forward passes of one model. Not `Send`: it holds a shared
/// borrow of a model that is not `Sync`.
pub struct ForwardCache<'m> {
    raw: NonNull<sys::snn_forward_cache>,
    model: &'m Model,
}

impl<'m> ForwardCache<'m> {
    fn ptr(&self) -> *mut sys::snn_forward_cache {
        self.raw.as_ptr()
    }

    pub fn model(&self) -> &'m Model {
        self.model
    }

    /// Sets the batch used by the next `set_inputs` / `forward` (1..=max_batch).
    pub fn set_batch(&mut self, batch: usize) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_cache_set_batch(self.ptr(), batch as i64) })
    }

    /// The current and the maximum batch size.
    pub fn batch(&self) -> Result<(usize, usize)> {
        let (mut b, mut m) = (0i64, 0i64);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_cache_batch(self.ptr(), &mut b, &mut m) })?;
        Ok((b as usize, m as usize))
    }

    /// Copies `batch * features` inputs, `[batch][features]`.
    pub fn set_inputs(&mut self, inputs: &[f32]) -> Result<()> {
        // SAFETY: the slice is valid for its length and copied.
        check(unsafe { sys::snn_set_inputs(self.ptr(), inputs.as_ptr(), inputs.len()) })
    }

    /// Gathers samples `indices` of `data` (whole samples of `features`
    /// floats); the batch becomes `indices.len()`.
    pub fn set_inputs_gather(&mut self, data: &[f32], indices: &[i64]) -> Result<()> {
        let features = self.model.input_size()?;
        let samples = data.len().checked_div(features).unwrap_or(0);
        // SAFETY: data holds `samples` whole samples; indices are checked by the library.
        check(unsafe {
            sys::snn_set_inputs_gather(self.ptr(), data.as_ptr(), samples, indices.as_ptr(), indices.len())
        })
    }

    /// Gathers samples of a data set on the cache's device.
    pub fn set_inputs_from_dataset(&mut self, dataset: &Dataset, indices: &[i64]) -> Result<()> {
        // SAFETY: live handles, valid slice.
        check(unsafe {
            sys::snn_set_inputs_from_dataset(self.ptr(), dataset.raw.as_ptr(), indices.as_ptr(), indices.len())
        })
    }

    /// Copies `count` floats of inputs that already live in GPU memory.
    ///
    /// # Safety
    /// `device_inputs` must point to at least `count` floats of device memory
    /// on the cache's GPU.
    pub unsafe fn set_inputs_device(&mut self, device_inputs: *const f32, count: usize) -> Result<()> {
        // SAFETY: the caller's contract.
        check(unsafe { sys::snn_set_inputs_device(self.ptr(), device_inputs, count) })
    }

    /// Runs the model on the cache's inputs.
    pub fn forward(&mut self) -> Result<()> {
        // SAFETY: live handles; the borrow keeps the model alive.
        check(unsafe { sys::snn_forward(self.ptr(), self.model.ptr()) })
    }

    /// Zero-copy view of the outputs, `[batch][outputs]` (CPU caches).
    pub fn outputs(&self) -> Result<&[f32]> {
        let mut data = ptr::null();
        let mut count = 0usize;
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_outputs(self.ptr(), &mut data, &mut count) })?;
        // SAFETY: valid until the next forward, which needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(data, count) })
    }

    /// Copies the outputs, on any device; `dst.len()` must be batch * outputs.
    pub fn get_outputs(&self, dst: &mut [f32]) -> Result<()> {
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_outputs(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }
}

impl Drop for ForwardCache<'_> {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { sys::snn_forward_cache_destroy(self.raw.as_ptr()) }
    }
}

/// A loss computed by [`BackwardCache::backprop`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loss {
    /// Mean squared error against targets ([`BackwardCache::set_targets`]).
    Mse = 1,
    /// Softmax cross-entropy against 0-based labels ([`BackwardCache::set_labels`]).
    LogitCrossEntropy = 2,
}

/// Gradient buffers for one model. Not `Send`, as [`ForwardCache`].
pub struct BackwardCache<'m> {
    raw: NonNull<sys::snn_backward_cache>,
    model: &'m Model,
}

impl<'m> BackwardCache<'m> {
    fn ptr(&self) -> *mut sys::snn_backward_cache {
        self.raw.as_ptr()
    }

    pub fn model(&self) -> &'m Model {
        self.model
    }

    /// Targets for [`Loss::Mse`], `[batch][outputs]`, copied.
    pub fn set_targets(&mut self, targets: &[f32]) -> Result<()> {
        // SAFETY: valid slice, copied.
        check(unsafe { sys::snn_set_targets(self.ptr(), targets.as_ptr(), targets.len()) })
    }

    /// 0-based class labels for [`Loss::LogitCrossEntropy`], copied.
    pub fn set_labels(&mut self, labels: &[i32]) -> Result<()> {
        // SAFETY: valid slice, copied.
        check(unsafe { sys::snn_set_labels(self.ptr(), labels.as_ptr(), labels.len()) })
    }

    /// Label i becomes `labels[indices[i]]`.
    pub fn set_labels_gather(&mut self, labels: &[i32], indices: &[i64]) -> Result<()> {
        // SAFETY: valid slices; indices are checked by the library.
        check(unsafe {
            sys::snn_set_labels_gather(self.ptr(), labels.as_ptr(), labels.len(), indices.as_ptr(), indices.len())
        })
    }

    pub fn set_labels_from_dataset(&mut self, dataset: &Dataset, indices: &[i64]) -> Result<()> {
        // SAFETY: live handles, valid slice.
        check(unsafe {
            sys::snn_set_labels_from_dataset(self.ptr(), dataset.raw.as_ptr(), indices.as_ptr(), indices.len())
        })
    }

    /// Makes backprop also compute the gradient with respect to the inputs.
    pub fn set_input_gradient(&mut self, enabled: bool) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_set_input_gradient(self.ptr(), enabled as i32) })
    }

    /// Computes the loss of `fwd`'s last forward pass and its gradient with
    /// respect to every parameter; returns the loss.
    pub fn backprop(&mut self, fwd: &mut ForwardCache<'_>, loss: Loss) -> Result<f32> {
        let mut value = 0f32;
        // SAFETY: live handles; the library checks that fwd belongs to the same model.
        check(unsafe { sys::snn_backprop(self.ptr(), fwd.ptr(), self.model.ptr(), loss as i32, &mut value) })?;
        Ok(value)
    }

    /// Backpropagates a caller-supplied gradient of the loss with respect to
    /// the outputs, `[batch][outputs]`.
    pub fn backprop_with_output_gradient(&mut self, fwd: &mut ForwardCache<'_>, output_gradient: &[f32]) -> Result<()> {
        // SAFETY: live handles, valid slice.
        check(unsafe {
            sys::snn_backprop_with_output_gradient(
                self.ptr(),
                fwd.ptr(),
                self.model.ptr(),
                output_gradient.as_ptr(),
                output_gradient.len(),
            )
        })
    }

    /// Zero-copy view of the flat gradient (CPU caches).
    pub fn gradients(&self) -> Result<&[f32]> {
        let mut data = ptr::null();
        let mut count = 0usize;
        // SAFETY: live handle, valid out pointers.
        check(unsafe { sys::snn_gradients(self.ptr(), &mut data, &mut count) })?;
        // SAFETY: valid until the next backprop, which needs `&mut self`.
        Ok(unsafe { std::slice::from_raw_parts(data, count) })
    }

    /// Copies the gradient, on any device; `dst.len()` = parameter count.
    pub fn get_gradients(&self, dst: &mut [f32]) -> Result<()> {
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_gradients(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }

    /// Overwrites the gradient (e.g. with an average over data-parallel
    /// workers) before an optimiser step; `src.len()` = parameter count.
    pub fn set_gradients(&mut self, src: &[f32]) -> Result<()> {
        // SAFETY: live handle; src is valid for its length.
        check(unsafe { sys::snn_set_gradients(self.ptr(), src.as_ptr(), src.len()) })
    }

    /// Copies the gradient with respect to the inputs, `[batch][features]`.
    pub fn get_input_gradients(&self, dst: &mut [f32]) -> Result<()> {
        // SAFETY: dst is valid for its length.
        check(unsafe { sys::snn_get_input_gradients(self.ptr(), dst.as_mut_ptr(), dst.len()) })
    }
}

impl Drop for BackwardCache<'_> {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { sys::snn_backward_cache_destroy(self.raw.as_ptr()) }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptimiserKind {
    Sgd = 1,
    Adam = 2,
    AdamW = 3,
    RmsProp = 4,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hyperparameter {
    LearningRate = 1,
    Momentum = 2,
    Nesterov = 3,
    Beta1 = 4,
    Beta2 = 5,
    Epsilon = 6,
    WeightDecay = 7,
    Alpha = 8,
}

/// An optimiser's state (moments and step count) for one model. It borrows
/// no model and may outlive it: each step names the model, and the library
/// checks that it is the one the optimiser was made for.
pub struct Optimiser {
    raw: NonNull<sys::snn_optimiser>,
}

// SAFETY: as Model.
unsafe impl Send for Optimiser {}

impl Optimiser {
    pub fn set(&mut self, which: Hyperparameter, value: f64) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_optimiser_set(self.raw.as_ptr(), which as i32, value) })
    }

    pub fn get(&self, which: Hyperparameter) -> Result<f64> {
        let mut v = 0f64;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_optimiser_get(self.raw.as_ptr(), which as i32, &mut v) })?;
        Ok(v)
    }

    /// Updates `model`'s parameters in place from the gradient in `grads`.
    pub fn step(&mut self, model: &Model, grads: &BackwardCache<'_>) -> Result<()> {
        // SAFETY: live handles; Model is not Sync and its views need `&mut`,
        // so nothing observes the parameters while they change.
        check(unsafe { sys::snn_optimiser_step(self.raw.as_ptr(), model.ptr(), grads.ptr()) })
    }

    /// Zeroes the moments and the step count.
    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { sys::snn_optimiser_reset(self.raw.as_ptr()) })
    }

    pub fn step_count(&self) -> Result<i64> {
        let mut n = 0i64;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::snn_optimiser_step_count(self.raw.as_ptr(), &mut n) })?;
        Ok(n)
    }
}

impl Drop for Optimiser {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { sys::snn_optimiser_destroy(self.raw.as_ptr()) }
    }
}

/// A data set copied once to a device, gathered from by index.
pub struct Dataset {
    raw: NonNull<sys::snn_dataset>,
    _not_sync: PhantomData<*const ()>,
}

// SAFETY: as Model.
unsafe impl Send for Dataset {}

impl Dataset {
    /// `samples` holds whole samples of `features` floats; `labels`, when
    /// given, one 0-based label per sample.
    pub fn new(device: Device, samples: &[f32], features: usize, labels: Option<&[i32]>) -> Result<Dataset> {
        check_version()?;
        let count = samples.len().checked_div(features).unwrap_or(0);
        if let Some(l) = labels {
            if l.len() != count {
                return Err(Error {
                    status: 5,
                    message: format!("Dataset::new: {} labels for {count} samples", l.len()),
                });
            }
        }
        let labels = labels.map_or(ptr::null(), <[i32]>::as_ptr);
        let mut out = ptr::null_mut();
        // SAFETY: valid slices, copied; valid out pointer.
        let status = unsafe {
            sys::snn_dataset_create(device.raw(), samples.as_ptr(), count, features, labels, &mut out)
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

debug_handle!(ForwardCache<'_>, BackwardCache<'_>, Optimiser, Dataset);

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
    fn every_status_has_a_kind_and_text() {
        assert_eq!(ErrorKind::from_status(3), ErrorKind::Spec);
        assert_eq!(ErrorKind::from_status(21), ErrorKind::Internal);
        assert_eq!(ErrorKind::from_status(99), ErrorKind::Other(99));
        assert_eq!(status_string(99), "unknown status");
        assert_ne!(status_string(5), status_string(6));
    }

    #[test]
    fn describe_round_trips_the_spec() {
        let m = Model::new("input 4; dense 3 relu; dense 2").unwrap();
        let again = Model::new(&m.describe().unwrap()).unwrap();
        assert_eq!(again.describe().unwrap(), m.describe().unwrap());
        assert_eq!(m.layer_count().unwrap(), 3);
        assert_eq!(m.layer_shape(1).unwrap(), (3, 1, 1));
        assert_eq!(m.parameter_count().unwrap(), 4 * 3 + 3 + 3 * 2 + 2);
        let p = m.layer_params(2).unwrap();
        assert_eq!(p, LayerParams { weight_offset: 15, weight_count: 6, bias_offset: 21, bias_count: 2 });
    }

    #[test]
    fn parameters_are_a_view_of_the_model() {
        let mut m = Model::new("input 2; dense 1 nobias").unwrap();
        m.parameters_mut().unwrap().copy_from_slice(&[0.5, -2.0]);
        let mut copy = [0f32; 2];
        m.get_parameters(&mut copy).unwrap();
        assert_eq!(copy, [0.5, -2.0]);
        m.set_parameters(&[1.0, 1.0]).unwrap();
        assert_eq!(m.parameters().unwrap(), &[1.0, 1.0]);
        let mut fwd = m.preallocate(1).unwrap();
        fwd.set_inputs(&[3.0, 4.0]).unwrap();
        fwd.forward().unwrap();
        assert_eq!(fwd.outputs().unwrap(), &[7.0]);
    }

    #[test]
    fn threads_setting_round_trips() {
        let before = num_threads();
        set_num_threads(1).unwrap();
        assert_eq!(num_threads(), 1);
        set_num_threads(before).unwrap();
        assert_eq!(set_num_threads(0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn handles_are_send() {
        fn send<T: Send>() {}
        send::<Model>();
        send::<Optimiser>();
        send::<Dataset>();
    }
}
