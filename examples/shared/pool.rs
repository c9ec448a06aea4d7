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
//! Held blocks: with `Options::hold` a block that outgrows the raw buffer
//! is held until its verdict, not streamed ahead, so that a client never
//! gets part of an event (a run cut inside one ends in the repair's
//! `RUN_ERROR` alone). Where a push stops at one, [`make_room`] gives the
//! rewriter a raw buffer twice the size, up to the per-event limit
//! (`hold_bytes`); past the limit, or where the budget is spent, the block
//! goes ahead of its verdict as without `hold`.
//!
//! The bound: a thread allocates buffers larger than [`SMALL`] — pairs
//! of `size` bytes, the raw buffers of held blocks — while they stay
//! within `budget` bytes; past it, a stream that needs a pair and finds
//! none idle gets a pair of [`SMALL`] bytes — a block of any size still
//! passes (a value larger than the frame buffer is checked as it spills
//! past it, every verdict the same from 1 KiB on; a block larger than the
//! raw buffer goes out ahead of its verdict), only more slowly — and a
//! held block that needs a larger raw buffer goes ahead. Never refused,
//! never waiting: a stream is never held up or dropped for want of
//! memory, and the small pairs, too, are as many as the blocks in flight
//! at once at most. The gauge `agui_stream.buffer_pairs` counts the pairs
//! allocated (summed over the threads).
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

use agui_stream::guard::Rules;
use agui_stream::rewrite::{GuardLanes, Rewriter, ToolTables};

/// A frame buffer and a raw buffer.
pub type Pair = (&'static mut [u8], &'static mut [u8]);

/// The size of the pairs lent past the budget: the least with which every
/// verdict is what a larger buffer gives (docs/capacities.md).
pub const SMALL: usize = 1024;

/// A thread's buffers.
struct Pool {
    /// Buffers no stream holds, by size.
    idle: Vec<(usize, Vec<&'static mut [u8]>)>,
    /// Bytes of the buffers larger than [`SMALL`] allocated.
    allocated: usize,
}

thread_local! {
    /// Guard lanes no stream holds.
    static LANES: RefCell<Vec<&'static mut GuardLanes<'static>>> = const { RefCell::new(Vec::new()) };
    /// Tool tables no stream holds.
    static TABLES: RefCell<Vec<&'static mut ToolTables>> = const { RefCell::new(Vec::new()) };
    static POOL: RefCell<Pool> = const {
        RefCell::new(Pool {
            idle: Vec::new(),
            allocated: 0,
        })
    };
}

/// Guard rules compiled over a copy of `config` that lives as long as the
/// program (each call leaks one copy, a few KB), as `list` reads them from
/// it; `None` without rules, or rules that do not compile (a front end's
/// configuration checked them when it was read).
pub fn leak_rules<C: Clone + 'static, const N: usize>(
    config: &C,
    list: impl FnOnce(&'static C) -> Option<heapless::Vec<agui_stream::guard::Rule<'static>, N>>,
) -> Option<&'static Rules<'static>> {
    let config: &'static C = Box::leak(Box::new(config.clone()));
    let list = list(config).filter(|l| !l.is_empty())?;
    Some(Box::leak(Box::new(Rules::new(&list).ok()?)))
}

/// Guard lanes for `rules`, none open: idle ones, or new ones (about
/// 4 KB). Only a stream with guard rules takes them.
pub fn take_lanes(rules: &'static Rules<'static>) -> &'static mut GuardLanes<'static> {
    match LANES.with_borrow_mut(Vec::pop) {
        Some(lanes) => {
            *lanes = GuardLanes::new(rules);
            lanes
        }
        None => Box::leak(Box::new(GuardLanes::new(rules))),
    }
}

/// A pair of `size`-byte buffers: idle ones, or new ones if this thread's
/// buffers stay within `budget` bytes; else an idle or new pair of
/// [`SMALL`] bytes. `allocated` is called with the size of a new pair.
pub fn take(size: usize, budget: usize, allocated: impl FnOnce(usize)) -> Pair {
    POOL.with_borrow_mut(|pool| {
        let size = if pool.can_take(size, 2, budget) {
            size
        } else {
            SMALL
        };
        let (frames, new_frames) = pool.get(size);
        let (raw, new_raw) = pool.get(size);
        if new_frames || new_raw {
            allocated(size);
        }
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

/// Where a push stopped at a block that outgrew `rewriter`'s raw buffer
/// (`Pushed::held`, with `Options::hold`): gives it a raw buffer twice the
/// size (at most `limit` bytes; an idle one, or a new one within
/// `budget`), so that the block goes out whole once its verdict is known.
/// Where none can be had — the block is over `limit` or the budget is
/// spent — lets the block go ahead of its verdict, as without `hold`
/// (`Rewriter::let_ahead`).
fn make_room(rewriter: &mut Rewriter<'static>, limit: usize, budget: usize) {
    let held = rewriter.raw_capacity();
    let size = held.max(SMALL / 2).saturating_mul(2).min(limit);
    let larger = POOL.with_borrow_mut(|pool| {
        (size > held && pool.can_take(size, 1, budget)).then(|| pool.get(size).0)
    });
    // (A larger buffer always takes what the smaller one holds.)
    match larger.map(|buffer| rewriter.grow_raw(buffer)) {
        Some(Ok(old)) => give_back_one(old),
        Some(Err(unused)) => {
            give_back_one(unused);
            rewriter.let_ahead();
        }
        None => rewriter.let_ahead(),
    }
}

/// Pushes all of `input` through `rewriter` into `out`, an output that
/// always has room (a `Vec`), making room for a held block
/// ([`make_room`]) up to `limit` bytes: a push reads everything but may
/// stop at the end of the stream (then the rest is not read). Returns
/// whether the stream ended (stopped by the policy).
pub fn push_all<W: agui_stream::Write + ?Sized>(
    rewriter: &mut Rewriter<'static>,
    input: &[u8],
    out: &mut W,
    limit: usize,
    budget: usize,
) -> Result<bool, agui_stream::rewrite::RewriteError> {
    let mut rest = input;
    while !rest.is_empty() {
        let pushed = rewriter.push(rest, out)?;
        if pushed.ended {
            return Ok(true);
        }
        if pushed.held {
            make_room(rewriter, limit, budget);
        } else if pushed.read == 0 {
            break;
        }
        rest = rest.get(pushed.read..).unwrap_or_default();
    }
    Ok(false)
}

/// Takes `rewriter`'s pair back if it holds no block.
pub fn reclaim(rewriter: &mut Rewriter<'static>) {
    if let Some(pair) = rewriter.take_buffers() {
        give_back(pair);
    }
}

/// Gives a pair back for the next stream (empty buffers are let go).
pub fn give_back((frames, raw): Pair) {
    give_back_one(frames);
    give_back_one(raw);
}

/// Gives a buffer back (an empty one is let go).
fn give_back_one(buffer: &'static mut [u8]) {
    if !buffer.is_empty() {
        POOL.with_borrow_mut(|pool| pool.put(buffer));
    }
}

/// A new `size`-byte buffer, never freed.
fn new(size: usize) -> &'static mut [u8] {
    Box::leak(vec![0u8; size].into_boxed_slice())
}

impl Pool {
    /// Whether `n` buffers of `size` bytes can be had: idle ones, and new
    /// ones if they are [`SMALL`] or smaller or stay within `budget` bytes.
    fn can_take(&self, size: usize, n: usize, budget: usize) -> bool {
        let idle = self
            .idle
            .iter()
            .find(|(s, _)| *s == size)
            .map_or(0, |(_, idle)| idle.len());
        let new = n.saturating_sub(idle).saturating_mul(size);
        size <= SMALL || self.allocated.saturating_add(new) <= budget
    }

    /// An idle `size`-byte buffer or a new one, and whether it is new.
    fn get(&mut self, size: usize) -> (&'static mut [u8], bool) {
        if let Some(buffer) = self
            .idle
            .iter_mut()
            .find(|(s, _)| *s == size)
            .and_then(|(_, idle)| idle.pop())
        {
            return (buffer, false);
        }
        if size > SMALL {
            self.allocated = self.allocated.saturating_add(size);
        }
        (new(size), true)
    }

    fn put(&mut self, buffer: &'static mut [u8]) {
        let size = buffer.len();
        match self.idle.iter_mut().find(|(s, _)| *s == size) {
            Some((_, idle)) => idle.push(buffer),
            None => self.idle.push((size, vec![buffer])),
        }
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
pub fn give_back_parts(mut rewriter: Rewriter<'static>) {
    if let Some(lanes) = rewriter.take_guard() {
        LANES.with_borrow_mut(|idle| idle.push(lanes));
    }
    let (frames, raw, tables) = rewriter.into_parts();
    give_back((frames, raw));
    if let Some(tables) = tables {
        give_back_tables(tables);
    }
}
