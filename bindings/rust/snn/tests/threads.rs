//! `Model` is `Sync`: several threads run forward passes of one model at
//! once, each with its own cache, as the C contract allows.

use std::sync::Arc;
use std::thread;

use snn::{BackwardCache, Dataset, ForwardCache, Model, Optimiser};

fn inputs(t: usize) -> Vec<f32> {
    (0..8 * 5).map(|i| ((i * 13 + t * 7) % 23) as f32 / 23.0 - 0.5).collect()
}

fn outputs(model: &Model, x: &[f32], training: bool) -> Vec<u32> {
    let mut fwd = model.preallocate(8).unwrap();
    fwd.set_training(training).unwrap();
    fwd.set_inputs(x).unwrap();
    fwd.forward(model).unwrap();
    fwd.outputs().unwrap().iter().map(|y| y.to_bits()).collect()
}

#[test]
fn handles_are_send_and_only_the_model_is_sync() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Model>();
    sync::<Model>();
    send::<ForwardCache>();
    send::<BackwardCache>();
    send::<Optimiser>();
    send::<Dataset>();
}

#[test]
fn four_threads_share_one_model_and_match_a_single_thread() {
    let mut model = Model::new("input 5; dense 32 relu; dense 32 tanh; dense 3").unwrap();
    model.init(21).unwrap();
    let expected: Vec<Vec<u32>> = (0..4).map(|t| outputs(&model, &inputs(t), true)).collect();
    let model = &model;
    thread::scope(|s| {
        for (t, want) in expected.iter().enumerate() {
            s.spawn(move || {
                let x = inputs(t);
                let mut fwd = model.preallocate(8).unwrap();
                fwd.set_inputs(&x).unwrap();
                for _ in 0..200 {
                    fwd.forward(model).unwrap();
                    let got: Vec<u32> = fwd.outputs().unwrap().iter().map(|y| y.to_bits()).collect();
                    assert_eq!(&got, want, "thread {t}");
                }
            });
        }
    });
}

#[test]
fn training_passes_of_a_batchnorm_model_from_several_threads_count_every_batch() {
    let mut model = Model::new("input 5; dense 6; batchnorm; relu; dense 2").unwrap();
    model.init(4).unwrap();
    let model = Arc::new(model);
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let model = Arc::clone(&model);
            // a cache made here and moved into its thread
            let mut fwd = model.preallocate(8).unwrap();
            let mut eval = model.preallocate(8).unwrap();
            thread::spawn(move || {
                fwd.set_inputs(&inputs(t)).unwrap();
                eval.set_training(false).unwrap();
                eval.set_inputs(&inputs(t)).unwrap();
                for _ in 0..100 {
                    fwd.forward(&model).unwrap();
                    eval.forward(&model).unwrap();
                    assert!(eval.outputs().unwrap().iter().all(|y| y.is_finite()));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let state = model.state().unwrap();
    let bn = model.layer_state(2).unwrap();
    assert_eq!(state[bn.end - 1], 400.0, "num_batches_tracked after 4 x 100 training passes");
}

#[test]
fn inference_in_threads_while_the_owner_waits_then_trains() {
    let mut model = Model::new("input 5; dense 4 relu; dense 1").unwrap();
    let x = inputs(0);
    let before = outputs(&model, &x, false);
    let results: Vec<Vec<u32>> = thread::scope(|s| {
        let handles: Vec<_> = (0..3).map(|_| s.spawn(|| outputs(&model, &x, false))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results.iter().all(|r| *r == before));
    // the threads are done: the model can be changed again
    model.init(99).unwrap();
    assert_ne!(outputs(&model, &x, false), before);
}
