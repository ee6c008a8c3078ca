//! The log callback takes closures; a panic inside it is caught, never
//! unwinding into the library or aborting, and is carried by the failing
//! call's error. One test, since the callback is process-wide.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use snn::{ErrorKind, LogLevel, Model};

fn fail() -> snn::Error {
    Model::new("input 2; dense oops").unwrap_err()
}

#[test]
fn closures_receive_messages_and_panics_become_errors() {
    // a closure with state receives every failed call's message
    let seen: Arc<Mutex<Vec<(LogLevel, String)>>> = Arc::default();
    let sink = Arc::clone(&seen);
    snn::set_log_callback(move |level, message| sink.lock().unwrap().push((level, message.to_owned()))).unwrap();
    let e = fail();
    assert_eq!(seen.lock().unwrap().as_slice(), [(LogLevel::Error, e.message().to_owned())]);
    assert_eq!(e.log_callback_panic(), None);

    // a panicking callback: the call still fails with its own error, which
    // also carries the panic; the process goes on and the callback stays
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    snn::set_log_callback(move |_, message| {
        counter.fetch_add(1, Ordering::SeqCst);
        panic!("callback refused: {message}");
    })
    .unwrap();
    let e = fail();
    assert_eq!(e.kind(), ErrorKind::Spec);
    assert!(e.message().contains("snn_model_create"), "{e}");
    let panic = e.log_callback_panic().expect("the panic is reported");
    assert!(panic.starts_with("callback refused: snn_model_create"), "{panic}");
    assert!(e.to_string().contains("the log callback panicked"), "{e}");
    // a successful call returns Ok; the next failure reports its own panic
    let model = Model::new("input 2; dense 1").unwrap();
    assert_eq!(model.preallocate(0).unwrap_err().log_callback_panic().map(|p| p.contains("snn_preallocate")), Some(true));

    // several threads failing at once, each gets its own report
    let reports: Vec<bool> = thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| (0..25).all(|_| fail().log_callback_panic().is_some())))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(reports, [true; 4]);
    assert_eq!(calls.load(Ordering::SeqCst), 2 + 100);

    // a callback may remove itself while it runs
    let once: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&once);
    snn::set_log_callback(move |_, message| {
        sink.lock().unwrap().push(message.to_owned());
        snn::clear_log_callback().unwrap();
    })
    .unwrap();
    fail();
    fail();
    assert_eq!(once.lock().unwrap().len(), 1);

    // cleared: nothing is received and nothing is reported
    snn::clear_log_callback().unwrap();
    let before = seen.lock().unwrap().len();
    assert_eq!(fail().log_callback_panic(), None);
    assert_eq!(seen.lock().unwrap().len(), before);
}
