//! Failed calls become `snn::Error` values carrying the status and the
//! library's message.

use snn::{Dataset, Device, ErrorKind, Loss, Model, OptimiserKind};

#[test]
fn a_bad_spec_names_the_problem() {
    let e = Model::new("input 4; dense banana").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Spec);
    assert_eq!(e.status(), 3);
    assert!(e.message().contains("snn_model_create"), "{}", e.message());
    assert!(e.to_string().contains(e.message()));
}

#[test]
fn a_layer_that_does_not_fit_is_a_shape_error() {
    let e = Model::new("input 4x4x1; conv 5x5 2").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Shape);
}

#[test]
fn a_wrong_input_count_is_a_count_error() {
    let model = Model::new("input 3; dense 2").unwrap();
    let mut fwd = model.preallocate(2).unwrap();
    let e = fwd.set_inputs(&[1.0; 5]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Count);
    assert!(e.message().contains('6') && e.message().contains('5'), "{}", e.message());
}

#[test]
fn order_batch_and_label_errors() {
    let model = Model::new("input 3; dense 2").unwrap();
    let mut fwd = model.preallocate(2).unwrap();
    let mut bwd = model.preallocate_grads(2).unwrap();
    assert_eq!(fwd.forward().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(fwd.set_batch(3).unwrap_err().kind(), ErrorKind::Batch);
    assert_eq!(bwd.set_labels(&[0, 2]).unwrap_err().kind(), ErrorKind::Label);
    fwd.set_inputs(&[0.0; 6]).unwrap();
    fwd.forward().unwrap();
    assert_eq!(bwd.backprop(&mut fwd, Loss::Mse).unwrap_err().kind(), ErrorKind::State);
    let mut input_grad = [0f32; 6];
    assert_eq!(bwd.get_input_gradients(&mut input_grad).unwrap_err().kind(), ErrorKind::State);
}

#[test]
fn caches_and_optimisers_of_another_model_are_refused() {
    let a = Model::new("input 3; dense 2").unwrap();
    let b = Model::new("input 3; dense 2").unwrap();
    let mut fwd = a.preallocate(1).unwrap();
    let mut bwd = b.preallocate_grads(1).unwrap();
    fwd.set_inputs(&[1.0, 2.0, 3.0]).unwrap();
    fwd.forward().unwrap();
    bwd.set_targets(&[0.0, 0.0]).unwrap();
    assert_eq!(bwd.backprop(&mut fwd, Loss::Mse).unwrap_err().kind(), ErrorKind::ModelMismatch);
    let mut opt = a.optimiser(OptimiserKind::Adam).unwrap();
    assert_eq!(opt.step(&b, &bwd).unwrap_err().kind(), ErrorKind::ModelMismatch);
}

#[test]
fn hyperparameters_out_of_range_are_refused() {
    let model = Model::new("input 1; dense 1").unwrap();
    let mut sgd = model.optimiser(OptimiserKind::Sgd).unwrap();
    let e = sgd.set(snn::Hyperparameter::Beta1, 0.9).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(sgd.set(snn::Hyperparameter::LearningRate, f64::NAN).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn without_a_gpu_requests_fail_cleanly() {
    let mut model = Model::new("input 2; dense 1").unwrap();
    if snn::gpu_count() == 0 {
        let e = model.to_gpu(0).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::GpuPluginNotFound | ErrorKind::GpuDriver | ErrorKind::NoGpu));
        assert_eq!(snn::gpu_status(0).unwrap_err().kind(), e.kind());
        assert_eq!(model.to_best_device().unwrap(), Device::Cpu);
        assert_eq!(Dataset::new(Device::Gpu(0), &[1.0, 2.0], 2, None).unwrap_err().kind(), e.kind());
    }
    assert_eq!(model.device().unwrap(), model.to_best_device().unwrap());
    model.to_cpu().unwrap();
    assert_eq!(model.device().unwrap(), Device::Cpu);
}

#[test]
fn a_missing_file_is_an_io_error() {
    let e = Model::load("/nonexistent/dir/model.safetensors").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Io), "{e}");
}

#[test]
fn a_cpu_dataset_feeds_a_cache() {
    let model = Model::new("input 2; dense 2").unwrap();
    let data = Dataset::new(Device::Cpu, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, Some(&[0, 1, 1])).unwrap();
    let mut fwd = model.preallocate(3).unwrap();
    let mut bwd = model.preallocate_grads(3).unwrap();
    fwd.set_inputs_from_dataset(&data, &[2, 0]).unwrap();
    bwd.set_labels_from_dataset(&data, &[2, 0]).unwrap();
    fwd.forward().unwrap();
    assert!(bwd.backprop(&mut fwd, Loss::LogitCrossEntropy).unwrap() > 0.0);
    let e = fwd.set_inputs_from_dataset(&data, &[3]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}
