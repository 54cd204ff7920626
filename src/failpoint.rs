//! Failpoints for the crash and race tests (feature `failpoints`; tests only):
//! with `ZARROW_KILL_AT=NAME:N` in the environment, the process ends by SIGKILL
//! (`kill -9`: no destructor, no flush, no signal handler runs) the N-th time it
//! reaches the point NAME; with `ZARROW_PAUSE_AT=NAME:MS`, it waits MS
//! milliseconds at each pass. Without the feature, a point compiles to nothing.
//!
//! Points: `store-write`, in [`LocalStore`](crate::LocalStore)'s `set`, after
//! a value's temporary file is written and before it is renamed over its key;
//! `icechunk-chunk`, before a chunk is stored in an Icechunk session;
//! `icechunk-commit`, before each of a write's commit attempts (its pause: before
//! the first only).

/// The point and number an environment variable names (`NAME:N`), read once
/// into `cell`.
#[cfg(feature = "failpoints")]
fn spec<'a>(
    cell: &'a std::sync::OnceLock<Option<(String, u64)>>,
    var: &str,
) -> Option<&'a (String, u64)> {
    cell.get_or_init(|| {
        let spec = std::env::var(var).ok()?;
        let (point, n) = spec.rsplit_once(':')?;
        Some((point.to_string(), n.parse().ok()?))
    })
    .as_ref()
}

#[cfg(all(feature = "failpoints", unix))]
pub(crate) fn hit(name: &str) {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    static AT: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static HITS: AtomicU64 = AtomicU64::new(0);
    if let Some((point, n)) = spec(&AT, "ZARROW_KILL_AT")
        && point == name
        && HITS.fetch_add(1, Ordering::SeqCst) + 1 == *n
    {
        // SAFETY: kill(2) with this process's id and a valid signal number
        // touches no memory of ours.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

#[cfg(not(all(feature = "failpoints", unix)))]
#[inline(always)]
pub(crate) fn hit(_name: &str) {}

/// With `ZARROW_PAUSE_AT=NAME:MS` in the environment, wait MS milliseconds
/// each time the process reaches the point NAME (the race tests widen a
/// window with it). Without the feature, nothing.
#[cfg(feature = "failpoints")]
#[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
pub(crate) fn pause(name: &str) {
    static AT: std::sync::OnceLock<Option<(String, u64)>> = std::sync::OnceLock::new();
    if let Some((point, ms)) = spec(&AT, "ZARROW_PAUSE_AT")
        && point == name
    {
        std::thread::sleep(std::time::Duration::from_millis(*ms));
    }
}

#[cfg(not(feature = "failpoints"))]
#[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
#[inline(always)]
pub(crate) fn pause(_name: &str) {}
