//! Work counting for the linear-time test (feature `work-count`): the
//! bytes the scanners examine or copy, summed in a global counter. Without
//! the feature every call is a no-op and compiles away.

#[cfg(feature = "work-count")]
static WORK: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Records `bytes` of scanning or copying.
#[inline(always)]
pub(crate) fn add(bytes: usize) {
    #[cfg(feature = "work-count")]
    WORK.fetch_add(bytes, core::sync::atomic::Ordering::Relaxed);
    let _ = bytes;
}

/// Returns the work counted since the last call, and resets the counter.
#[cfg(feature = "work-count")]
pub fn take() -> usize {
    WORK.swap(0, core::sync::atomic::Ordering::Relaxed)
}
