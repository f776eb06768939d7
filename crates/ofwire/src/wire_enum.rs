//! `wire_enum!`: the enums of the specification (message types, error
//! codes, actions...) with their wire values and names, declared once.

/// Declares a wire enum with an `Unknown(n)` catch-all, conversions to and
/// from the wire integer, and the spec's name for each value.
macro_rules! wire_enum {
    ($(#[$meta:meta])* pub enum $name:ident : $repr:ty { $($variant:ident = $value:expr => $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
        pub enum $name { $($variant,)* Unknown($repr) }
        impl From<$repr> for $name {
            fn from(v: $repr) -> Self {
                match v { $($value => $name::$variant,)* other => $name::Unknown(other) }
            }
        }
        impl From<$name> for $repr {
            fn from(v: $name) -> $repr {
                match v { $($name::$variant => $value,)* $name::Unknown(other) => other }
            }
        }
        impl $name {
            /// Every value the specification defines, in wire order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),*];
            /// The specification's name for this value (`UNKNOWN` otherwise).
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* $name::Unknown(_) => "UNKNOWN" }
            }
        }
    };
}
pub(crate) use wire_enum;
