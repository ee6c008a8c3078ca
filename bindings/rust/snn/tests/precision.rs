//! Mixed precision and dynamic loss scaling: bf16 changes nothing on a model
//! without matrix products and stays close to float32 on an MLP, the CPU
//! refuses fp16, a forced overflow skips the step and lowers the scale, good
//! steps raise it, and checkpoints keep the scaler.

use std::path::PathBuf;

use snn::{precision_support, Device, ErrorKind, LossScaling, Model, OptimiserKind, Precision};

const MLP: &str = "input 6; dense 8 tanh; dense 3";
/// No dense, conv, conv1d, attention, lstm nor gru: bf16 has nothing to round.
const NO_PRODUCTS: &str = "input 4x4x2; batchnorm; relu; maxpool 2; flatten; softmax";

fn inputs(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 29 % 97) as f32 / 97.0) * 2.0 - 1.0).collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snn-rust-precision-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The outputs and gradient of one MSE pass of `model` at `precision`, batch 8
/// (at bf16, products of up to 4 rows run as float32's).
fn pass(model: &Model, precision: Precision) -> (Vec<f32>, Vec<f32>) {
    let mut fwd = model.preallocate(8).unwrap();
    let mut bwd = model.preallocate_grads(8).unwrap();
    fwd.set_precision(precision).unwrap();
    assert_eq!(fwd.precision().unwrap(), precision);
    fwd.set_inputs(&inputs(8 * model.input_size().unwrap())).unwrap();
    fwd.forward(model).unwrap();
    let y = fwd.outputs().unwrap().to_vec();
    bwd.set_targets(&vec![0.1; y.len()]).unwrap();
    bwd.backprop(&mut fwd, model, snn::Loss::Mse).unwrap();
    (y, bwd.gradients().unwrap().to_vec())
}

/// One MSE backprop of the MLP at batch 4 towards `target`.
fn mlp_backprop(model: &Model, bwd: &mut snn::BackwardCache, target: f32) -> f32 {
    let mut fwd = model.preallocate(4).unwrap();
    fwd.set_inputs(&inputs(4 * 6)).unwrap();
    fwd.forward(model).unwrap();
    bwd.set_targets(&[target; 12]).unwrap();
    bwd.backprop(&mut fwd, model, snn::Loss::Mse).unwrap()
}

#[test]
fn a_new_cache_computes_in_float32() {
    let model = Model::new(MLP).unwrap();
    let fwd = model.preallocate(2).unwrap();
    assert_eq!(fwd.precision().unwrap(), Precision::Float32);
    assert_eq!(Precision::default(), Precision::Float32);
}

#[test]
fn bf16_on_a_model_without_products_equals_float32_bit_for_bit() {
    let mut model = Model::new(NO_PRODUCTS).unwrap();
    model.init(5).unwrap();
    let (y32, g32) = pass(&model, Precision::Float32);
    let (y16, g16) = pass(&model, Precision::Bf16);
    assert_eq!(y32, y16);
    assert_eq!(g32, g16);
    assert!(y32.iter().any(|&v| v != 0.0));
    assert!(g32.iter().any(|&v| v != 0.0));
}

#[test]
fn the_cpu_refuses_fp16_with_unsupported_and_keeps_the_precision() {
    let model = Model::new(MLP).unwrap();
    let mut fwd = model.preallocate(2).unwrap();
    let err = fwd.set_precision(Precision::Fp16).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(err.message().contains("fp16"), "{}", err.message());
    assert_eq!(fwd.precision().unwrap(), Precision::Float32);
    let err = precision_support(Device::Cpu, Precision::Fp16).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
    assert!(precision_support(Device::Cpu, Precision::Float32).unwrap());
    // bf16 runs on every CPU, natively or emulated: Ok either way.
    precision_support(Device::Cpu, Precision::Bf16).unwrap();
    assert_eq!(precision_support(Device::Gpu(-5), Precision::Bf16).unwrap_err().kind(), ErrorKind::GpuIndex);
}

/// Whether `got` is within `rel` of `want`, relative to the largest `want`.
fn close(got: &[f32], want: &[f32], rel: f32) -> bool {
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| (g - w).abs() <= rel * scale)
}

/// An MLP's outputs and gradients at bf16 lie within 2^-6 of float32's
/// (operands rounded to 8 significant bits, float32 sums), and differ from
/// them: the products were rounded.
#[test]
fn bf16_on_an_mlp_is_close_to_float32() {
    let mut model = Model::new(MLP).unwrap();
    model.init(2).unwrap();
    let (y32, g32) = pass(&model, Precision::Float32);
    let (y16, g16) = pass(&model, Precision::Bf16);
    assert!(close(&y16, &y32, 1.0 / 64.0), "{y16:?} against {y32:?}");
    assert!(close(&g16, &g32, 1.0 / 64.0), "{g16:?} against {g32:?}");
    assert_ne!(y16, y32, "bf16 rounded nothing");
}

#[test]
fn loss_scaling_starts_off_and_turns_on_with_pytorch_defaults() {
    let mut model = Model::new(MLP).unwrap();
    model.init(1).unwrap();
    let mut plain = model.preallocate_grads(4).unwrap();
    let mut scaled = model.preallocate_grads(4).unwrap();
    let off = plain.loss_scaling().unwrap();
    assert!(!off.on);
    assert_eq!(off.scale, 1.0);
    scaled.set_loss_scaling(true).unwrap();
    assert_eq!(scaled.loss_scaling().unwrap(), LossScaling::default());
    // A power-of-two scale multiplies and divides exactly.
    let l1 = mlp_backprop(&model, &mut plain, 0.5);
    let l2 = mlp_backprop(&model, &mut scaled, 0.5);
    assert_eq!(l1, l2);
    assert_eq!(plain.gradients().unwrap(), scaled.gradients().unwrap());
    let state = scaled.loss_scaling().unwrap();
    assert_eq!(state.good_steps, 1);
    assert_eq!(state.scale, 65536.0);
    assert!(!state.skipped);
    scaled.set_loss_scaling(false).unwrap();
    assert!(!scaled.loss_scaling().unwrap().on);
}

#[test]
fn a_forced_overflow_skips_the_step_and_lowers_the_scale() {
    let mut model = Model::new(MLP).unwrap();
    model.init(2).unwrap();
    let mut bwd = model.preallocate_grads(4).unwrap();
    let mut adam = model.optimiser(OptimiserKind::Adam).unwrap();
    let settings = LossScaling {
        scale: 1e38,
        growth_factor: 2.0,
        backoff_factor: 0.25,
        growth_interval: 3,
        good_steps: 2,
        ..LossScaling::default()
    };
    bwd.set_loss_scaling_state(settings).unwrap();
    let before = model.parameters_vec().unwrap();
    mlp_backprop(&model, &mut bwd, 1e3);
    let state = bwd.loss_scaling().unwrap();
    assert!(state.skipped);
    assert_eq!(state.scale, 0.25e38);
    assert_eq!(state.good_steps, 0);
    adam.step(&mut model, &mut bwd).unwrap();
    assert_eq!(model.parameters_vec().unwrap(), before);
    assert_eq!(adam.step_count().unwrap(), 0);

    // The third good step in a row grows the scale, and the step runs.
    bwd.set_loss_scaling_state(LossScaling { scale: 1024.0, ..settings }).unwrap();
    mlp_backprop(&model, &mut bwd, 0.5);
    let state = bwd.loss_scaling().unwrap();
    assert!(!state.skipped);
    assert_eq!(state.scale, 2048.0);
    assert_eq!(state.good_steps, 0);
    adam.step(&mut model, &mut bwd).unwrap();
    assert_ne!(model.parameters_vec().unwrap(), before);
    assert_eq!(adam.step_count().unwrap(), 1);
}

#[test]
fn settings_out_of_range_are_refused_and_change_nothing() {
    let model = Model::new(MLP).unwrap();
    let mut bwd = model.preallocate_grads(2).unwrap();
    let good = LossScaling { scale: 8.0, growth_interval: 10, ..LossScaling::default() };
    for bad in [
        LossScaling { scale: 0.0, ..good },
        LossScaling { scale: 1e39, ..good },
        LossScaling { growth_factor: 1.0, ..good },
        LossScaling { backoff_factor: 1.0, ..good },
        LossScaling { growth_interval: 0, ..good },
        LossScaling { good_steps: 10, ..good },
        LossScaling { growth_interval: u64::MAX, ..good },
    ] {
        let err = bwd.set_loss_scaling_state(bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{bad:?}");
        assert!(!bwd.loss_scaling().unwrap().on, "{bad:?}");
    }
    bwd.set_loss_scaling_state(good).unwrap();
    assert_eq!(bwd.loss_scaling().unwrap(), good);
    bwd.set_loss_scaling_state(LossScaling { on: false, ..good }).unwrap();
    assert!(!bwd.loss_scaling().unwrap().on);
}

#[test]
fn checkpoints_keep_the_scaler_and_training_resumes_with_it() {
    let dir = scratch("checkpoint");
    let (with, without) = (dir.join("with.snn"), dir.join("without.snn"));
    let mut model = Model::new(MLP).unwrap();
    model.init(3).unwrap();
    let sgd = model.optimiser(OptimiserKind::Sgd).unwrap();
    let mut bwd = model.preallocate_grads(4).unwrap();
    let saved = LossScaling {
        scale: 0.5,
        growth_factor: 3.0,
        backoff_factor: 0.375,
        growth_interval: 7,
        good_steps: 6,
        ..LossScaling::default()
    };
    bwd.set_loss_scaling_state(saved).unwrap();
    model.save_checkpoint_with_loss_scaling(&sgd, &bwd, &with).unwrap();
    let off = model.preallocate_grads(4).unwrap();
    model.save_checkpoint_with_loss_scaling(&sgd, &off, &without).unwrap();

    let (resumed, _sgd) = Model::load_checkpoint(&with).unwrap();
    assert_eq!(resumed.parameters_vec().unwrap(), model.parameters_vec().unwrap());
    let mut restored = resumed.preallocate_grads(4).unwrap();
    restored.load_loss_scaling(&with).unwrap();
    assert_eq!(restored.loss_scaling().unwrap(), saved);
    // The seventh good step in a row grows the restored scale by 3.
    mlp_backprop(&resumed, &mut restored, 0.5);
    let state = restored.loss_scaling().unwrap();
    assert_eq!((state.scale, state.good_steps, state.skipped), (1.5, 0, false));

    restored.load_loss_scaling(&without).unwrap();
    assert!(!restored.loss_scaling().unwrap().on);
    let plain = dir.join("model.snn");
    model.save(&plain).unwrap();
    restored.set_loss_scaling(true).unwrap();
    let err = restored.load_loss_scaling(&plain).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::FileFormat);
    assert_eq!(restored.loss_scaling().unwrap(), LossScaling::default());
    std::fs::remove_dir_all(dir).unwrap();
}
