//! One lane of text through the rules, piece by piece: a cursor that
//! decides each position as soon as the text after it settles the
//! longest match there, and holds back the rest.

use core::fmt;

use super::detect::{accepts, email_local, start, step};
use super::{Action, MAX_MATCH, Rules};

/// What a lane lets out, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text that goes out.
    Text(&'a [u8]),
    /// A match of the rule at index `rule` (of [`Rules::rules`]). What goes
    /// out for it follows: under [`Action::Mask`] the replacement, under
    /// [`Action::Monitor`] the matched text, under [`Action::Block`]
    /// nothing (the lane stops).
    Matched {
        /// The rule's index.
        rule: usize,
        /// Its action.
        action: Action,
    },
}

/// A rule under [`Action::Block`] matched: no byte of the match went out,
/// and the lane lets nothing more out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Blocked {
    /// The rule's index.
    pub rule: usize,
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "guard rule {} blocked the text", self.rule)
    }
}

/// A lane's text held back, and whether a block stopped it: about 260
/// bytes.
#[derive(Clone, Debug)]
pub struct Lane {
    held: [u8; MAX_MATCH],
    len: u16,
    blocked: Option<u16>,
}

impl Default for Lane {
    fn default() -> Self {
        Lane::new()
    }
}

/// The held text followed by the new piece, read as one.
struct Window<'a> {
    held: &'a [u8],
    text: &'a [u8],
}

impl Window<'_> {
    fn len(&self) -> usize {
        self.held.len().saturating_add(self.text.len())
    }

    fn at(&self, i: usize) -> Option<u8> {
        match i.checked_sub(self.held.len()) {
            None => self.held.get(i).copied(),
            Some(j) => self.text.get(j).copied(),
        }
    }

    /// The first `@` at or after `from`.
    fn find_at(&self, from: usize) -> Option<usize> {
        let split = self.held.len();
        if from < split
            && let Some(k) = self.held.get(from..).and_then(|h| memchr::memchr(b'@', h))
        {
            return Some(from.saturating_add(k));
        }
        let j = from.saturating_sub(split);
        let k = memchr::memchr(b'@', self.text.get(j..)?)?;
        Some(split.saturating_add(j).saturating_add(k))
    }

    /// Where the run of an email's local-part characters that ends at `end`
    /// starts, looking back 64 at most.
    fn local_run(&self, end: usize) -> usize {
        let mut start = end;
        while end.saturating_sub(start) < 64
            && start > 0
            && self.at(start.saturating_sub(1)).is_some_and(email_local)
        {
            start = start.saturating_sub(1);
        }
        start
    }

    /// The first position at or after `from` where a rule but `email` can
    /// start: a pair of bytes one can start with, or a byte one can start
    /// with at the window's end.
    fn next_start<const N: usize>(&self, rules: &Rules<'_, N>, from: usize) -> usize {
        let split = self.held.len();
        let n = self.len();
        let mut at = from;
        // The held bytes (and the pair across into the text) one by one.
        while at < split.min(n) {
            if self.starts_at(rules, at) {
                return at;
            }
            at = at.saturating_add(1);
        }
        let j = at.saturating_sub(split);
        let text = self.text.get(j..).unwrap_or_default();
        let tail = text.get(1..).unwrap_or_default();
        match text.iter().zip(tail).position(|(&a, &b)| rules.pair(a, b)) {
            Some(k) => at.saturating_add(k),
            // The last byte, which has no next one yet.
            None => match text.last() {
                Some(&b) if rules.first(b) != 0 => n.saturating_sub(1),
                _ => n,
            },
        }
    }

    fn starts_at<const N: usize>(&self, rules: &Rules<'_, N>, at: usize) -> bool {
        match (self.at(at), self.at(at.saturating_add(1))) {
            (Some(a), Some(b)) => rules.pair(a, b),
            (Some(a), None) => rules.first(a) != 0,
            _ => false,
        }
    }

    /// Lets `[from, to)` out, in at most two pieces.
    fn emit(&self, from: usize, to: usize, out: &mut impl FnMut(Piece<'_>)) {
        let split = self.held.len();
        if from < split.min(to)
            && let Some(part) = self.held.get(from..split.min(to))
        {
            out(Piece::Text(part));
        }
        let (from, to) = (from.saturating_sub(split), to.saturating_sub(split));
        if from < to
            && let Some(part) = self.text.get(from..to)
        {
            out(Piece::Text(part));
        }
    }
}

/// Where an `email` can start: in the local-part run before an `@` (its
/// last 64 bytes), or in the one the window ends with (more may come).
/// Remembers the last `@` found, so that the search is linear.
struct Emails {
    on: bool,
    ended: bool,
    /// The candidates `[lo, hi)` found last (`hi` an `@`, or the end).
    lo: usize,
    hi: usize,
    /// Where the search for the next `@` goes on.
    searched: usize,
}

impl Emails {
    /// The first position at or after `at` where an email can start, or
    /// the window's end.
    fn next(&mut self, w: &Window<'_>, at: usize) -> usize {
        let n = w.len();
        if !self.on {
            return n;
        }
        loop {
            if at < self.hi {
                return at.max(self.lo);
            }
            if self.searched >= n {
                return n;
            }
            match w.find_at(self.searched.max(at)) {
                Some(a) => {
                    self.lo = w.local_run(a);
                    self.hi = if self.lo < a { a } else { 0 };
                    self.searched = a.saturating_add(1);
                }
                None => {
                    // The run the window ends with may meet an `@` later.
                    self.lo = w.local_run(n);
                    self.hi = if self.ended { 0 } else { n };
                    self.searched = n;
                }
            }
        }
    }
}

/// What the text settles at one position.
enum Found {
    /// More text could change the longest match here.
    Undecided,
    Nothing,
    Match {
        rule: usize,
        len: usize,
    },
}

impl Lane {
    /// A lane that holds nothing.
    pub const fn new() -> Self {
        Lane {
            held: [0; MAX_MATCH],
            len: 0,
            blocked: None,
        }
    }

    /// The bytes held back (less than [`Rules::max_len`]).
    pub const fn held(&self) -> usize {
        self.len as usize
    }

    /// Starts over: nothing held, not blocked.
    pub fn reset(&mut self) {
        self.len = 0;
        self.blocked = None;
    }

    /// The lane's next `text`: lets out every piece the text so far
    /// settles and holds back the rest.
    ///
    /// # Errors
    ///
    /// [`Blocked`] where a blocking rule matched, and on every call after.
    pub fn push<const N: usize>(
        &mut self,
        rules: &Rules<'_, N>,
        text: &[u8],
        out: &mut impl FnMut(Piece<'_>),
    ) -> Result<(), Blocked> {
        self.scan(rules, text, false, out)
    }

    /// The lane's text ended: lets out what was held back, its matches
    /// settled, and starts over.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    pub fn finish<const N: usize>(
        &mut self,
        rules: &Rules<'_, N>,
        out: &mut impl FnMut(Piece<'_>),
    ) -> Result<(), Blocked> {
        let result = self.scan(rules, &[], true, out);
        self.reset();
        result
    }

    fn scan<const N: usize>(
        &mut self,
        rules: &Rules<'_, N>,
        text: &[u8],
        ended: bool,
        out: &mut impl FnMut(Piece<'_>),
    ) -> Result<(), Blocked> {
        if let Some(rule) = self.blocked {
            return Err(Blocked {
                rule: usize::from(rule),
            });
        }
        let window = Window {
            held: self.held.get(..usize::from(self.len)).unwrap_or_default(),
            text,
        };
        let n = window.len();
        let (mut at, mut plain) = (0, 0);
        let mut emails = Emails {
            on: rules.email != 0,
            ended,
            lo: 0,
            hi: 0,
            searched: 0,
        };
        // The next position a rule but `email` can start at (kept while
        // the cursor stays before it).
        let mut other: Option<usize> = None;
        while at < n {
            // Skip to where a rule can start.
            let email = emails.next(&window, at);
            let next = match other {
                Some(o) if o >= at => o,
                _ => window.next_start(rules, at),
            };
            other = Some(next);
            at = email.min(next);
            if at >= n {
                break;
            }
            match longest(rules, &window, at, ended, email == at) {
                Found::Undecided => break,
                Found::Nothing => at = at.saturating_add(1),
                Found::Match { rule, len } => {
                    window.emit(plain, at, out);
                    let Some(r) = rules.rules().get(rule) else {
                        break;
                    };
                    out(Piece::Matched {
                        rule,
                        action: r.action,
                    });
                    match r.action {
                        Action::Mask => out(Piece::Text(r.replacement.as_bytes())),
                        Action::Monitor => window.emit(at, at.saturating_add(len), out),
                        Action::Block => {
                            self.blocked = Some(u16::try_from(rule).unwrap_or(u16::MAX));
                            self.len = 0;
                            return Err(Blocked { rule });
                        }
                    }
                    at = at.saturating_add(len);
                    plain = at;
                }
            }
        }
        window.emit(plain, at, out);
        self.keep(at, text);
        Ok(())
    }

    /// Holds the window's bytes from `at` on (fewer than [`MAX_MATCH`]:
    /// only an undecided position stops the cursor short of the end, and
    /// its text is shorter than the longest match).
    fn keep(&mut self, at: usize, text: &[u8]) {
        let held = usize::from(self.len);
        let (from_held, from_text) = match at.checked_sub(held) {
            None => (at..held, 0),
            Some(j) => (held..held, j),
        };
        let kept = from_held.len();
        self.held.copy_within(from_held, 0);
        let rest = text.get(from_text..).unwrap_or_default();
        let end = kept.saturating_add(rest.len()).min(MAX_MATCH);
        if let Some(dst) = self.held.get_mut(kept..end) {
            dst.copy_from_slice(rest.get(..end.saturating_sub(kept)).unwrap_or_default());
        }
        self.len = u16::try_from(end).unwrap_or(0);
    }
}

/// The longest match at `at`, if the window settles it (`email`: an
/// email can start there).
fn longest<const N: usize>(
    rules: &Rules<'_, N>,
    w: &Window<'_>,
    at: usize,
    ended: bool,
    email: bool,
) -> Found {
    let Some(b) = w.at(at) else {
        return Found::Nothing;
    };
    let mut candidates = rules.first(b) | if email { rules.email } else { 0 };
    let mut best: Option<(usize, usize)> = None;
    while candidates != 0 {
        let index = candidates.trailing_zeros() as usize;
        candidates &= candidates.wrapping_sub(1);
        let Some(rule) = rules.rules().get(index) else {
            break;
        };
        let max = rule.max_len();
        let mut state = start(&rule.pattern);
        let mut len = 0;
        let mut matched = 0;
        while len < max {
            let Some(b) = w.at(at.saturating_add(len)) else {
                if !ended {
                    return Found::Undecided;
                }
                break;
            };
            match step(&rule.pattern, state, b) {
                Some(next) => state = next,
                None => break,
            }
            len = len.saturating_add(1);
            if accepts(&rule.pattern, state) {
                matched = len;
            }
        }
        if matched > best.map_or(0, |(_, l)| l) {
            best = Some((index, matched));
        }
    }
    match best {
        Some((rule, len)) => Found::Match { rule, len },
        None => Found::Nothing,
    }
}
