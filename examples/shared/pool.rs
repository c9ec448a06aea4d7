//! The rewriters' buffers: allocated once per stream slot, lent, taken
//! back — the pattern for a host whose streams outlive one call. Shared by
//! the proxy-wasm filter and the Envoy dynamic module (included as a
//! module: `#[path = "…/shared/pool.rs"] mod pool;`).
//!
//! A [`Rewriter`](agui_stream::rewrite::Rewriter) borrows its frame and
//! raw buffers (it never allocates), and a stream's rewriter lives across
//! the host's callbacks, so its buffers must outlive them: `&'static mut`,
//! from `Box::leak`. They are never freed, so they are never allocated
//! twice: a stream takes a pair from the pool when its headers say it will
//! be rewritten and gives it back ([`Rewriter::into_buffers`]) when it ends
//! or its filter is destroyed; a pair is allocated only when no idle pair
//! of the configured size is left.
//!
//! The pool is per thread (a proxy-wasm VM runs on one worker thread; an
//! Envoy filter lives on the worker that took its stream). The bound: a
//! thread holds at most as many pairs as it ever rewrote streams at once
//! (`2 × buffer` bytes each), per `buffer` size it was configured with —
//! not one per request. The gauge `agui_stream.buffer_pairs` counts the
//! pairs allocated (summed over the threads).
//!
//! [`Rewriter::into_buffers`]: agui_stream::rewrite::Rewriter::into_buffers

use std::cell::RefCell;

/// A frame buffer and a raw buffer.
pub type Pair = (&'static mut [u8], &'static mut [u8]);

thread_local! {
    /// Pairs no stream of this thread holds.
    static IDLE: RefCell<Vec<Pair>> = const { RefCell::new(Vec::new()) };
}

/// A pair of `size`-byte buffers: an idle one, or a new one (then
/// `allocated` is called).
pub fn take(size: usize, allocated: impl FnOnce()) -> Pair {
    let idle = IDLE.with_borrow_mut(|idle| {
        let i = idle
            .iter()
            .position(|(a, b)| a.len() == size && b.len() == size)?;
        Some(idle.swap_remove(i))
    });
    idle.unwrap_or_else(|| {
        allocated();
        let frames = Box::leak(vec![0u8; size].into_boxed_slice());
        let raw = Box::leak(vec![0u8; size].into_boxed_slice());
        (frames, raw)
    })
}

/// Gives a pair back for the next stream.
pub fn give_back(pair: Pair) {
    IDLE.with_borrow_mut(|idle| idle.push(pair));
}
