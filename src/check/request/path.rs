//! Where in a request body a problem is.

use core::fmt;

use crate::protocol::event_type::Member;

/// Most steps a [`MemberPath`] holds: a top-level member and the arrays
/// nested in its elements (`messages[3].content[1]`) take three.
const STEPS: usize = 4;

/// One step of a [`MemberPath`]: a member, an element, or both
/// (`messages[3]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Step {
    /// The member (`None`: an element of an array in an array).
    pub member: Option<Member>,
    /// The element of the member's array.
    pub index: Option<u32>,
}

/// A fixed-capacity member path into a request body, such as
/// `messages[3].content[1]` (empty: the body itself). Past four steps the
/// innermost are left off ([`is_cut`](Self::is_cut)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemberPath {
    steps: [Step; STEPS],
    len: u8,
    cut: bool,
}

impl MemberPath {
    /// The body itself.
    pub const fn root() -> Self {
        MemberPath {
            steps: [Step {
                member: None,
                index: None,
            }; STEPS],
            len: 0,
            cut: false,
        }
    }

    /// A top-level member.
    pub(crate) const fn member(member: Member) -> Self {
        let mut path = Self::root();
        path.steps[0].member = Some(member);
        path.len = 1;
        path
    }

    /// Adds a step (or marks the path cut, when it is full).
    pub(crate) fn push(&mut self, step: Step) {
        match self.steps.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = step;
                self.len = self.len.saturating_add(1);
            }
            None => self.cut = true,
        }
    }

    /// The steps, outermost first.
    pub fn steps(&self) -> &[Step] {
        self.steps.get(..usize::from(self.len)).unwrap_or_default()
    }

    /// Steps were left off the end.
    pub const fn is_cut(&self) -> bool {
        self.cut
    }
}

impl fmt::Display for MemberPath {
    /// `messages[3].content[1]`; the body itself is `(body)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 0 {
            return f.write_str("(body)");
        }
        for (i, step) in self.steps().iter().enumerate() {
            if let Some(m) = step.member {
                if i > 0 {
                    f.write_str(".")?;
                }
                f.write_str(m.as_str())?;
            }
            if let Some(n) = step.index {
                write!(f, "[{n}]")?;
            }
        }
        if self.cut {
            f.write_str("…")?;
        }
        Ok(())
    }
}
