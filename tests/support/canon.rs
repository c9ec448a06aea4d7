//! Canonical JSON printing, matching the reference TypeScript oracle byte for byte.
//!
//! The oracle does `JSON.parse`, sorts object keys at every depth by UTF-16 code
//! units (JavaScript's default sort), and prints with `JSON.stringify` without
//! whitespace. This module reproduces that with std only:
//!
//! * strings are kept as UTF-16 code units so lone surrogates survive;
//! * duplicate keys keep the last value (as `JSON.parse` does);
//! * numbers are parsed with correct rounding and printed as
//!   ECMA-262 `Number::toString` prints them (`1e400` becomes `null`);
//! * invalid UTF-8 inside strings is replaced by U+FFFD (maximal subparts);
//! * parsing, printing and freeing are iterative, so nesting depth is bounded
//!   only by memory, not by the call stack.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Parses `json` (a complete JSON text, UTF-8; may contain \uXXXX escapes including lone surrogates)
/// and returns it in canonical form. Err(message) if it is not valid JSON.
pub fn canonicalize(json: &[u8]) -> Result<String, String> {
    let value = parse(json)?;
    let mut out = String::with_capacity(json.len());
    write_value(&value, &mut out);
    dispose(value);
    Ok(out)
}

/// `json` (an object) in canonical form, with the members whose names
/// `replaced` selects taken from `whole` (an object it stands in for).
pub fn canonicalize_with(
    json: &[u8],
    whole: &[u8],
    replaced: impl Fn(&str) -> bool,
) -> Result<String, String> {
    let mut value = parse(json)?;
    let mut whole = parse(whole)?;
    if let (Value::Obj(map), Value::Obj(src)) = (&mut value, &mut whole) {
        for (k, v) in map.iter_mut() {
            if replaced(&String::from_utf16_lossy(k))
                && let Some(real) = src.remove(k)
            {
                dispose(std::mem::replace(v, real));
            }
        }
    }
    let mut out = String::with_capacity(json.len());
    write_value(&value, &mut out);
    dispose(value);
    dispose(whole);
    Ok(out)
}

/// `json` in canonical form, its top-level members edited first (if it
/// is an object): those `remove(name, is_null)` selects are removed, and
/// each of `defaults` (a name and its JSON) is added where absent.
pub fn canonicalize_edited(
    json: &[u8],
    remove: impl Fn(&str, bool) -> bool,
    defaults: &[(&str, &str)],
) -> Result<String, String> {
    let mut value = parse(json)?;
    if let Value::Obj(map) = &mut value {
        let gone: Vec<Vec<u16>> = map
            .iter()
            .filter(|(k, v)| remove(&String::from_utf16_lossy(k), matches!(v, Value::Null)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in gone {
            if let Some(v) = map.remove(&k) {
                dispose(v);
            }
        }
        for (name, default) in defaults {
            let key: Vec<u16> = name.encode_utf16().collect();
            if let std::collections::btree_map::Entry::Vacant(slot) = map.entry(key) {
                slot.insert(parse(default.as_bytes())?);
            }
        }
    }
    let mut out = String::with_capacity(json.len());
    write_value(&value, &mut out);
    dispose(value);
    Ok(out)
}

/// JavaScript's Number::toString / JSON.stringify for a finite double; NaN/±Infinity -> "null"; -0 -> "0".
pub fn js_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    // Shortest round-trip digits and decimal exponent, e.g. "1.2345678901234568e29".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i64 = exp.parse().unwrap_or(0);
    break_tie_to_even(x.abs(), &mut digits, exp);
    // ECMA-262: value = 0.d1d2...dk * 10^n
    let k = digits.len() as i64;
    let n = exp + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        for _ in 0..(n - k) {
            out.push('0');
        }
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        for _ in 0..(-n) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let e = n - 1;
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        let _ = write!(out, "{}", e.unsigned_abs());
    }
    out
}

/// ECMA-262 wants, among the shortest digit strings that round-trip, the one closest
/// to `x`, and on a tie the one whose last digit is even. Rust's shortest formatting
/// rounds such ties up (`2186508808636893.25` -> `...893.3`, JavaScript prints
/// `...893.2`). `digits` (k digits, first digit at 10^exp) is replaced by its
/// neighbour when `x` lies exactly halfway between them and the neighbour is even.
fn break_tie_to_even(ax: f64, digits: &mut String, exp: i64) {
    let k = digits.len();
    let Ok(d) = digits.parse::<u128>() else {
        return;
    };
    // The midpoints are (10d ± 5) * 10^j. For j >= 0 such a midpoint can never be a
    // double whose neighbours also round-trip, and for a double it needs 5^-j | 10d±5.
    let j = exp - k as i64;
    if !(-40..0).contains(&j) {
        return;
    }
    let neg_j = j.unsigned_abs() as u32;
    let pow5 = 5u128.pow(neg_j);
    // 2^j as an exact double (j >= -40 is far from subnormal).
    let pow2 = f64::from_bits(((1023 + j) as u64) << 52);
    for (mid, alt) in [(10 * d - 5, d - 1), (10 * d + 5, d + 1)] {
        if alt % 2 != 0 || mid % pow5 != 0 {
            continue;
        }
        let q = mid / pow5; // midpoint == q * 2^j
        let qf = q as f64;
        if qf as u128 != q || qf * pow2 != ax {
            continue;
        }
        let alt_digits = alt.to_string();
        if alt_digits.len() != k {
            continue;
        }
        let round_trips = format!("{alt_digits}e{}", exp + 1 - k as i64)
            .parse::<f64>()
            .is_ok_and(|v| v == ax);
        if round_trips {
            *digits = alt_digits.trim_end_matches('0').to_owned();
            return;
        }
    }
}

/// JSON.stringify's string escaping for a sequence of UTF-16 code units (lone surrogates allowed), quotes included.
pub fn js_string(units: &[u16]) -> String {
    let mut out = String::with_capacity(units.len() + 2);
    push_js_string(units, &mut out);
    out
}

fn push_js_string(units: &[u16], out: &mut String) {
    out.push('"');
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        i += 1;
        match u {
            0x22 => out.push_str("\\\""),
            0x5C => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            0x0A => out.push_str("\\n"),
            0x0D => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0x00..=0x1F => {
                let _ = write!(out, "\\u{u:04x}");
            }
            0xD800..=0xDBFF => {
                let next = units.get(i).copied();
                match next {
                    Some(lo @ 0xDC00..=0xDFFF) => {
                        i += 1;
                        let cp =
                            0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(lo) - 0xDC00);
                        out.push(char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER));
                    }
                    _ => {
                        let _ = write!(out, "\\u{u:04x}");
                    }
                }
            }
            0xDC00..=0xDFFF => {
                let _ = write!(out, "\\u{u:04x}");
            }
            _ => out.push(char::from_u32(u32::from(u)).unwrap_or(char::REPLACEMENT_CHARACTER)),
        }
    }
    out.push('"');
}

/// A parsed JSON value. Strings are UTF-16 code units.
enum Value {
    Null,
    Bool(bool),
    Num(f64),
    Str(Vec<u16>),
    Arr(Vec<Value>),
    Obj(BTreeMap<Vec<u16>, Value>),
}

/// Drops a value without recursion (deep trees would otherwise recurse in `drop`).
fn dispose(value: Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Arr(items) => stack.extend(items),
            Value::Obj(map) => stack.extend(map.into_values()),
            _ => {}
        }
    }
}

/// An open container while parsing.
enum Frame {
    Arr(Vec<Value>),
    Obj(BTreeMap<Vec<u16>, Value>, Vec<u16>),
}

fn dispose_frames(frames: Vec<Frame>) {
    for frame in frames {
        match frame {
            Frame::Arr(items) => dispose(Value::Arr(items)),
            Frame::Obj(map, _) => dispose(Value::Obj(map)),
        }
    }
}

fn parse(json: &[u8]) -> Result<Value, String> {
    let mut p = Parser { s: json, pos: 0 };
    let mut frames = Vec::new();
    match p.parse_document(&mut frames) {
        Ok(v) => Ok(v),
        Err(e) => {
            dispose_frames(frames);
            Err(e)
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn err<T>(&self, what: &str) -> Result<T, String> {
        match self.s.get(self.pos) {
            Some(b) => Err(format!("{what} at byte {} (found 0x{b:02x})", self.pos)),
            None => Err(format!("{what} at byte {} (end of input)", self.pos)),
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// Skips whitespace, then expects a string key and a colon.
    fn parse_key(&mut self) -> Result<Vec<u16>, String> {
        self.skip_ws();
        if self.peek() != Some(b'"') {
            return self.err("expected string key");
        }
        let key = self.parse_string()?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return self.err("expected ':'");
        }
        self.pos += 1;
        Ok(key)
    }

    fn parse_document(&mut self, frames: &mut Vec<Frame>) -> Result<Value, String> {
        'value: loop {
            // Parse the start of a value; containers push a frame and loop.
            self.skip_ws();
            let mut v = match self.peek() {
                Some(b'{') => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        Value::Obj(BTreeMap::new())
                    } else {
                        let key = self.parse_key()?;
                        frames.push(Frame::Obj(BTreeMap::new(), key));
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        Value::Arr(Vec::new())
                    } else {
                        frames.push(Frame::Arr(Vec::new()));
                        continue 'value;
                    }
                }
                Some(b'"') => Value::Str(self.parse_string()?),
                Some(b't') => self.parse_literal(b"true", Value::Bool(true))?,
                Some(b'f') => self.parse_literal(b"false", Value::Bool(false))?,
                Some(b'n') => self.parse_literal(b"null", Value::Null)?,
                Some(b'-' | b'0'..=b'9') => Value::Num(self.parse_number()?),
                _ => return self.err("expected a value"),
            };
            // A value is complete: attach it to the enclosing containers.
            loop {
                let Some(top) = frames.last_mut() else {
                    self.skip_ws();
                    if self.pos != self.s.len() {
                        dispose(v);
                        return self.err("trailing characters after JSON value");
                    }
                    return Ok(v);
                };
                match top {
                    Frame::Arr(items) => {
                        items.push(v);
                        self.skip_ws();
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                continue 'value;
                            }
                            Some(b']') => {
                                self.pos += 1;
                                let Some(Frame::Arr(items)) = frames.pop() else {
                                    unreachable!("top frame is an array");
                                };
                                v = Value::Arr(items);
                            }
                            _ => return self.err("expected ',' or ']'"),
                        }
                    }
                    Frame::Obj(map, key) => {
                        if let Some(old) = map.insert(std::mem::take(key), v) {
                            dispose(old);
                        }
                        self.skip_ws();
                        match self.peek() {
                            Some(b',') => {
                                self.pos += 1;
                                *key = self.parse_key()?;
                                continue 'value;
                            }
                            Some(b'}') => {
                                self.pos += 1;
                                let Some(Frame::Obj(map, _)) = frames.pop() else {
                                    unreachable!("top frame is an object");
                                };
                                v = Value::Obj(map);
                            }
                            _ => return self.err("expected ',' or '}'"),
                        }
                    }
                }
            }
        }
    }

    fn parse_literal(&mut self, word: &[u8], v: Value) -> Result<Value, String> {
        if self.s[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(v)
        } else {
            self.err("invalid literal")
        }
    }

    fn parse_number(&mut self) -> Result<f64, String> {
        let start = self.pos;
        let s = self.s;
        let digits = |pos: &mut usize| {
            let from = *pos;
            while let Some(b'0'..=b'9') = s.get(*pos) {
                *pos += 1;
            }
            *pos - from
        };
        if s.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match s.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                digits(&mut self.pos);
            }
            _ => return self.err("expected digit"),
        }
        if s.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if digits(&mut self.pos) == 0 {
                return self.err("expected digit after '.'");
            }
        }
        if let Some(b'e' | b'E') = s.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = s.get(self.pos) {
                self.pos += 1;
            }
            if digits(&mut self.pos) == 0 {
                return self.err("expected digit in exponent");
            }
        }
        let text = std::str::from_utf8(&s[start..self.pos]).map_err(|e| e.to_string())?;
        text.parse::<f64>()
            .map_err(|e| format!("bad number {text:?} at byte {start}: {e}"))
    }

    /// Parses a string starting at the opening quote; returns its UTF-16 code units.
    fn parse_string(&mut self) -> Result<Vec<u16>, String> {
        self.pos += 1; // opening quote
        let mut units = Vec::new();
        loop {
            // A run of raw bytes up to the next quote, backslash or control character.
            let start = self.pos;
            while let Some(&b) = self.s.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            if start < self.pos {
                // Quote and backslash are ASCII, so they never split a UTF-8 sequence.
                units.extend(String::from_utf8_lossy(&self.s[start..self.pos]).encode_utf16());
            }
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(units);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let unit = match self.peek() {
                        Some(b'"') => 0x22,
                        Some(b'\\') => 0x5C,
                        Some(b'/') => 0x2F,
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0C,
                        Some(b'n') => 0x0A,
                        Some(b'r') => 0x0D,
                        Some(b't') => 0x09,
                        Some(b'u') => {
                            let mut u: u16 = 0;
                            for i in 1..=4 {
                                let d = match self.s.get(self.pos + i) {
                                    Some(&c @ b'0'..=b'9') => c - b'0',
                                    Some(&c @ b'a'..=b'f') => c - b'a' + 10,
                                    Some(&c @ b'A'..=b'F') => c - b'A' + 10,
                                    _ => {
                                        self.pos += i;
                                        return self.err("invalid \\u escape");
                                    }
                                };
                                u = (u << 4) | u16::from(d);
                            }
                            self.pos += 4;
                            u
                        }
                        _ => return self.err("invalid escape"),
                    };
                    self.pos += 1;
                    units.push(unit);
                }
                Some(_) => return self.err("control character in string"),
                None => return self.err("unterminated string"),
            }
        }
    }
}

/// Printing work items for the iterative writer.
enum Work<'a> {
    Val(&'a Value),
    Key(&'a [u16]),
    Char(char),
}

fn write_value(root: &Value, out: &mut String) {
    let mut stack = vec![Work::Val(root)];
    while let Some(w) = stack.pop() {
        match w {
            Work::Char(c) => out.push(c),
            Work::Key(k) => {
                push_js_string(k, out);
                out.push(':');
            }
            Work::Val(v) => match v {
                Value::Null => out.push_str("null"),
                Value::Bool(true) => out.push_str("true"),
                Value::Bool(false) => out.push_str("false"),
                Value::Num(x) => out.push_str(&js_number(*x)),
                Value::Str(s) => push_js_string(s, out),
                Value::Arr(items) => {
                    out.push('[');
                    stack.push(Work::Char(']'));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(Work::Val(item));
                        if i > 0 {
                            stack.push(Work::Char(','));
                        }
                    }
                }
                Value::Obj(map) => {
                    out.push('{');
                    stack.push(Work::Char('}'));
                    // BTreeMap<Vec<u16>, _> iterates in UTF-16 code-unit order (JS default sort).
                    for (i, (k, item)) in map.iter().enumerate().rev() {
                        stack.push(Work::Val(item));
                        stack.push(Work::Key(k));
                        if i > 0 {
                            stack.push(Work::Char(','));
                        }
                    }
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        canonicalize(s.as_bytes()).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn key_order() {
        assert_eq!(canon(r#"{"9":1,"10":2}"#), r#"{"10":2,"9":1}"#);
        assert_eq!(
            canon(r#"{"\uffff":1,"\ud83d\ude00":2}"#),
            "{\"\u{1F600}\":2,\"\u{FFFF}\":1}"
        );
        assert_eq!(
            canon("{\"\u{e9}\":1,\"a\":2,\"Z\":3}"),
            "{\"Z\":3,\"a\":2,\"\u{e9}\":1}"
        );
        assert_eq!(canon(r#"{"ab":1,"a":2,"":3}"#), r#"{"":3,"a":2,"ab":1}"#);
        assert_eq!(
            canon(r#" { "b" : [ 1 , { "d" : 1 , "c" : 2 } ] , "a" : { } } "#),
            r#"{"a":{},"b":[1,{"c":2,"d":1}]}"#
        );
    }

    #[test]
    fn duplicates_last_wins() {
        assert_eq!(canon(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(canon(r#"{"a":{"x":1},"a":[2]}"#), r#"{"a":[2]}"#);
        assert_eq!(canon(r#"{"\u0061":1,"a":2}"#), r#"{"a":2}"#);
    }

    #[test]
    fn escapes() {
        assert_eq!(canon(r#""\"\\\/\b\f\n\r\t""#), r#""\"\\/\b\f\n\r\t""#);
        assert_eq!(
            canon(r#""\u0000\u0001\u001f\u001F\u0020\u007f""#),
            "\"\\u0000\\u0001\\u001f\\u001f \u{7f}\""
        );
        assert_eq!(
            canon(r#""\u2028\u2029\u00e9\u4e2d/""#),
            "\"\u{2028}\u{2029}\u{e9}\u{4e2d}/\""
        );
        assert_eq!(canon("\"\u{2028}\u{1F600}\""), "\"\u{2028}\u{1F600}\"");
        // Raw control characters are not allowed in strings.
        assert!(canonicalize(b"\"\x01\"").is_err());
        assert!(canonicalize(b"\"\\x\"").is_err());
        assert!(canonicalize(b"\"\\u12g4\"").is_err());
    }

    #[test]
    fn surrogates() {
        assert_eq!(canon(r#""\ud83d\ude00""#), "\"\u{1F600}\"");
        assert_eq!(canon(r#""\ud83d""#), r#""\ud83d""#);
        assert_eq!(canon(r#""\uDE00""#), r#""\ude00""#);
        assert_eq!(canon(r#""\ude00\ud83d""#), r#""\ude00\ud83d""#);
        assert_eq!(canon(r#""\ud83dx\ude00""#), r#""\ud83dx\ude00""#);
        assert_eq!(canon(r#""\ud83d\ud83d\ude00""#), "\"\\ud83d\u{1F600}\"");
        assert_eq!(js_string(&[0xD800]), r#""\ud800""#);
        assert_eq!(js_string(&[0xDBFF, 0xDFFF]), "\"\u{10FFFF}\"");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(canonicalize(b"\"a\xffb\"").unwrap(), "\"a\u{FFFD}b\"");
        // Maximal subparts: a truncated 3-byte sequence is one U+FFFD.
        assert_eq!(canonicalize(b"\"\xe2\x82\"").unwrap(), "\"\u{FFFD}\"");
        assert_eq!(
            canonicalize(b"\"\xf0\x9f\x98\\n\xc3\"").unwrap(),
            "\"\u{FFFD}\\n\u{FFFD}\""
        );
        assert_eq!(
            canonicalize(b"\"\xed\xa0\x80\"").unwrap(),
            "\"\u{FFFD}\u{FFFD}\u{FFFD}\""
        );
    }

    #[test]
    fn numbers() {
        let table = [
            ("0", "0"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("1", "1"),
            ("1.0", "1"),
            ("2.0", "2"),
            ("1e3", "1000"),
            ("1E+3", "1000"),
            ("1.5", "1.5"),
            ("100", "100"),
            ("1e20", "100000000000000000000"),
            ("1e21", "1e+21"),
            ("123456789012345678901234567890", "1.2345678901234568e+29"),
            ("0.000001", "0.000001"),
            ("1e-7", "1e-7"),
            ("1.7e12", "1700000000000"),
            ("9007199254740993", "9007199254740992"),
            ("1e400", "null"),
            ("-1e400", "null"),
            ("5e-324", "5e-324"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("0.1", "0.1"),
            ("-0.5", "-0.5"),
            ("123e-20", "1.23e-18"),
            ("1e-400", "0"),
            ("-1e-400", "0"),
            ("123.456", "123.456"),
            ("-1.5e-7", "-1.5e-7"),
            ("0.0000015", "0.0000015"),
            ("1.5e300", "1.5e+300"),
            ("12345678901234567890123", "1.2345678901234568e+22"),
            // Ties between two shortest candidates go to the even last digit.
            ("2186508808636893.25", "2186508808636893.2"),
            ("2186508808636893.75", "2186508808636893.8"),
            ("1125899906842625.25", "1125899906842625.2"),
            ("3888669292272.40625", "3888669292272.4062"),
            ("3888669292272.46875", "3888669292272.4688"),
            ("-1573240121221825.25", "-1573240121221825.2"),
        ];
        for (lit, want) in table {
            assert_eq!(canon(lit), want, "literal {lit}");
            assert_eq!(canon(&format!("[{lit}]")), format!("[{want}]"));
        }
        assert_eq!(js_number(f64::NAN), "null");
        assert_eq!(js_number(f64::INFINITY), "null");
        assert_eq!(js_number(f64::NEG_INFINITY), "null");
        assert_eq!(js_number(-0.0), "0");
        for bad in [
            "01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "--1", "1.e5",
        ] {
            assert!(canonicalize(bad.as_bytes()).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn literals_and_structure() {
        assert_eq!(
            canon(" [true,false,null,\"x\",[],{}]\r\n\t"),
            r#"[true,false,null,"x",[],{}]"#
        );
        for bad in [
            "",
            " ",
            "[",
            "]",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\"}",
            "{a:1}",
            "[1 2]",
            "tru",
            "nul",
            "[1]x",
            "1 2",
            "\u{feff}1",
            "[1]\u{0b}",
            "{\"a\":1",
            "\"abc",
        ] {
            assert!(canonicalize(bad.as_bytes()).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn deep_nesting() {
        for depth in [5000usize, 200_000] {
            let mut s = "[".repeat(depth);
            s.push_str("{\"k\":1}");
            s.push_str(&"]".repeat(depth));
            assert_eq!(canon(&s), s);
            let mut o = "{\"a\":".repeat(depth);
            o.push('0');
            o.push_str(&"}".repeat(depth));
            assert_eq!(canon(&o), o);
            // Errors deep inside must not overflow either.
            let unclosed = "[".repeat(depth);
            assert!(canonicalize(unclosed.as_bytes()).is_err());
            let mut dup = String::from("{\"a\":");
            dup.push_str(&"[".repeat(depth));
            dup.push_str(&"]".repeat(depth));
            dup.push_str(",\"a\":1}");
            assert_eq!(canon(&dup), r#"{"a":1}"#);
        }
    }
}
