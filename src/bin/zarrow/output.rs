//! The partial outputs of a conversion removed on SIGINT, SIGTERM and SIGHUP (see
//! `zarrow::convert::output`).

/// Remove every partial output, then exit as a process killed by `signal` would
/// report (128 + the signal number), on SIGINT, SIGTERM and SIGHUP.
#[cfg(unix)]
pub(crate) fn remove_partials_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            zarrow::convert::output::remove_partials_and_exit(128 + signal);
        }
    });
}

#[cfg(not(unix))]
pub(crate) fn remove_partials_on_signals() {}
