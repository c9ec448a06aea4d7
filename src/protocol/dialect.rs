//! The protocol's two dialects, and the error of reading a name (a
//! dialect, a policy, a stage) that is not one of those listed.

use core::fmt;

/// Which version of the protocol to accept and emit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Dialect {
    /// Protocol 1.0 (`@ag-ui/core@1.0.0`): unknown members are stripped at
    /// every depth, unknown event types dropped, integers checked.
    #[default]
    V1,
    /// Pre-1.0 (`@ag-ui/core@0.0.59`): unknown top-level members pass
    /// through, unknown event types are rejected, `THINKING_*` is native.
    V0,
}

impl core::str::FromStr for Dialect {
    type Err = UnknownName;

    /// `v1` (or `V1`, `1.0.0`) and `v0` (or `V0`, `0.0.59`).
    ///
    /// ```
    /// use agui_stream::Dialect;
    /// assert_eq!("v0".parse(), Ok(Dialect::V0));
    /// assert!("v2".parse::<Dialect>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "v1" | "V1" | "1.0.0" => Ok(Dialect::V1),
            "v0" | "V0" | "0.0.59" => Ok(Dialect::V0),
            _ => Err(UnknownName {
                what: "dialect",
                expected: "v1 or v0",
            }),
        }
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Dialect {
    /// From a string, as [`FromStr`](core::str::FromStr) reads it.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_name(d)
    }
}

/// A name `FromStr` did not recognise: a [`Dialect`](crate::Dialect) or an
/// [`OnViolation`](crate::rewrite::OnViolation) spelled some other way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnknownName {
    /// What was being named (`"dialect"`).
    pub what: &'static str,
    /// The names accepted (`"v1 or v0"`).
    pub expected: &'static str,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {}: expected {}", self.what, self.expected)
    }
}

impl core::error::Error for UnknownName {}

/// `Deserialize` for a `FromStr` type, from a string.
#[cfg(feature = "serde")]
pub(crate) fn deserialize_name<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: core::str::FromStr<Err = UnknownName>,
{
    struct Name<T>(core::marker::PhantomData<T>);
    impl<T: core::str::FromStr<Err = UnknownName>> serde::de::Visitor<'_> for Name<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a name")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
            v.parse().map_err(E::custom)
        }
    }
    d.deserialize_str(Name(core::marker::PhantomData))
}
