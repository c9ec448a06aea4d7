//! The roles messages have: a text message's (one list, as names and as
//! JSON values) and a reasoning message's.

/// The roles of a text message, as names and as JSON values, from one
/// list.
macro_rules! text_roles {
    ($($role:literal),*) => {
        /// The roles a text message may have.
        pub(crate) const TEXT_ROLES: &[&str] = &[$($role),*];
        /// [`TEXT_ROLES`] as JSON strings (quotes included).
        pub(crate) const TEXT_ROLE_VALUES: &[&[u8]] =
            &[$(concat!("\"", $role, "\"").as_bytes()),*];
    };
}
text_roles!("developer", "system", "assistant", "user");

/// The role every reasoning message has, as a JSON string.
pub(crate) const REASONING_ROLE: &[u8] = b"\"reasoning\"";
