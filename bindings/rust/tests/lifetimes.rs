//! Handles dropped in every order the borrows allow: a model, its forward and
//! backward caches and its optimiser. After each drop, every handle still
//! alive keeps answering with the values it held. Orders that drop the model
//! before one of its caches do not compile (see the crate documentation); the
//! optimiser borrows nothing and may be dropped before or after the model.

use snn::{Dataset, Device, Hyperparameter, Loss, Model, OptimiserKind};

const SPEC: &str = "input 6x6x1; conv 3x3 2 relu; maxpool 2; flatten; dense 3";

/// What the handles hold after one training step, read before any drop.
struct Expected {
    outputs: Vec<f32>,
    gradients: Vec<f32>,
    parameters: Vec<f32>,
}

/// A handle that can say whether it still holds what it held.
trait Survivor {
    fn still_works(&self, expected: &Expected);
}

impl Survivor for Model {
    fn still_works(&self, expected: &Expected) {
        let mut parameters = vec![0f32; expected.parameters.len()];
        self.get_parameters(&mut parameters).unwrap();
        assert_eq!(parameters, expected.parameters);
        assert_eq!(self.describe().unwrap(), Model::new(SPEC).unwrap().describe().unwrap());
    }
}

impl Survivor for snn::ForwardCache<'_> {
    fn still_works(&self, expected: &Expected) {
        assert_eq!(self.batch().unwrap(), (2, 2));
        assert_eq!(self.outputs().unwrap(), &expected.outputs[..]);
    }
}

impl Survivor for snn::BackwardCache<'_> {
    fn still_works(&self, expected: &Expected) {
        assert_eq!(self.gradients().unwrap(), &expected.gradients[..]);
    }
}

impl Survivor for snn::Optimiser {
    fn still_works(&self, _: &Expected) {
        assert_eq!(self.step_count().unwrap(), 1);
        assert_eq!(self.get(Hyperparameter::LearningRate).unwrap(), 0.05);
    }
}

/// Drops the handles one by one, in the order given, checking the survivors
/// after each drop.
macro_rules! drop_in_order {
    ($expected:ident; $first:ident $(, $rest:ident)*) => {
        drop($first);
        $( $rest.still_works(&$expected); )*
        drop_in_order!($expected; $($rest),*);
    };
    ($expected:ident;) => {};
}

fn model() -> Model {
    let model = Model::new(SPEC).unwrap();
    model.init(5).unwrap();
    model
}

/// The caches and an Adam optimiser of `model` after one step, and what they hold.
fn trained(model: &Model) -> (snn::ForwardCache<'_>, snn::BackwardCache<'_>, snn::Optimiser, Expected) {
    let mut fwd = model.preallocate(2).unwrap();
    let mut bwd = model.preallocate_grads(2).unwrap();
    let mut opt = model.optimiser(OptimiserKind::Adam).unwrap();
    opt.set(Hyperparameter::LearningRate, 0.05).unwrap();
    let x: Vec<f32> = (0..72).map(|i| ((i * 7 % 13) as f32 - 6.0) / 6.0).collect();
    fwd.set_inputs(&x).unwrap();
    bwd.set_labels(&[0, 2]).unwrap();
    fwd.forward().unwrap();
    assert!(bwd.backprop(&mut fwd, Loss::LogitCrossEntropy).unwrap() > 0.0);
    opt.step(model, &bwd).unwrap();
    let mut parameters = vec![0f32; model.parameter_count().unwrap()];
    model.get_parameters(&mut parameters).unwrap();
    let expected = Expected {
        outputs: fwd.outputs().unwrap().to_vec(),
        gradients: bwd.gradients().unwrap().to_vec(),
        parameters,
    };
    assert_eq!(expected.outputs.len(), 6);
    assert!(expected.gradients.iter().any(|&g| g != 0.0));
    (fwd, bwd, opt, expected)
}

#[test]
fn drop_forward_backward_optimiser_model() {
    let model = model();
    let (fwd, bwd, opt, expected) = trained(&model);
    drop_in_order!(expected; fwd, bwd, opt, model);
}

#[test]
fn drop_backward_forward_optimiser_model() {
    let model = model();
    let (fwd, bwd, opt, expected) = trained(&model);
    drop_in_order!(expected; bwd, fwd, opt, model);
}

#[test]
fn drop_optimiser_forward_backward_model() {
    let model = model();
    let (fwd, bwd, opt, expected) = trained(&model);
    drop_in_order!(expected; opt, fwd, bwd, model);
}

#[test]
fn drop_optimiser_backward_forward_model() {
    let model = model();
    let (fwd, bwd, opt, expected) = trained(&model);
    drop_in_order!(expected; opt, bwd, fwd, model);
}

#[test]
fn drop_forward_optimiser_backward_model() {
    let model = model();
    let (fwd, bwd, opt, expected) = trained(&model);
    drop_in_order!(expected; fwd, opt, bwd, model);
}

#[test]
fn drop_backward_optimiser_forward_model() {
    let model = model();
    let (fwd, bwd, opt, expected) = trained(&model);
    drop_in_order!(expected; bwd, opt, fwd, model);
}

#[test]
fn drop_forward_backward_model_then_optimiser() {
    let model = model();
    let (fwd, bwd, opt, expected) = trained(&model);
    drop_in_order!(expected; fwd, bwd, model, opt);
}

#[test]
fn drop_backward_forward_model_then_optimiser() {
    let model = model();
    let (fwd, bwd, opt, expected) = trained(&model);
    drop_in_order!(expected; bwd, fwd, model, opt);
}

#[test]
fn an_optimiser_outlives_its_model_and_still_takes_settings() {
    let model = model();
    let mut opt = model.optimiser(OptimiserKind::RmsProp).unwrap();
    drop(model);
    opt.set(Hyperparameter::Alpha, 0.9).unwrap();
    assert_eq!(opt.get(Hyperparameter::Alpha).unwrap(), 0.9);
    opt.reset().unwrap();
    assert_eq!(opt.step_count().unwrap(), 0);
}

#[test]
fn a_cache_keeps_what_it_gathered_from_a_dropped_dataset() {
    let model = Model::new("input 2; dense 1 nobias").unwrap();
    model.set_parameters(&[1.0, 10.0]).unwrap();
    let data = Dataset::new(Device::Cpu, &[1.0, 2.0, 3.0, 4.0], 2, Some(&[0, 0])).unwrap();
    let mut fwd = model.preallocate(2).unwrap();
    fwd.set_inputs_from_dataset(&data, &[1, 0]).unwrap();
    drop(data);
    fwd.forward().unwrap();
    assert_eq!(fwd.outputs().unwrap(), &[43.0, 21.0]);
}

#[test]
fn models_and_caches_made_and_dropped_on_many_threads() {
    let workers: Vec<_> = (0..4)
        .map(|seed| {
            std::thread::spawn(move || {
                for _ in 0..25 {
                    let model = model();
                    model.init(seed).unwrap();
                    let (fwd, bwd, opt, expected) = trained(&model);
                    drop_in_order!(expected; opt, bwd, fwd, model);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}
