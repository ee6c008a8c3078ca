//! The process-wide log callback, in a test binary of its own (cargo runs
//! each file of tests/ as its own process): failures reach it, and a callback
//! that panics neither aborts the process nor blocks the calls that follow.

use std::sync::mpsc;
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use snn::{ErrorKind, LogLevel, Model};

static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn record(level: LogLevel, message: &str) {
    if level == LogLevel::Error {
        SEEN.lock().unwrap().push(message.to_owned());
    }
}

fn panic_on_every_message(_: LogLevel, message: &str) {
    panic!("the receiver refused: {message}");
}

/// Runs `f` on another thread and fails the test if it has not finished
/// within 30 s (a deadlock), instead of hanging.
fn within_30_s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(Duration::from_secs(30)).expect("the calls did not finish: deadlock")
}

fn failing_call() -> snn::Error {
    snn::set_num_threads(0).unwrap_err()
}

#[test]
fn a_panicking_callback_is_contained_and_logging_goes_on() {
    // Failures reach an installed callback.
    snn::set_log_callback(Some(record)).unwrap();
    assert_eq!(Model::new("input 4; dense banana").unwrap_err().kind(), ErrorKind::Spec);
    let seen = SEEN.lock().unwrap().clone();
    assert!(seen.iter().any(|m| m.contains("snn_model_create")), "{seen:?}");

    // A panic in the callback stops in the binding: the failing call returns
    // its own error and the panic's message is kept.
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    snn::set_log_callback(Some(panic_on_every_message)).unwrap();
    assert_eq!(failing_call().kind(), ErrorKind::InvalidArgument);
    let panic = snn::take_log_callback_panic().expect("the panic was kept");
    assert!(panic.starts_with("the receiver refused: snn_set_num_threads"), "{panic}");
    assert_eq!(snn::take_log_callback_panic(), None);

    // Many more failing calls, on this thread and on others, while the
    // callback keeps panicking: none blocks, each returns its error.
    let kinds = within_30_s(|| {
        let others: Vec<_> = (0..4)
            .map(|_| thread::spawn(|| (0..50).map(|_| failing_call().kind()).collect::<Vec<_>>()))
            .collect();
        let mut kinds: Vec<ErrorKind> = (0..50).map(|_| failing_call().kind()).collect();
        for t in others {
            kinds.extend(t.join().unwrap());
        }
        kinds
    });
    std::panic::set_hook(quiet);
    assert_eq!(kinds.len(), 250);
    assert!(kinds.iter().all(|&k| k == ErrorKind::InvalidArgument));
    assert!(snn::take_log_callback_panic().unwrap().contains("snn_set_num_threads"));

    // A well-behaved callback installed afterwards receives the next failures.
    SEEN.lock().unwrap().clear();
    snn::set_log_callback(Some(record)).unwrap();
    let message = within_30_s(|| failing_call().message().to_owned());
    assert_eq!(SEEN.lock().unwrap().as_slice(), &[message]);

    snn::set_log_callback(None).unwrap();
    failing_call();
    assert_eq!(SEEN.lock().unwrap().len(), 1);
    assert_eq!(snn::take_log_callback_panic(), None);
}
