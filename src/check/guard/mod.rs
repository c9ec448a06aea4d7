//! Content guardrails: rules that find what an agent must not say — a
//! literal, an email address, a card number — in a lane of text that
//! arrives in pieces, and mask it, block the run or count it.
//!
//! Matches are found **leftmost-longest**: at the leftmost position where
//! any rule matches, the longest match (a tie goes to the rule listed
//! first), non-overlapping, scanning on after each match. A [`Lane`] finds
//! exactly the matches this finds in the whole text at once, whatever the
//! pieces: it holds back only the shortest suffix of its text that could
//! still become part of a match (never more than the longest rule's
//! maximum length − 1 bytes), and lets it go with the next piece or at the
//! lane's end.
//!
//! ```
//! use agui_stream::guard::{Action, Detector, Lane, Piece, Rule, Rules};
//! let rules: Rules<'_> = Rules::new(&[
//!     Rule::builtin(Detector::Email, Action::Mask),
//!     Rule::literal("Project Falcon", Action::Mask).ignore_case(),
//! ])
//! .unwrap();
//! let mut lane = Lane::new();
//! let mut out = heapless::String::<128>::new();
//! let mut text = |p: Piece<'_>| {
//!     if let Piece::Text(t) = p {
//!         out.push_str(core::str::from_utf8(t).unwrap()).unwrap();
//!     }
//! };
//! // The address and the name are split across three pieces.
//! lane.push(&rules, b"Mail ada@exa", &mut text).unwrap();
//! lane.push(&rules, b"mple.org about project ", &mut text).unwrap();
//! lane.push(&rules, b"falcon.", &mut text).unwrap();
//! lane.finish(&rules, &mut text).unwrap();
//! assert_eq!(out, "Mail [REDACTED] about [REDACTED].");
//! ```

mod detect;
mod lane;

use core::fmt;

pub use lane::{Blocked, Lane, Piece};

/// The most rules a [`Rules`] holds by default.
pub const DEFAULT_RULES: usize = 32;

/// The longest match any rule may have, in bytes (a literal's length):
/// what a [`Lane`] can hold back is one less.
pub const MAX_MATCH: usize = 256;

/// What a match does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Action {
    /// The match is replaced by the rule's replacement.
    Mask,
    /// The run ends before any byte of the match goes out.
    Block,
    /// The match goes out as it is; it is only counted.
    Monitor,
}

/// A built-in detector: each a regular expression, matched without word
/// boundaries (as written) and to at most its maximum length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Detector {
    /// `[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}`,
    /// at most 254 bytes.
    Email,
    /// 13 to 19 ASCII digits, consecutive digits separated by at most one
    /// space or `-`, whose digits pass the Luhn check: at most 37 bytes.
    /// The longest is the longest that passes.
    CreditCard,
    /// `[0-9]{3}-[0-9]{2}-[0-9]{4}`: 11 bytes.
    UsSsn,
    /// `A[KS]IA[A-Z0-9]{16}`: 20 bytes.
    AwsAccessKeyId,
    /// `gh[pousr]_[A-Za-z0-9]{36}`: 40 bytes.
    GithubToken,
    /// `xox[abprs]-[A-Za-z0-9-]{10,48}`: at most 53 bytes.
    SlackToken,
}

impl Detector {
    /// Every detector, in the order of their names.
    pub const ALL: [Detector; 6] = [
        Detector::Email,
        Detector::CreditCard,
        Detector::UsSsn,
        Detector::AwsAccessKeyId,
        Detector::GithubToken,
        Detector::SlackToken,
    ];

    /// Its configuration name (`"email"`, `"credit_card"`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Detector::Email => "email",
            Detector::CreditCard => "credit_card",
            Detector::UsSsn => "us_ssn",
            Detector::AwsAccessKeyId => "aws_access_key_id",
            Detector::GithubToken => "github_token",
            Detector::SlackToken => "slack_token",
        }
    }

    /// The detector named `name`.
    pub fn from_name(name: &str) -> Option<Detector> {
        Detector::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// What a rule matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern<'r> {
    /// These bytes (ASCII letters of either case with `ignore_case`).
    Literal {
        /// Its UTF-8 bytes.
        text: &'r [u8],
        /// Fold ASCII case.
        ignore_case: bool,
    },
    /// A built-in detector.
    Builtin(Detector),
}

/// One rule: what it matches, what a match does, and its names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule<'r> {
    /// What it matches.
    pub pattern: Pattern<'r>,
    /// What a match does.
    pub action: Action,
    /// What a masked match becomes.
    pub replacement: &'r str,
    /// The name a block's message and the counters give (a literal's is
    /// never its text): the detector's name, or `"literal"`, unless set.
    pub name: &'r str,
}

impl<'r> Rule<'r> {
    /// A literal, case-sensitive, replaced by `[REDACTED]` under
    /// [`Action::Mask`].
    pub const fn literal(text: &'r str, action: Action) -> Self {
        Rule {
            pattern: Pattern::Literal {
                text: text.as_bytes(),
                ignore_case: false,
            },
            action,
            replacement: "[REDACTED]",
            name: "literal",
        }
    }

    /// A built-in detector.
    pub const fn builtin(detector: Detector, action: Action) -> Self {
        Rule {
            pattern: Pattern::Builtin(detector),
            action,
            replacement: "[REDACTED]",
            name: detector.name(),
        }
    }

    /// A literal that folds ASCII case.
    #[must_use]
    pub const fn ignore_case(mut self) -> Self {
        if let Pattern::Literal { text, .. } = self.pattern {
            self.pattern = Pattern::Literal {
                text,
                ignore_case: true,
            };
        }
        self
    }

    /// With this replacement.
    #[must_use]
    pub const fn replacement(mut self, replacement: &'r str) -> Self {
        self.replacement = replacement;
        self
    }

    /// With this name.
    #[must_use]
    pub const fn named(mut self, name: &'r str) -> Self {
        self.name = name;
        self
    }

    /// The fewest bytes a match can have.
    pub const fn min_len(&self) -> usize {
        match self.pattern {
            Pattern::Literal { text, .. } => text.len(),
            Pattern::Builtin(d) => d.min_len(),
        }
    }

    /// The most bytes a match can have.
    pub const fn max_len(&self) -> usize {
        match self.pattern {
            Pattern::Literal { text, .. } => text.len(),
            Pattern::Builtin(d) => d.max_len(),
        }
    }
}

/// Why rules cannot be compiled: found when they are configured, never
/// later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RulesError {
    /// More rules than the table holds.
    TooMany {
        /// Rules the table holds.
        capacity: u32,
    },
    /// The rule at this index is a literal longer than [`MAX_MATCH`].
    TooLong {
        /// Its index.
        rule: u32,
    },
    /// The rule at this index is an empty literal.
    Empty {
        /// Its index.
        rule: u32,
    },
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RulesError::TooMany { capacity } => {
                write!(f, "more guard rules than the {capacity} the table holds")
            }
            RulesError::TooLong { rule } => write!(
                f,
                "guard rule {rule}: a literal longer than {MAX_MATCH} bytes"
            ),
            RulesError::Empty { rule } => write!(f, "guard rule {rule}: an empty literal"),
        }
    }
}

/// Rules compiled once: at most `N` (64 at most), each checked, with the
/// tables a lane skips text with: which rules a byte can start, and which
/// pairs of bytes can start a match. An `email` rule starts only near an
/// `@` (its local part ends there), which a lane finds with `memchr`.
#[derive(Clone, Debug)]
pub struct Rules<'r, const N: usize = DEFAULT_RULES> {
    rules: heapless::Vec<Rule<'r>, N>,
    /// By byte: the rules (a bit each, by index) whose match can start
    /// with it, `email` aside.
    first: [u64; 256],
    /// The `email` rules.
    email: u64,
    /// Bit `b0 << 8 | b1`: some rule but `email` can start with the bytes
    /// `b0 b1`, or with `b0` alone.
    pairs: [u64; 1024],
    max_len: usize,
    expansion: usize,
}

impl<'r, const N: usize> Rules<'r, N> {
    /// Compiles `rules`, in order (the first wins a tie).
    ///
    /// # Errors
    ///
    /// More than `N` rules, or a literal that is empty or longer than
    /// [`MAX_MATCH`].
    pub fn new(rules: &[Rule<'r>]) -> Result<Self, RulesError> {
        const { assert!(N <= 64, "a rule set holds at most 64 rules") };
        Self::check(rules)?;
        let mut compiled = Rules {
            rules: heapless::Vec::new(),
            first: [0; 256],
            email: 0,
            pairs: [0; 1024],
            max_len: 0,
            expansion: 1,
        };
        for (i, rule) in rules.iter().enumerate() {
            // (Never full: `check` counted them.)
            let _ = compiled.rules.push(*rule);
            compiled.max_len = compiled.max_len.max(rule.max_len());
            if rule.action == Action::Mask {
                // A replacement escaped takes at most 6 bytes a byte.
                let out = rule.replacement.len().saturating_mul(6);
                compiled.expansion = compiled.expansion.max(out.div_ceil(rule.min_len()));
            }
            let bit = 1u64 << (i & 63);
            if rule.pattern == Pattern::Builtin(Detector::Email) {
                compiled.email |= bit;
                continue;
            }
            let start = detect::start(&rule.pattern);
            for b0 in 0..=u8::MAX {
                let Some(after) = detect::step(&rule.pattern, start, b0) else {
                    continue;
                };
                if let Some(f) = compiled.first.get_mut(usize::from(b0)) {
                    *f |= bit;
                }
                let alone = detect::accepts(&rule.pattern, after);
                for b1 in 0..=u8::MAX {
                    if alone || detect::step(&rule.pattern, after, b1).is_some() {
                        let pair = usize::from(b0) << 8 | usize::from(b1);
                        if let Some(word) = compiled.pairs.get_mut(pair >> 6) {
                            *word |= 1 << (pair & 63);
                        }
                    }
                }
            }
        }
        Ok(compiled)
    }

    /// Whether `rules` compile, without compiling them (the tables take
    /// about 12 KB).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn check(rules: &[Rule<'_>]) -> Result<(), RulesError> {
        if rules.len() > N {
            return Err(RulesError::TooMany {
                capacity: u32::try_from(N).unwrap_or(u32::MAX),
            });
        }
        for (i, rule) in rules.iter().enumerate() {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            if let Pattern::Literal { text, .. } = rule.pattern {
                if text.is_empty() {
                    return Err(RulesError::Empty { rule: index });
                }
                if text.len() > MAX_MATCH {
                    return Err(RulesError::TooLong { rule: index });
                }
            }
        }
        Ok(())
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule<'r>] {
        &self.rules
    }

    /// The longest match any rule can have (0 without rules).
    pub const fn max_len(&self) -> usize {
        self.max_len
    }

    /// The most bytes of JSON text a masked match can become, per byte of
    /// its text (at least 1).
    pub const fn expansion(&self) -> usize {
        self.expansion
    }

    /// The rules but `email` whose match can start with `b`.
    fn first(&self, b: u8) -> u64 {
        self.first.get(usize::from(b)).copied().unwrap_or(0)
    }

    /// Whether a rule but `email` can start with `b0 b1`.
    fn pair(&self, b0: u8, b1: u8) -> bool {
        let pair = usize::from(b0) << 8 | usize::from(b1);
        self.pairs
            .get(pair >> 6)
            .is_some_and(|word| word & (1 << (pair & 63)) != 0)
    }
}
