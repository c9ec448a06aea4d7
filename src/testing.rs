//! Test hooks, in one place and named as such (hidden from the docs, not
//! API): the switch the tests use to compare the fast paths with the
//! general ones, and the work counter behind `tests/linear_time.rs`.
//! Outside the tests both compile to nothing: the switch is a constant
//! `true`, and the counter counts only with the `work-count` feature.
//! A leaf: it imports nothing of the crate.

/// Set by a test to run the general paths only. Both kinds of path give
/// the same results, so tests running meanwhile are not affected (a test
/// of a fast path's own answer calls it directly, not through the switch).
#[cfg(test)]
static GENERAL_ONLY: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Whether the fast paths may run (always, outside the tests): every fast
/// path asks first, and takes the general path when it says no.
#[inline(always)]
pub(crate) fn fast_paths() -> bool {
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

/// The corpus's streams (tests only): every `.sse` file of
/// `tests/corpus/{conformance,extra,real}`, in path order. The tests that
/// read it skip themselves under miri (no file system there).
#[cfg(test)]
pub(crate) fn corpus_streams() -> std::vec::Vec<std::vec::Vec<u8>> {
    extern crate std;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files = std::vec::Vec::new();
    for dir in ["conformance", "extra", "real"] {
        let entries = std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten();
        files.extend(
            entries
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "sse")),
        );
    }
    files.sort();
    let streams: std::vec::Vec<_> = files.iter().filter_map(|f| std::fs::read(f).ok()).collect();
    assert!(streams.len() > 100, "the corpus is there");
    streams
}

/// Bytes scanned or copied, summed (feature `work-count`).
#[cfg(feature = "work-count")]
static WORK: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Records `bytes` of scanning or copying (a no-op that compiles away
/// without the `work-count` feature).
#[inline(always)]
pub(crate) fn count_work(bytes: usize) {
    #[cfg(feature = "work-count")]
    WORK.fetch_add(bytes, core::sync::atomic::Ordering::Relaxed);
    let _ = bytes;
}

/// Returns the work counted since the last call, and resets the counter
/// (feature `work-count`).
#[cfg(feature = "work-count")]
pub fn take_work() -> usize {
    WORK.swap(0, core::sync::atomic::Ordering::Relaxed)
}
