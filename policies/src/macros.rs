//! Helper macros shared by the policy modules.

/// An enum of policy names with `as_str`, `NAMES`, `FromStr` (whose error lists the valid
/// names) and `Display`; serde (behind the `serde` feature) uses the same names.
macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub enum $name {
            $($(#[$vm])* #[cfg_attr(feature = "serde", serde(rename = $s))] $variant),+
        }

        impl $name {
            /// Every valid name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($s),+];
            /// The name scenarios use.
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $s),+ }
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = String;
            /// # Errors
            /// A message listing the valid names.
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($s => Ok($name::$variant),)+
                    _ => Err(format!(
                        "unknown {} `{}`; valid names: {}",
                        stringify!($name), s, Self::NAMES.join(", ")
                    )),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
