//! `set_inputs` sets the batch from the slice: an epoch whose last batch is
//! smaller needs no `set_batch`, and a partial sample is refused.

use snn::{ErrorKind, Loss, Model};

const SPEC: &str = "input 4; dense 6 tanh; dense 3";

/// 10 samples of 4 features and their labels.
fn data() -> (Vec<f32>, Vec<i32>) {
    let x = (0..40).map(|i| ((i * 17 % 23) as f32 / 23.0) - 0.5).collect();
    (x, (0..10).map(|i| i % 3).collect())
}

#[test]
fn the_partial_last_batch_of_an_epoch_runs_without_set_batch() {
    let mut model = Model::new(SPEC).unwrap();
    model.init(4).unwrap();
    let (x, labels) = data();
    let mut fwd = model.preallocate(4).unwrap();
    let mut bwd = model.preallocate_grads(4).unwrap();
    let mut gather_fwd = model.preallocate(4).unwrap();
    let mut gather_bwd = model.preallocate_grads(4).unwrap();
    let mut sizes = Vec::new();
    for (b, (inputs, batch_labels)) in x.chunks(4 * 4).zip(labels.chunks(4)).enumerate() {
        fwd.set_inputs(inputs).unwrap();
        sizes.push(fwd.batch().unwrap());
        bwd.set_labels(batch_labels).unwrap();
        fwd.forward(&model).unwrap();
        let loss = bwd.backprop(&mut fwd, &model, Loss::LogitCrossEntropy).unwrap();
        // the same samples gathered by index give the same bits
        let indices: Vec<i64> = (4 * b as i64..).take(batch_labels.len()).collect();
        gather_fwd.set_inputs_gather(&x, &indices).unwrap();
        gather_bwd.set_labels_gather(&labels, &indices).unwrap();
        gather_fwd.forward(&model).unwrap();
        let gather_loss = gather_bwd.backprop(&mut gather_fwd, &model, Loss::LogitCrossEntropy).unwrap();
        assert_eq!(loss.to_bits(), gather_loss.to_bits(), "batch {b}");
        assert_eq!(fwd.outputs().unwrap(), gather_fwd.outputs().unwrap(), "batch {b}");
        assert_eq!(bwd.gradients().unwrap(), gather_bwd.gradients().unwrap(), "batch {b}");
    }
    assert_eq!(sizes, [(4, 4), (4, 4), (2, 4)]);
    assert_eq!(fwd.outputs().unwrap().len(), 2 * 3);
    // and back to a full batch
    fwd.set_inputs(&x[..16]).unwrap();
    assert_eq!(fwd.batch().unwrap(), (4, 4));
}

#[test]
fn a_smaller_batch_gives_the_rows_of_the_full_one() {
    let model = Model::new(SPEC).unwrap();
    let (x, _) = data();
    let mut fwd = model.preallocate(8).unwrap();
    fwd.set_training(false).unwrap();
    fwd.set_inputs(&x[..32]).unwrap();
    fwd.forward(&model).unwrap();
    let full = fwd.outputs().unwrap().to_vec();
    fwd.set_inputs(&x[..12]).unwrap();
    fwd.forward(&model).unwrap();
    assert_eq!(fwd.outputs().unwrap(), &full[..9]);
}

#[test]
fn a_partial_sample_is_refused_and_changes_nothing() {
    let model = Model::new(SPEC).unwrap();
    let mut fwd = model.preallocate(4).unwrap();
    fwd.set_inputs(&[0.5; 8]).unwrap();
    let e = fwd.set_inputs(&[0.5; 13]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Count);
    assert_eq!(
        e.message(),
        "ForwardCache::set_inputs: inputs: 13 floats are not a whole number of samples of 4 features"
    );
    let e = fwd.set_inputs(&[0.5; 20]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Batch);
    assert_eq!(e.message(), "ForwardCache::set_inputs: inputs hold 5 samples; the cache takes 1 to 4");
    let e = fwd.set_inputs(&[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Batch);
    assert!(e.message().contains("0 samples"), "{e}");
    assert_eq!(fwd.batch().unwrap(), (2, 4));
    fwd.forward(&model).unwrap();
    assert_eq!(fwd.outputs().unwrap().len(), 2 * 3);
}
