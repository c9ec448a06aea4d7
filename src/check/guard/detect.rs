//! The patterns as automata: from a start position, one byte at a time,
//! a small state that knows whether the bytes so far are a match
//! ([`accepts`]) and whether any longer text could still be one (a dead
//! step). Each built-in detector is the regular expression its doc gives,
//! with no word boundaries (as the expressions are written), matched to
//! at most its maximum length.

use super::{Detector, Pattern};

/// Where a pattern's automaton stands after the bytes so far.
#[derive(Clone, Copy, Debug)]
pub(super) enum State {
    /// Bytes of the literal matched.
    Literal(u16),
    Email(Email),
    Card(Card),
    /// Bytes of a [`Seq`] matched.
    Seq(u8),
}

/// `[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Email {
    /// Local-part bytes read, before the `@`.
    Local(u8),
    /// Just after the `@`.
    At,
    /// Inside a domain label: its bytes, whether all are letters, and
    /// whether a label came before it (then it may be the last one).
    Label { len: u8, alpha: bool, after: bool },
    /// Just after a `.` that ended a label.
    Dot,
}

/// 13 to 19 digits, single spaces or `-` between two of them, Luhn.
#[derive(Clone, Copy, Debug)]
pub(super) struct Card {
    digits: u8,
    /// The last byte was a separator.
    sep: bool,
    /// The Luhn sum (mod 10) with the last digit read undoubled / doubled.
    undoubled: u8,
    doubled: u8,
}

/// A fixed sequence of byte classes, then a class repeated `min..=max`
/// times.
#[derive(Debug)]
pub(super) struct Seq {
    pub(super) head: &'static [fn(u8) -> bool],
    pub(super) tail: fn(u8) -> bool,
    pub(super) min: u8,
    pub(super) max: u8,
}

fn digit(b: u8) -> bool {
    b.is_ascii_digit()
}
fn dash(b: u8) -> bool {
    b == b'-'
}
fn upper_or_digit(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}
fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}
fn alnum_or_dash(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// `[0-9]{3}-[0-9]{2}-[0-9]{4}`.
pub(super) const US_SSN: Seq = Seq {
    head: &[digit, digit, digit, dash, digit, digit, dash, digit, digit],
    tail: digit,
    min: 2,
    max: 2,
};

/// `A[KS]IA[A-Z0-9]{16}`: `AKIA` (long-term) and `ASIA` (temporary).
pub(super) const AWS_ACCESS_KEY_ID: Seq = Seq {
    head: &[
        |b| b == b'A',
        |b| b == b'K' || b == b'S',
        |b| b == b'I',
        |b| b == b'A',
    ],
    tail: upper_or_digit,
    min: 16,
    max: 16,
};

/// `gh[pousr]_[A-Za-z0-9]{36}`: GitHub's personal, OAuth, user-to-server,
/// server-to-server and refresh tokens.
pub(super) const GITHUB_TOKEN: Seq = Seq {
    head: &[
        |b| b == b'g',
        |b| b == b'h',
        |b| matches!(b, b'p' | b'o' | b'u' | b's' | b'r'),
        |b| b == b'_',
    ],
    tail: alnum,
    min: 36,
    max: 36,
};

/// `xox[abprs]-[A-Za-z0-9-]{10,48}`: Slack's bot, user, app and
/// refresh tokens.
pub(super) const SLACK_TOKEN: Seq = Seq {
    head: &[
        |b| b == b'x',
        |b| b == b'o',
        |b| b == b'x',
        |b| matches!(b, b'a' | b'b' | b'p' | b'r' | b's'),
        dash,
    ],
    tail: alnum_or_dash,
    min: 10,
    max: 48,
};

impl Seq {
    const fn max_len(&self) -> usize {
        self.head.len().saturating_add(self.max as usize)
    }

    fn step(&self, at: u8, b: u8) -> Option<State> {
        let at_usize = usize::from(at);
        let fits = match self.head.get(at_usize) {
            Some(class) => class(b),
            None => at_usize < self.max_len() && (self.tail)(b),
        };
        fits.then(|| State::Seq(at.saturating_add(1)))
    }

    fn accepts(&self, at: u8) -> bool {
        usize::from(at) >= self.head.len().saturating_add(usize::from(self.min))
    }
}

pub(super) const fn email_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

const fn domain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

impl Email {
    fn step(self, b: u8) -> Option<Email> {
        match self {
            Email::Local(n) if email_local(b) => {
                (n < 64).then(|| Email::Local(n.saturating_add(1)))
            }
            Email::Local(n) if b == b'@' && n > 0 => Some(Email::At),
            Email::At if domain(b) => Some(Email::Label {
                len: 1,
                alpha: b.is_ascii_alphabetic(),
                after: false,
            }),
            Email::Label { len, alpha, after } if domain(b) => (len < 63).then(|| Email::Label {
                len: len.saturating_add(1),
                alpha: alpha && b.is_ascii_alphabetic(),
                after,
            }),
            Email::Label { .. } if b == b'.' => Some(Email::Dot),
            Email::Dot if domain(b) => Some(Email::Label {
                len: 1,
                alpha: b.is_ascii_alphabetic(),
                after: true,
            }),
            _ => None,
        }
    }

    fn accepts(self) -> bool {
        matches!(self, Email::Label { len, alpha: true, after: true } if (2..=24).contains(&len))
    }
}

impl Card {
    const START: Card = Card {
        digits: 0,
        sep: false,
        undoubled: 0,
        doubled: 0,
    };

    fn step(self, b: u8) -> Option<Card> {
        match b {
            b'0'..=b'9' if self.digits < 19 => {
                let d = b.wrapping_sub(b'0');
                let twice = d.saturating_mul(2);
                let twice = if twice > 9 {
                    twice.saturating_sub(9)
                } else {
                    twice
                };
                Some(Card {
                    digits: self.digits.saturating_add(1),
                    sep: false,
                    undoubled: self.doubled.saturating_add(d) % 10,
                    doubled: self.undoubled.saturating_add(twice) % 10,
                })
            }
            b' ' | b'-' if self.digits > 0 && !self.sep => Some(Card { sep: true, ..self }),
            _ => None,
        }
    }

    fn accepts(self) -> bool {
        !self.sep && (13..=19).contains(&self.digits) && self.undoubled == 0
    }
}

impl Detector {
    /// The most bytes a match can have.
    pub(super) const fn max_len(self) -> usize {
        match self {
            Detector::Email => 254,
            Detector::CreditCard => 37,
            Detector::UsSsn => US_SSN.max_len(),
            Detector::AwsAccessKeyId => AWS_ACCESS_KEY_ID.max_len(),
            Detector::GithubToken => GITHUB_TOKEN.max_len(),
            Detector::SlackToken => SLACK_TOKEN.max_len(),
        }
    }

    /// The fewest bytes a match can have.
    pub(super) const fn min_len(self) -> usize {
        match self {
            Detector::Email => "a@b.cd".len(),
            Detector::CreditCard => 13,
            Detector::UsSsn => US_SSN.max_len(),
            Detector::AwsAccessKeyId => AWS_ACCESS_KEY_ID.max_len(),
            Detector::GithubToken => GITHUB_TOKEN.max_len(),
            Detector::SlackToken => 15,
        }
    }

    fn seq(self) -> Option<&'static Seq> {
        match self {
            Detector::UsSsn => Some(&US_SSN),
            Detector::AwsAccessKeyId => Some(&AWS_ACCESS_KEY_ID),
            Detector::GithubToken => Some(&GITHUB_TOKEN),
            Detector::SlackToken => Some(&SLACK_TOKEN),
            Detector::Email | Detector::CreditCard => None,
        }
    }
}

/// The state before a pattern's first byte.
pub(super) fn start(pattern: &Pattern<'_>) -> State {
    match pattern {
        Pattern::Literal { .. } => State::Literal(0),
        Pattern::Builtin(Detector::Email) => State::Email(Email::Local(0)),
        Pattern::Builtin(Detector::CreditCard) => State::Card(Card::START),
        Pattern::Builtin(_) => State::Seq(0),
    }
}

/// The state after `b`, or `None` where no match can go on.
pub(super) fn step(pattern: &Pattern<'_>, state: State, b: u8) -> Option<State> {
    match (pattern, state) {
        (Pattern::Literal { text, ignore_case }, State::Literal(n)) => {
            let want = *text.get(usize::from(n))?;
            let same = match ignore_case {
                true => want.eq_ignore_ascii_case(&b),
                false => want == b,
            };
            same.then(|| State::Literal(n.saturating_add(1)))
        }
        (_, State::Email(e)) => e.step(b).map(State::Email),
        (_, State::Card(c)) => c.step(b).map(State::Card),
        (Pattern::Builtin(d), State::Seq(at)) => d.seq()?.step(at, b),
        _ => None,
    }
}

/// Whether the bytes read so far are a match.
pub(super) fn accepts(pattern: &Pattern<'_>, state: State) -> bool {
    match (pattern, state) {
        (Pattern::Literal { text, .. }, State::Literal(n)) => usize::from(n) == text.len(),
        (_, State::Email(e)) => e.accepts(),
        (_, State::Card(c)) => c.accepts(),
        (Pattern::Builtin(d), State::Seq(at)) => d.seq().is_some_and(|s| s.accepts(at)),
        _ => false,
    }
}
