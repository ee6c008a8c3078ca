//! A small CNN: shapes, a forward pass, gradients checked against finite
//! differences, and a few SGD steps lowering the cross-entropy.

use snn::{Hyperparameter, Loss, Model, OptimiserKind};

const SPEC: &str = "input 8x8x1; conv 3x3 4 relu; maxpool 2; flatten; dense 3";

fn images(batch: usize) -> Vec<f32> {
    (0..batch * 64).map(|i| ((i * 37 % 101) as f32 / 101.0) - 0.5).collect()
}

#[test]
fn layer_shapes_follow_the_spec() {
    let m = Model::new(SPEC).unwrap();
    assert_eq!(m.layer_count().unwrap(), 5);
    assert_eq!(m.input_size().unwrap(), 64);
    assert_eq!(m.layer_shape(1).unwrap(), (4, 6, 6));
    assert_eq!(m.layer_shape(2).unwrap(), (4, 3, 3));
    assert_eq!(m.layer_shape(3).unwrap(), (36, 1, 1));
    assert_eq!(m.output_size().unwrap(), 3);
    assert_eq!(m.parameter_count().unwrap(), 4 * 9 + 4 + 36 * 3 + 3);
}

#[test]
fn gradients_match_finite_differences() {
    let mut model = Model::new(SPEC).unwrap();
    model.init(7).unwrap();
    let x = images(2);
    let labels = [0, 2];
    let loss_at = |model: &Model| {
        let mut fwd = model.preallocate(2).unwrap();
        let mut bwd = model.preallocate_grads(2).unwrap();
        fwd.set_inputs(&x).unwrap();
        bwd.set_labels(&labels).unwrap();
        fwd.forward().unwrap();
        (bwd.backprop(&mut fwd, Loss::LogitCrossEntropy).unwrap(), bwd.gradients().unwrap().to_vec())
    };
    let (_, grad) = loss_at(&model);
    let n = model.parameter_count().unwrap();
    assert_eq!(grad.len(), n);
    // a conv weight, a conv bias, a dense weight and a dense bias
    for &i in &[0usize, 37, 60, n - 1] {
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
fn sgd_lowers_the_cross_entropy() {
    let model = Model::new(SPEC).unwrap();
    model.init(3).unwrap();
    let mut fwd = model.preallocate(4).unwrap();
    let mut bwd = model.preallocate_grads(4).unwrap();
    let mut sgd = model.optimiser(OptimiserKind::Sgd).unwrap();
    sgd.set(Hyperparameter::LearningRate, 0.1).unwrap();
    fwd.set_inputs(&images(4)).unwrap();
    bwd.set_labels(&[0, 1, 2, 1]).unwrap();
    let mut losses = Vec::new();
    for _ in 0..20 {
        fwd.forward().unwrap();
        losses.push(bwd.backprop(&mut fwd, Loss::LogitCrossEntropy).unwrap());
        sgd.step(&model, &bwd).unwrap();
    }
    assert!(losses.windows(2).all(|w| w[1] < w[0]), "{losses:?}");
    assert!(losses[19] < losses[0] * 0.7, "{losses:?}");
    let mut out = vec![0f32; 12];
    fwd.get_outputs(&mut out).unwrap();
    assert_eq!(&out[..], fwd.outputs().unwrap());
}

#[test]
fn gather_and_batch_resize_reuse_the_cache() {
    let model = Model::new(SPEC).unwrap();
    let data = images(5);
    let mut fwd = model.preallocate(4).unwrap();
    assert_eq!(fwd.batch().unwrap(), (4, 4));
    fwd.set_inputs_gather(&data, &[4, 0]).unwrap();
    assert_eq!(fwd.batch().unwrap(), (2, 4));
    fwd.forward().unwrap();
    let gathered = fwd.outputs().unwrap().to_vec();
    fwd.set_batch(1).unwrap();
    fwd.set_inputs(&data[4 * 64..]).unwrap();
    fwd.forward().unwrap();
    assert_eq!(fwd.outputs().unwrap(), &gathered[..3]);
}
