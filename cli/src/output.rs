//! The partial outputs of a conversion removed on SIGINT, SIGTERM and SIGHUP (see
//! `zarrow::__private::remove_partials`, the library's atomic outputs).

/// Remove every partial output, then exit as a process killed by `signal` would
/// report (128 + the signal number), on SIGINT, SIGTERM and SIGHUP.
#[cfg(unix)]
pub(crate) fn remove_partials_on_signals() {
    use std::io::Write as _;

    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    // signal-hook's iterator blocks until a signal comes: it waits on a thread
    // of the command line's own (the library starts none).
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            // Held until the process is gone: no commit races the removal.
            let _held = zarrow::__private::remove_partials();
            let _ = writeln!(
                std::io::stderr(),
                "zarrow: interrupted; removed the partial output"
            );
            std::process::exit(128 + signal);
        }
    });
}

#[cfg(not(unix))]
pub(crate) fn remove_partials_on_signals() {}
