//! Test hooks, in one place and named as such (hidden from the docs, not
//! API): the switch the tests use to compare the fast paths with the
//! general ones, and the work counter behind `tests/linear_time.rs`.
//! The switch is per thread (a test's comparison does not change what
//! the tests running beside it take); outside the tests it is a constant
//! `true` and compiles away, and the counter counts only with the
//! `work-count` feature.
//! A leaf: it imports nothing of the crate.

#[cfg(test)]
extern crate std;

#[cfg(test)]
std::thread_local! {
    /// Set while this thread runs the general paths only (see
    /// [`general_only`]). Per thread, so a comparison's general run turns
    /// off the fast paths of its own thread alone: the tests running
    /// meanwhile on other threads, a comparison's fast run among them,
    /// take their fast paths as usual.
    static GENERAL_ONLY: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Whether the fast paths may run: every fast path asks first, and takes
/// the general path when it says no. Outside the tests a constant `true`;
/// in them, true unless this thread is inside [`general_only`].
#[inline(always)]
pub(crate) fn fast_paths() -> bool {
    #[cfg(test)]
    return !GENERAL_ONLY.with(core::cell::Cell::get);
    #[cfg(not(test))]
    true
}

/// Runs `f` with the fast paths off on this thread (tests only), then
/// puts the switch back as it was (also if `f` panics). Only what `f`
/// runs on this thread takes the general paths: work it hands to another
/// thread would take the fast ones.
#[cfg(test)]
pub(crate) fn general_only<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            GENERAL_ONLY.with(|g| g.set(self.0));
        }
    }
    let _restore = Restore(GENERAL_ONLY.with(|g| g.replace(true)));
    f()
}

/// The corpus's streams (tests only): every `.sse` file of
/// `tests/corpus/{conformance,extra,real}`, in path order. The tests that
/// read it skip themselves under miri (no file system there).
#[cfg(test)]
pub(crate) fn corpus_streams() -> std::vec::Vec<std::vec::Vec<u8>> {
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
