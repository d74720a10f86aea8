//! A YAML document as a tree of values, mappings in document order, read with `serde-saphyr`
//! (a YAML deserializer on a pure-Rust parser, no `unsafe`, maintained; it builds no value
//! tree of its own, so the Kueue reader keeps this small one).

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A YAML value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `~`, `null` or nothing.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer or a float.
    Number(Number),
    /// A string.
    String(String),
    /// A sequence.
    Sequence(Vec<Value>),
    /// A mapping, in document order.
    Mapping(Mapping),
}

/// A YAML number, as the parser read it.
#[derive(Clone, Copy, PartialEq)]
pub enum Number {
    /// A non-negative integer.
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// An integer beyond 64 bits.
    U128(u128),
    /// A negative integer beyond 64 bits.
    I128(i128),
    /// A float.
    F64(f64),
}

impl Number {
    /// The number as an `i64`, when it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Number::U64(u) => i64::try_from(u).ok(),
            Number::I64(i) => Some(i),
            Number::U128(u) => i64::try_from(u).ok(),
            Number::I128(i) => i64::try_from(i).ok(),
            Number::F64(_) => None,
        }
    }

    /// The number as a `u64`, when it is a non-negative integer that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Number::U64(u) => Some(u),
            Number::I64(i) => u64::try_from(i).ok(),
            Number::U128(u) => u64::try_from(u).ok(),
            Number::I128(i) => u64::try_from(i).ok(),
            Number::F64(_) => None,
        }
    }
}

impl fmt::Display for Number {
    /// Integers in decimal; floats in their shortest round-trip form (`1.5`, `1000.0`, `1e21`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Number::U64(u) => write!(f, "{u}"),
            Number::I64(i) => write!(f, "{i}"),
            Number::U128(u) => write!(f, "{u}"),
            Number::I128(i) => write!(f, "{i}"),
            Number::F64(x) => write!(f, "{x:?}"),
        }
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A YAML mapping: `(key, value)` pairs in document order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mapping(pub Vec<(Value, Value)>);

impl Mapping {
    /// The value of the string key `key` (the first, if written twice).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// The keys, in document order.
    pub fn keys(&self) -> impl Iterator<Item = &Value> {
        self.0.iter().map(|(k, _)| k)
    }

    /// The values, in document order.
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.0.iter().map(|(_, v)| v)
    }

    /// The pairs, in document order.
    pub fn iter(&self) -> impl Iterator<Item = (&Value, &Value)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// Whether it has no pair.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a Mapping {
    type Item = (&'a Value, &'a Value);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Value, Value)>,
        fn(&'a (Value, Value)) -> (&'a Value, &'a Value),
    >;

    /// The pairs, in document order.
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl Value {
    /// The non-negative integer, if this is one that fits a `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The mapping, if this is one.
    pub fn as_mapping(&self) -> Option<&Mapping> {
        match self {
            Value::Mapping(m) => Some(m),
            _ => None,
        }
    }

    /// The sequence, if this is one.
    pub fn as_sequence(&self) -> Option<&[Value]> {
        match self {
            Value::Sequence(s) => Some(s),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Whether this is a sequence.
    pub fn is_sequence(&self) -> bool {
        matches!(self, Value::Sequence(_))
    }

    /// Whether this is a mapping.
    pub fn is_mapping(&self) -> bool {
        matches!(self, Value::Mapping(_))
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Number(if i < 0 {
            Number::I64(i)
        } else {
            Number::U64(i as u64)
        }))
    }
    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(Value::Number(Number::U64(u)))
    }
    fn visit_i128<E>(self, i: i128) -> Result<Value, E> {
        Ok(Value::Number(Number::I128(i)))
    }
    fn visit_u128<E>(self, u: u128) -> Result<Value, E> {
        Ok(Value::Number(Number::U128(u)))
    }
    fn visit_f64<E>(self, x: f64) -> Result<Value, E> {
        Ok(Value::Number(Number::F64(x)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element()? {
            v.push(x);
        }
        Ok(Value::Sequence(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = Vec::new();
        while let Some((k, v)) = map.next_entry()? {
            m.push((k, v));
        }
        Ok(Value::Mapping(Mapping(m)))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// Parses one YAML document.
///
/// # Errors
/// The parser's error (with its line and column within `text` when known).
pub fn from_str(text: &str) -> Result<Value, serde_saphyr::Error> {
    serde_saphyr::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_keep_document_order_and_numbers_their_form() {
        let v = from_str("b: 1\na: [x, 1.5, ~, true]\nc: -2\nd: 1e3\n").unwrap();
        let m = v.as_mapping().unwrap();
        let keys: Vec<&str> = m.keys().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(keys, ["b", "a", "c", "d"]);
        assert_eq!(m.get("b"), Some(&Value::Number(Number::U64(1))));
        assert_eq!(
            m.get("c").map(|n| format!("{n:?}")),
            Some("Number(-2)".into())
        );
        let a = m.get("a").unwrap().as_sequence().unwrap();
        assert_eq!(a[0].as_str(), Some("x"));
        assert_eq!(format!("{:?}", a[1]), "Number(1.5)");
        assert!(a[2].is_null());
        assert_eq!(a[3], Value::Bool(true));
        assert_eq!(
            m.get("d").map(|n| format!("{n:?}")),
            Some("Number(1000.0)".into())
        );
    }
}
