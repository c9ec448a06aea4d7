//! The rewriters' buffers: allocated once, lent to a stream only while it
//! has a block in flight, taken back — the pattern for a host whose streams
//! outlive one call. Shared by the proxy-wasm filter, the Envoy dynamic
//! module and `http_proxy` (included as a module:
//! `#[path = "…/shared/pool.rs"] mod pool;`).
//!
//! A [`Rewriter`](agui_stream::rewrite::Rewriter) borrows its frame and
//! raw buffers (it never allocates), and a stream's rewriter lives across
//! the host's callbacks, so its buffers must outlive them: `&'static mut`,
//! from `Box::leak`. They are never freed, so they are never allocated
//! twice. Between blocks a rewriter's buffers hold nothing
//! ([`Rewriter::take_buffers`]), and an event stream that trickles tokens
//! is between blocks after nearly every chunk: a stream gets a pair before
//! a chunk ([`lend`]) and gives it back after it ([`reclaim`]) unless the
//! chunk ended inside a block. So a thread holds about as many pairs as it
//! had blocks in flight at once, not one per open stream.
//!
//! The bound: a thread allocates `size`-byte pairs (`2 × size` bytes each)
//! while they stay within `budget` bytes; past it, a stream that needs a
//! pair and finds none idle gets a pair of [`SMALL`] bytes — a block of any
//! size still passes (a value larger than the frame buffer is checked as
//! it spills past it, every verdict the same from 1 KiB on; a block larger
//! than the raw buffer goes out ahead of its verdict), only more slowly. Never refused, never waiting: a stream is never held up or
//! dropped for want of memory, and the small pairs, too, are as many as
//! the blocks in flight at once at most. The gauge
//! `agui_stream.buffer_pairs` counts the pairs allocated (summed over the
//! threads).
//!
//! The pool is per thread (a proxy-wasm VM runs on one worker thread; an
//! Envoy filter lives on the worker that took its stream). It also keeps
//! the tool tables of streams that deny tools ([`take_tables`]): a stream
//! that denies none has none.
//!
//! [`Rewriter::take_buffers`]: agui_stream::rewrite::Rewriter::take_buffers
// Each includer uses part of it (`rewrite_rounds` no tool tables).
#![allow(dead_code)]

use std::cell::RefCell;

use agui_stream::rewrite::{Rewriter, ToolTables};

/// A frame buffer and a raw buffer.
pub type Pair = (&'static mut [u8], &'static mut [u8]);

/// The size of the pairs lent past the budget: the least with which every
/// verdict is what a larger buffer gives (docs/capacities.md).
pub const SMALL: usize = 1024;

/// A thread's pairs.
struct Pool {
    /// Pairs no stream holds, by size.
    idle: Vec<(usize, Vec<Pair>)>,
    /// Bytes of the pairs larger than [`SMALL`] allocated.
    allocated: usize,
}

thread_local! {
    /// Tool tables no stream holds.
    static TABLES: RefCell<Vec<&'static mut ToolTables>> = const { RefCell::new(Vec::new()) };
    static POOL: RefCell<Pool> = const {
        RefCell::new(Pool {
            idle: Vec::new(),
            allocated: 0,
        })
    };
}

/// A pair of `size`-byte buffers: an idle one, or a new one if this
/// thread's pairs stay within `budget` bytes; else an idle or new pair of
/// [`SMALL`] bytes. `allocated` is called with the size of a new pair.
pub fn take(size: usize, budget: usize, allocated: impl FnOnce(usize)) -> Pair {
    POOL.with_borrow_mut(|pool| {
        if let Some(pair) = pool.idle_pair(size) {
            return pair;
        }
        let bytes = size.saturating_mul(2);
        let size = if size <= SMALL || pool.allocated.saturating_add(bytes) <= budget {
            if size > SMALL {
                pool.allocated = pool.allocated.saturating_add(bytes);
            }
            size
        } else if let Some(pair) = pool.idle_pair(SMALL) {
            return pair;
        } else {
            SMALL
        };
        allocated(size);
        let frames = Box::leak(vec![0u8; size].into_boxed_slice());
        let raw = Box::leak(vec![0u8; size].into_boxed_slice());
        (frames, raw)
    })
}

/// Gives `rewriter` a pair for its next push, unless it holds part of a
/// block (then it has its pair). With [`reclaim`] after each push, a
/// rewriter has a pair only while it holds a block: it can start with
/// none (`Rewriter::new(&mut [], &mut [], …)`).
pub fn lend(
    rewriter: &mut Rewriter<'static>,
    size: usize,
    budget: usize,
    allocated: impl FnOnce(usize),
) {
    if rewriter.holds_block() {
        return;
    }
    let (frames, raw) = take(size, budget, allocated);
    match rewriter.put_buffers(frames, raw) {
        Ok(old) | Err(old) => give_back(old),
    }
}

/// Takes `rewriter`'s pair back if it holds no block.
pub fn reclaim(rewriter: &mut Rewriter<'static>) {
    if let Some(pair) = rewriter.take_buffers() {
        give_back(pair);
    }
}

/// Gives a pair back for the next stream (an empty one is let go).
pub fn give_back(pair: Pair) {
    let size = pair.0.len();
    if size == 0 {
        return;
    }
    POOL.with_borrow_mut(
        |pool| match pool.idle.iter_mut().find(|(s, _)| *s == size) {
            Some((_, pairs)) => pairs.push(pair),
            None => pool.idle.push((size, vec![pair])),
        },
    );
}

impl Pool {
    fn idle_pair(&mut self, size: usize) -> Option<Pair> {
        let (_, pairs) = self.idle.iter_mut().find(|(s, _)| *s == size)?;
        pairs.pop()
    }
}

/// Tool tables for a stream whose rewriter denies tools
/// (`Rewriter::deny_tools`): idle ones, or new ones. Like the pairs, never
/// freed: a thread holds as many as it had such streams open at once.
pub fn take_tables() -> &'static mut ToolTables {
    TABLES
        .with_borrow_mut(Vec::pop)
        .unwrap_or_else(|| Box::leak(Box::new(ToolTables::new())))
}

/// Gives tool tables back for the next stream.
pub fn give_back_tables(tables: &'static mut ToolTables) {
    TABLES.with_borrow_mut(|idle| idle.push(tables));
}

/// Gives back what a finished rewriter held: its pair and its tool tables.
pub fn give_back_parts(rewriter: Rewriter<'static>) {
    let (frames, raw, tables) = rewriter.into_parts();
    give_back((frames, raw));
    if let Some(tables) = tables {
        give_back_tables(tables);
    }
}
