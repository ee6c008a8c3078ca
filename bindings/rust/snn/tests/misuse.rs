//! Misuse gives an `Err` naming the problem, never a crash: wrong sizes,
//! values that do not fit the C types, calls out of order, another model's
//! handles, GPU requests without a GPU.

use snn::{Dataset, Device, ErrorKind, Hyperparameter, Loss, Model, OptimiserKind};

#[test]
fn a_bad_spec_names_the_problem() {
    let e = Model::new("input 4; dense banana").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Spec);
    assert_eq!(e.status(), 3);
    assert!(e.message().contains("snn_model_create"), "{}", e.message());
    assert!(e.to_string().contains(e.message()));
    assert_eq!(Model::new("input 4x4x1; conv 5x5 2").unwrap_err().kind(), ErrorKind::Shape);
    let e = Model::new("input 4;\0 dense 2").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("NUL"), "{e}");
}

#[test]
fn debug_prints_the_kind_and_the_message_as_main_shows_them() {
    let e = Model::new("input 4; dense banana").unwrap_err();
    let shown = e.to_string();
    assert!(shown.starts_with("snn_model_create: "), "{shown}");
    assert!(shown.ends_with(" (the model spec does not parse)"), "{shown}");
    // `fn main() -> Result<(), snn::Error>` prints "Error: " and this
    assert_eq!(format!("{e:?}"), format!("Spec: {shown}"));
    let fields = format!("{e:#?}");
    assert!(fields.starts_with("Error {") && fields.contains("kind: Spec"), "{fields}");
    assert!(fields.contains(&format!("{:?}", e.message())), "{fields}");
    let other = snn::set_num_threads(0).unwrap_err();
    assert_eq!(format!("{other:?}"), format!("InvalidArgument: {other}"));
}

#[test]
fn usize_values_beyond_int64_are_errors_naming_the_value() {
    let model = Model::new("input 3; dense 2").unwrap();
    let max = usize::MAX.to_string();
    let e = model.preallocate(usize::MAX).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Batch);
    assert!(e.message().contains(&max) && e.message().contains("preallocate"), "{e}");
    assert_eq!(model.preallocate_grads(usize::MAX).unwrap_err().kind(), ErrorKind::Batch);
    let mut fwd = model.preallocate(2).unwrap();
    let e = fwd.set_batch(usize::MAX).unwrap_err();
    assert!(e.message().contains(&max), "{e}");
    for e in [
        model.layer_shape(usize::MAX).unwrap_err(),
        model.layer_params(usize::MAX).unwrap_err(),
        model.layer_state(usize::MAX).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains(&max), "{e}");
    }
    // in range for the C type, out of range for the library
    assert_eq!(model.preallocate(0).unwrap_err().kind(), ErrorKind::Batch);
    assert_eq!(model.layer_shape(3).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn wrong_sizes_are_count_errors() {
    let mut model = Model::new("input 3; dense 2").unwrap();
    let mut fwd = model.preallocate(2).unwrap();
    let e = fwd.set_inputs(&[1.0; 5]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Count);
    assert!(e.message().contains("5 floats") && e.message().contains("3 features"), "{}", e.message());
    let mut out = [0f32; 3];
    fwd.set_inputs(&[1.0; 6]).unwrap();
    fwd.forward(&model).unwrap();
    assert_eq!(fwd.get_outputs(&mut out).unwrap_err().kind(), ErrorKind::Count);
    assert_eq!(model.set_parameters(&[0.0; 7]).unwrap_err().kind(), ErrorKind::Count);
    assert_eq!(model.get_parameters(&mut [0.0; 9]).unwrap_err().kind(), ErrorKind::Count);
    let mut bwd = model.preallocate_grads(2).unwrap();
    assert_eq!(bwd.set_targets(&[0.0; 3]).unwrap_err().kind(), ErrorKind::Count);
    assert_eq!(bwd.set_gradients(&[0.0; 2]).unwrap_err().kind(), ErrorKind::Count);
}

#[test]
fn a_partial_trailing_sample_is_refused_not_dropped() {
    let model = Model::new("input 3; dense 2").unwrap();
    let mut fwd = model.preallocate(4).unwrap();
    let e = fwd.set_inputs_gather(&[0.0; 10], &[0, 1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Count);
    assert!(e.message().contains("10 floats") && e.message().contains("3 features"), "{e}");
    fwd.set_inputs_gather(&[0.0; 9], &[0, 2]).unwrap();
    assert_eq!(fwd.set_inputs_gather(&[0.0; 9], &[3]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(fwd.set_inputs_gather(&[0.0; 9], &[-1]).unwrap_err().kind(), ErrorKind::InvalidArgument);

    let e = Dataset::new(Device::Cpu, &[0.0; 7], 2, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Count);
    assert_eq!(Dataset::new(Device::Cpu, &[0.0; 4], 0, None).unwrap_err().kind(), ErrorKind::Count);
    assert_eq!(Dataset::new(Device::Cpu, &[0.0; 4], 2, Some(&[0])).unwrap_err().kind(), ErrorKind::Count);
}

#[test]
fn calls_out_of_order_and_bad_labels() {
    let model = Model::new("input 3; dense 2").unwrap();
    let mut fwd = model.preallocate(2).unwrap();
    let mut bwd = model.preallocate_grads(2).unwrap();
    assert_eq!(fwd.forward(&model).unwrap_err().kind(), ErrorKind::State);
    assert_eq!(fwd.set_batch(3).unwrap_err().kind(), ErrorKind::Batch);
    let e = bwd.set_labels(&[0, 2]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Label);
    fwd.set_inputs(&[0.0; 6]).unwrap();
    fwd.forward(&model).unwrap();
    assert_eq!(bwd.backprop(&mut fwd, &model, Loss::Mse).unwrap_err().kind(), ErrorKind::State);
    let mut dx = [0f32; 6];
    assert_eq!(bwd.get_input_gradients(&mut dx).unwrap_err().kind(), ErrorKind::State);
}

#[test]
fn another_models_handles_are_refused() {
    let mut a = Model::new("input 3; dense 2").unwrap();
    let mut b = Model::new("input 3; dense 2").unwrap();
    let mut fwd = a.preallocate(1).unwrap();
    fwd.set_inputs(&[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(fwd.forward(&b).unwrap_err().kind(), ErrorKind::ModelMismatch);
    fwd.forward(&a).unwrap();
    let mut bwd = b.preallocate_grads(1).unwrap();
    bwd.set_targets(&[0.0, 0.0]).unwrap();
    assert_eq!(bwd.backprop(&mut fwd, &b, Loss::Mse).unwrap_err().kind(), ErrorKind::ModelMismatch);
    let mut opt = a.optimiser(OptimiserKind::Adam).unwrap();
    assert_eq!(opt.step(&mut b, &mut bwd).unwrap_err().kind(), ErrorKind::ModelMismatch);
    a.init(1).unwrap();
}

#[test]
fn caches_and_optimisers_outlive_their_model() {
    let model = Model::new("input 2; dense 1").unwrap();
    let mut fwd = model.preallocate(1).unwrap();
    let mut adam = model.optimiser(OptimiserKind::Adam).unwrap();
    fwd.set_inputs(&[1.0, 2.0]).unwrap();
    fwd.forward(&model).unwrap();
    let y = fwd.outputs().unwrap().to_vec();
    drop(model);
    // calls that take only the handle still work
    fwd.set_inputs(&[3.0, 4.0]).unwrap();
    assert_eq!(fwd.outputs().unwrap(), &y[..]);
    adam.set(Hyperparameter::LearningRate, 0.5).unwrap();
    assert_eq!(adam.get(Hyperparameter::LearningRate).unwrap(), 0.5);
    assert_eq!(adam.step_count().unwrap(), 0);
}

#[test]
fn hyperparameters_out_of_range_are_refused() {
    let model = Model::new("input 1; dense 1").unwrap();
    let mut sgd = model.optimiser(OptimiserKind::Sgd).unwrap();
    assert_eq!(sgd.set(Hyperparameter::Beta1, 0.9).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(sgd.set(Hyperparameter::LearningRate, f64::NAN).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(sgd.get(Hyperparameter::LearningRate).unwrap(), 0.01);
    sgd.reset().unwrap();
}

#[test]
fn clipping_reports_the_gradient_norm() {
    let mut model = Model::new("input 1; dense 1").unwrap();
    let mut bwd = model.preallocate_grads(1).unwrap();
    let mut sgd = model.optimiser(OptimiserKind::Sgd).unwrap();
    assert_eq!(sgd.grad_norm().unwrap_err().kind(), ErrorKind::State);
    sgd.set(Hyperparameter::MaxGradNorm, 1.0).unwrap();
    model.set_parameters(&[0.0, 0.0]).unwrap();
    bwd.set_gradients(&[3.0, 4.0]).unwrap();
    sgd.step(&mut model, &mut bwd).unwrap();
    assert_eq!(sgd.grad_norm().unwrap(), 5.0);
    assert_eq!(sgd.set(Hyperparameter::MaxGradNorm, -1.0).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_loss_without_a_parameter_refuses_one() {
    let model = Model::new("input 1; dense 1").unwrap();
    let mut bwd = model.preallocate_grads(1).unwrap();
    assert_eq!(bwd.set_loss_parameter(Loss::Mse, 1.0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let e = bwd.loss_parameter(Loss::LogitCrossEntropy).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("has no parameter"), "{e}");
}

#[test]
fn huber_delta_is_checked_and_used() {
    let mut model = Model::new("input 1; dense 1").unwrap();
    model.set_parameters(&[1.0, 0.0]).unwrap();
    let mut fwd = model.preallocate(2).unwrap();
    let mut bwd = model.preallocate_grads(2).unwrap();
    assert_eq!(bwd.loss_parameter(Loss::Huber).unwrap(), 1.0);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e39] {
        assert_eq!(bwd.set_loss_parameter(Loss::Huber, bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    bwd.set_loss_parameter(Loss::Huber, 2.0).unwrap();
    assert_eq!(bwd.loss_parameter(Loss::Huber).unwrap(), 2.0);
    fwd.set_inputs(&[1.0, 5.0]).unwrap();
    fwd.forward(&model).unwrap();
    bwd.set_targets(&[0.0, 0.0]).unwrap();
    // residuals 1 and 5: (0.5 + 2 (5 - 1)) / 2
    assert_eq!(bwd.backprop(&mut fwd, &model, Loss::Huber).unwrap(), 4.25);
    // smooth L1 with beta 0 is L1: (1 + 5) / 2
    bwd.set_loss_parameter(Loss::SmoothL1, 0.0).unwrap();
    assert_eq!(bwd.backprop(&mut fwd, &model, Loss::SmoothL1).unwrap(), 3.0);
    assert_eq!(bwd.set_loss_parameter(Loss::SmoothL1, -1.0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    // binary cross-entropy of logits 1 and 5 against 1 and 0
    bwd.set_targets(&[1.0, 0.0]).unwrap();
    let bce = bwd.backprop(&mut fwd, &model, Loss::BceWithLogits).unwrap();
    let want = ((-1f64).exp().ln_1p() + 5.0 + (-5f64).exp().ln_1p()) / 2.0;
    assert!((f64::from(bce) - want).abs() < 1e-6 * want, "{bce} {want}");
    assert_eq!(bwd.loss_parameter(Loss::BceWithLogits).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn without_a_gpu_requests_fail_cleanly() {
    let mut model = Model::new("input 2; dense 1").unwrap();
    let mut bwd = model.preallocate_grads(1).unwrap();
    let mut fwd = model.preallocate(1).unwrap();
    // GPU interop on CPU caches is refused whatever the machine
    assert_eq!(bwd.gradients_device().unwrap_err().kind(), ErrorKind::DeviceMismatch);
    let host = [1.0f32, 2.0];
    // SAFETY: the library refuses a CPU cache before reading the pointer.
    let e = unsafe { fwd.set_inputs_device(host.as_ptr(), 2) }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeviceMismatch);
    bwd.synchronize().unwrap();
    if snn::gpu_count() == 0 {
        let e = model.to_gpu(0).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::GpuPluginNotFound | ErrorKind::GpuDriver | ErrorKind::NoGpu), "{e}");
        assert!(!e.message().is_empty());
        assert_eq!(snn::gpu_status(0).unwrap_err().kind(), e.kind());
        assert_eq!(model.to_best_device().unwrap(), Device::Cpu);
        assert_eq!(Dataset::new(Device::Gpu(0), &[1.0, 2.0], 2, None).unwrap_err().kind(), e.kind());
        assert_eq!(Dataset::tokens(Device::Gpu(0), &[1, 2], 2, Some(&[1]), None).unwrap_err().kind(), e.kind());
    }
    assert_eq!(model.device().unwrap(), model.to_best_device().unwrap());
    model.to_cpu().unwrap();
    assert_eq!(model.device().unwrap(), Device::Cpu);
    snn::set_allow_tf32(false).unwrap();
}

#[test]
fn a_cpu_dataset_feeds_both_caches() {
    let model = Model::new("input 2; dense 2").unwrap();
    let data = Dataset::new(Device::Cpu, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, Some(&[0, 1, 1])).unwrap();
    let mut fwd = model.preallocate(3).unwrap();
    let mut bwd = model.preallocate_grads(3).unwrap();
    fwd.set_inputs_from_dataset(&data, &[2, 0]).unwrap();
    bwd.set_labels_from_dataset(&data, &[2, 0]).unwrap();
    fwd.forward(&model).unwrap();
    assert!(bwd.backprop(&mut fwd, &model, Loss::LogitCrossEntropy).unwrap() > 0.0);
    assert_eq!(fwd.set_inputs_from_dataset(&data, &[3]).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn the_finite_check_stops_a_nan_step() {
    let mut model = Model::new("input 1; dense 1").unwrap();
    let mut fwd = model.preallocate(1).unwrap();
    let mut bwd = model.preallocate_grads(1).unwrap();
    fwd.set_inputs(&[f32::NAN]).unwrap();
    fwd.forward(&model).unwrap();
    bwd.set_targets(&[0.0]).unwrap();
    snn::set_check_finite(true).unwrap();
    let e = bwd.backprop(&mut fwd, &model, Loss::Mse).unwrap_err();
    snn::set_check_finite(false).unwrap();
    assert_eq!(e.kind(), ErrorKind::NotFinite);
    model.init(0).unwrap();
}
