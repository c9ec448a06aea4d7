//! The switch the tests use to compare the fast paths with the general
//! ones: every fast path asks [`paths`] first, and takes the general path
//! when it says no. Outside the tests it always says yes (a constant).

/// Set by a test to run the general paths only. Both kinds of path give
/// the same results, so tests running meanwhile are not affected (a test
/// of a fast path's own answer calls it directly, not through the switch).
#[cfg(test)]
pub(crate) static GENERAL_ONLY: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// Whether the fast paths may run (always, outside the tests).
#[inline(always)]
pub(crate) fn paths() -> bool {
    #[cfg(test)]
    return !GENERAL_ONLY.load(core::sync::atomic::Ordering::Relaxed);
    #[cfg(not(test))]
    true
}

/// Runs `f` with the fast paths off (tests only). Serialized, so that two
/// comparisons do not turn the switch back on under each other.
#[cfg(test)]
pub(crate) fn general_only<T>(f: impl FnOnce() -> T) -> T {
    extern crate std;
    use core::sync::atomic::Ordering;
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    GENERAL_ONLY.store(true, Ordering::Relaxed);
    let out = f();
    GENERAL_ONLY.store(false, Ordering::Relaxed);
    out
}
