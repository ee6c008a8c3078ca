//! Training reaches a stated loss; gradients match finite differences;
//! caches are reused across batch sizes.

use snn::{Hyperparameter, Loss, Model, OptimiserKind};

const CNN: &str = "input 8x8x1; conv 3x3 4 relu; maxpool 2; flatten; dense 3";

fn images(batch: usize) -> Vec<f32> {
    (0..batch * 64).map(|i| ((i * 37 % 101) as f32 / 101.0) - 0.5).collect()
}

#[test]
fn an_mlp_fits_sine_below_1e_4() {
    const N: usize = 256;
    let x: Vec<f32> = (0..N).map(|i| i as f32 * std::f32::consts::TAU / (N - 1) as f32).collect();
    let y: Vec<f32> = x.iter().map(|v| v.sin()).collect();
    let mut model = Model::new("input 1; dense 16 tanh; dense 16 tanh; dense 1").unwrap();
    model.init(42).unwrap();
    let mut fwd = model.preallocate(N).unwrap();
    let mut bwd = model.preallocate_grads(N).unwrap();
    let mut adam = model.optimiser(OptimiserKind::Adam).unwrap();
    adam.set(Hyperparameter::LearningRate, 0.01).unwrap();
    fwd.set_inputs(&x).unwrap();
    bwd.set_targets(&y).unwrap();
    let mut first = None;
    let mut loss = f32::INFINITY;
    for _ in 0..2000 {
        fwd.forward(&model).unwrap();
        loss = bwd.backprop(&mut fwd, &model, Loss::Mse).unwrap();
        first.get_or_insert(loss);
        adam.step(&mut model, &mut bwd).unwrap();
    }
    assert!(first.unwrap() > 0.1, "{first:?}");
    assert!(loss < 1e-4, "final MSE {loss}");
    assert_eq!(adam.step_count().unwrap(), 2000);
}

#[test]
fn a_cnn_learns_four_labels_below_0_05_cross_entropy() {
    let mut model = Model::new(CNN).unwrap();
    model.init(3).unwrap();
    let mut fwd = model.preallocate(4).unwrap();
    let mut bwd = model.preallocate_grads(4).unwrap();
    let mut sgd = model.optimiser(OptimiserKind::Sgd).unwrap();
    sgd.set(Hyperparameter::LearningRate, 0.1).unwrap();
    sgd.set(Hyperparameter::Momentum, 0.9).unwrap();
    fwd.set_inputs(&images(4)).unwrap();
    bwd.set_labels(&[0, 1, 2, 1]).unwrap();
    let mut losses = Vec::new();
    for _ in 0..200 {
        fwd.forward(&model).unwrap();
        losses.push(bwd.backprop(&mut fwd, &model, Loss::LogitCrossEntropy).unwrap());
        sgd.step(&mut model, &mut bwd).unwrap();
    }
    assert!(losses[0] > 1.0, "{}", losses[0]);
    assert!(losses[199] < 0.05, "final cross-entropy {}", losses[199]);
    let mut out = vec![0f32; 12];
    fwd.get_outputs(&mut out).unwrap();
    assert_eq!(&out[..], fwd.outputs().unwrap());
}

#[test]
fn gradients_match_finite_differences() {
    let mut model = Model::new(CNN).unwrap();
    model.init(7).unwrap();
    let x = images(2);
    let mut fwd = model.preallocate(2).unwrap();
    let mut bwd = model.preallocate_grads(2).unwrap();
    fwd.set_inputs(&x).unwrap();
    bwd.set_labels(&[0, 2]).unwrap();
    let mut loss_at = |model: &Model| {
        fwd.forward(model).unwrap();
        let loss = bwd.backprop(&mut fwd, model, Loss::LogitCrossEntropy).unwrap();
        (loss, bwd.gradients().unwrap().to_vec())
    };
    let (_, grad) = loss_at(&model);
    let n = model.parameter_count().unwrap();
    assert_eq!(grad.len(), n);
    // a conv weight, a conv bias, a dense weight and a dense bias
    for i in [0usize, 37, 60, n - 1] {
        let h = 1e-2f32;
        let saved = model.parameters().unwrap()[i];
        model.parameters_mut().unwrap()[i] = saved + h;
        let (up, _) = loss_at(&model);
        model.parameters_mut().unwrap()[i] = saved - h;
        let (down, _) = loss_at(&model);
        model.parameters_mut().unwrap()[i] = saved;
        let numeric = (up - down) / (2.0 * h);
        assert!((numeric - grad[i]).abs() < 2e-3 + 2e-2 * grad[i].abs(), "parameter {i}: {numeric} vs {}", grad[i]);
    }
}

#[test]
fn an_output_gradient_of_2_y_minus_t_over_n_equals_the_mse_gradient() {
    let model = Model::new("input 3; dense 2 tanh; dense 2").unwrap();
    let x = [0.1, -0.2, 0.3, 0.5, 0.0, -1.0];
    let t = [1.0, 0.0, -1.0, 0.5];
    let mut fwd = model.preallocate(2).unwrap();
    let mut bwd = model.preallocate_grads(2).unwrap();
    fwd.set_inputs(&x).unwrap();
    fwd.forward(&model).unwrap();
    bwd.set_targets(&t).unwrap();
    bwd.backprop(&mut fwd, &model, Loss::Mse).unwrap();
    let mse_grad = bwd.gradients().unwrap().to_vec();
    let dy: Vec<f32> = fwd.outputs().unwrap().iter().zip(&t).map(|(y, t)| 2.0 * (y - t) / 4.0).collect();
    bwd.backprop_with_output_gradient(&mut fwd, &model, &dy).unwrap();
    for (a, b) in bwd.gradients().unwrap().iter().zip(&mse_grad) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
}

#[test]
fn set_gradients_replaces_what_the_step_uses() {
    let mut model = Model::new("input 2; dense 1").unwrap();
    model.set_parameters(&[1.0, 2.0, 3.0]).unwrap();
    let mut bwd = model.preallocate_grads(1).unwrap();
    let mut sgd = model.optimiser(OptimiserKind::Sgd).unwrap();
    sgd.set(Hyperparameter::LearningRate, 0.5).unwrap();
    bwd.set_gradients(&[1.0, -1.0, 2.0]).unwrap();
    let mut copy = [0f32; 3];
    bwd.get_gradients(&mut copy).unwrap();
    assert_eq!(copy, [1.0, -1.0, 2.0]);
    sgd.step(&mut model, &mut bwd).unwrap();
    assert_eq!(model.parameters().unwrap(), &[0.5, 2.5, 2.0]);
    bwd.synchronize().unwrap();
}

#[test]
fn input_gradients_of_a_linear_layer_are_its_weights() {
    let mut model = Model::new("input 2; dense 1 nobias").unwrap();
    model.parameters_mut().unwrap().copy_from_slice(&[0.5, -2.0]);
    let mut fwd = model.preallocate(1).unwrap();
    let mut bwd = model.preallocate_grads(1).unwrap();
    bwd.set_input_gradient(true).unwrap();
    fwd.set_inputs(&[3.0, 4.0]).unwrap();
    fwd.forward(&model).unwrap();
    assert_eq!(fwd.outputs().unwrap(), &[-6.5]);
    bwd.backprop_with_output_gradient(&mut fwd, &model, &[1.0]).unwrap();
    let mut dx = [0f32; 2];
    bwd.get_input_gradients(&mut dx).unwrap();
    assert_eq!(dx, [0.5, -2.0]);
}

#[test]
fn gather_and_batch_resize_reuse_the_cache() {
    let model = Model::new(CNN).unwrap();
    let data = images(5);
    let mut fwd = model.preallocate(4).unwrap();
    assert_eq!(fwd.batch().unwrap(), (4, 4));
    fwd.set_inputs_gather(&data, &[4, 0]).unwrap();
    assert_eq!(fwd.batch().unwrap(), (2, 4));
    fwd.forward(&model).unwrap();
    let gathered = fwd.outputs().unwrap().to_vec();
    fwd.set_batch(1).unwrap();
    fwd.set_inputs(&data[4 * 64..]).unwrap();
    fwd.forward(&model).unwrap();
    assert_eq!(fwd.outputs().unwrap(), &gathered[..3]);
    let mut bwd = model.preallocate_grads(4).unwrap();
    bwd.set_labels_gather(&[0, 1, 2, 0, 2], &[4, 0]).unwrap();
}

#[test]
fn describe_round_trips_the_spec_and_layouts_are_ranges() {
    let m = Model::new("input 4; dense 3 relu; dense 2").unwrap();
    let again = Model::new(&m.describe().unwrap()).unwrap();
    assert_eq!(again.describe().unwrap(), m.describe().unwrap());
    assert_eq!(m.layer_count().unwrap(), 3);
    assert_eq!(m.layer_shape(1).unwrap(), (3, 1, 1));
    assert_eq!(m.input_size().unwrap(), 4);
    assert_eq!(m.output_size().unwrap(), 2);
    assert_eq!(m.parameter_count().unwrap(), 4 * 3 + 3 + 3 * 2 + 2);
    let p = m.layer_params(2).unwrap();
    assert_eq!((p.weight, p.bias), (15..21, 21..23));
    assert_eq!(m.state_count().unwrap(), 0);
    assert!(m.layer_state(1).unwrap().is_empty());
}
