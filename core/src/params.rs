//! Parameter generators of the workload contract and the seeded unit draw.

use serde_json::Value;

use crate::rng::Rng;

const ALPHANUMERIC: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/// A VARCHAR parameter cannot be longer than this (32 KiB less the length word).
pub const MAX_TEXT: usize = 32_765;

#[derive(Debug, Clone, PartialEq)]
pub enum Gen {
    Uniform(i64, i64),
    NuRand {
        a: i64,
        x: i64,
        y: i64,
        c: i64,
    },
    Home(i64),
    Seed,
    ConstInt(i64),
    ConstFloat(f64),
    ConstText(Vec<u8>),
    ConstNull,
    Text(usize),
    Attachment,
    /// One of the values, each equally likely (a value listed twice is drawn twice as often).
    Choice(Vec<Choice>),
}

/// A value of `choice`: all numbers or all strings, any of them null.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    Int(i64),
    Float(f64),
    Text(Vec<u8>),
    Null,
}

/// How a generator's values are bound (docs/core-api.md: INT64, DOUBLE, VARYING).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bind {
    Int,
    Float,
    Text { max_len: usize },
    Null,
}

fn int_arg(args: &[Value], i: usize, kind: &str) -> Result<i64, String> {
    match args.get(i) {
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| format!("{kind}: argument {} must be an integer, not {n}", i + 1)),
        Some(other) => Err(format!(
            "{kind}: argument {} must be an integer, not {other}",
            i + 1
        )),
        None => Err(format!("{kind}: argument {} is missing", i + 1)),
    }
}

impl Gen {
    pub fn parse(kind: &str, args: &[Value]) -> Result<Gen, String> {
        let expect = |n: usize, usage: &str| {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!(
                    "{kind} takes {n} argument(s): {usage}; got {}",
                    args.len()
                ))
            }
        };
        match kind {
            "uniform" => {
                expect(2, "uniform(a, b)")?;
                let (a, b) = (int_arg(args, 0, kind)?, int_arg(args, 1, kind)?);
                if a > b {
                    return Err(format!("uniform({a}, {b}): a must not exceed b"));
                }
                Ok(Gen::Uniform(a, b))
            }
            "nurand" => {
                expect(4, "nurand(A, x, y, C) with the run constant C chosen by the caller")?;
                let a = int_arg(args, 0, kind)?;
                let (x, y, c) = (int_arg(args, 1, kind)?, int_arg(args, 2, kind)?, int_arg(args, 3, kind)?);
                if a < 0 || x > y || c < 0 {
                    return Err(format!("nurand({a}, {x}, {y}, {c}): need A >= 0, x <= y, C >= 0"));
                }
                Ok(Gen::NuRand { a, x, y, c })
            }
            "home" => {
                expect(1, "home(n)")?;
                let n = int_arg(args, 0, kind)?;
                if n < 1 {
                    return Err(format!("home({n}): n must be at least 1"));
                }
                Ok(Gen::Home(n))
            }
            "seed" => expect(0, "seed()").map(|_| Gen::Seed),
            "attachment" => expect(0, "attachment()").map(|_| Gen::Attachment),
            "string" => {
                expect(1, "string(n)")?;
                let n = int_arg(args, 0, kind)?;
                if n < 0 || n as usize > MAX_TEXT {
                    return Err(format!("string({n}): n must be 0..{MAX_TEXT}"));
                }
                Ok(Gen::Text(n as usize))
            }
            "const" => {
                expect(1, "const(v)")?;
                match &args[0] {
                    Value::Null => Ok(Gen::ConstNull),
                    Value::Bool(b) => Ok(Gen::ConstInt(*b as i64)),
                    Value::Number(n) => Ok(match n.as_i64() {
                        Some(i) => Gen::ConstInt(i),
                        None => Gen::ConstFloat(n.as_f64().unwrap_or(0.0)),
                    }),
                    Value::String(s) if s.len() <= MAX_TEXT => Ok(Gen::ConstText(s.as_bytes().to_vec())),
                    Value::String(_) => Err(format!("const: strings are limited to {MAX_TEXT} bytes")),
                    other => Err(format!("const: {other} is not an integer, float or string")),
                }
            }
            "choice" => parse_choice(args),
            other => Err(format!(
                "unknown generator {other:?} (uniform, nurand, home, seed, const, string, attachment, choice)"
            )),
        }
    }

    pub fn bind(&self) -> Bind {
        match self {
            Gen::ConstFloat(_) => Bind::Float,
            Gen::ConstText(t) => Bind::Text { max_len: t.len() },
            Gen::Text(n) => Bind::Text { max_len: *n },
            Gen::ConstNull => Bind::Null,
            Gen::Choice(values) => {
                let longest = values.iter().filter_map(|v| match v {
                    Choice::Text(t) => Some(t.len()),
                    _ => None,
                });
                if let Some(max_len) = longest.max() {
                    Bind::Text { max_len }
                } else if values.iter().any(|v| matches!(v, Choice::Float(_))) {
                    Bind::Float
                } else if values.iter().any(|v| matches!(v, Choice::Int(_))) {
                    Bind::Int
                } else {
                    Bind::Null
                }
            }
            _ => Bind::Int,
        }
    }

    /// The next value of an integer generator.
    #[inline]
    pub fn int(&self, rng: &mut Rng, attachment: u32) -> i64 {
        match *self {
            Gen::Uniform(a, b) => rng.between(a, b),
            Gen::NuRand { a, x, y, c } => nurand(rng, a, x, y, c),
            Gen::Home(n) => (attachment as i64 - 1) % n + 1,
            Gen::Seed => (rng.next_u64() >> 1) as i64,
            Gen::ConstInt(v) => v,
            Gen::Attachment => attachment as i64,
            _ => 0,
        }
    }

    /// Writes the next value of a text generator into `out`; returns its length.
    #[inline]
    pub fn text(&self, rng: &mut Rng, out: &mut [u8]) -> usize {
        match self {
            Gen::Text(n) => {
                for byte in &mut out[..*n] {
                    *byte = ALPHANUMERIC[rng.below(62) as usize];
                }
                *n
            }
            Gen::ConstText(t) => {
                out[..t.len()].copy_from_slice(t);
                t.len()
            }
            _ => 0,
        }
    }
}

fn parse_choice(args: &[Value]) -> Result<Gen, String> {
    if args.is_empty() {
        return Err("choice takes one value or more: choice(v1, v2, ...)".into());
    }
    let mut values = Vec::with_capacity(args.len());
    for arg in args {
        values.push(match arg {
            Value::Null => Choice::Null,
            Value::Bool(b) => Choice::Int(*b as i64),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Choice::Int(i),
                None => Choice::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) if s.len() <= MAX_TEXT => Choice::Text(s.as_bytes().to_vec()),
            Value::String(_) => {
                return Err(format!("choice: strings are limited to {MAX_TEXT} bytes"))
            }
            other => return Err(format!("choice: {other} is not a number, a string or null")),
        });
    }
    let texts = values.iter().any(|v| matches!(v, Choice::Text(_)));
    let numbers = values
        .iter()
        .any(|v| matches!(v, Choice::Int(_) | Choice::Float(_)));
    if texts && numbers {
        return Err("choice: values must be all numbers or all strings (null allowed)".into());
    }
    if values.iter().any(|v| matches!(v, Choice::Float(_))) {
        // One bind type for the parameter: integers among floats are bound as floats.
        for value in &mut values {
            if let Choice::Int(i) = *value {
                *value = Choice::Float(i as f64);
            }
        }
    }
    Ok(Gen::Choice(values))
}

/// TPC-C 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
#[inline]
pub fn nurand(rng: &mut Rng, a: i64, x: i64, y: i64, c: i64) -> i64 {
    let r1 = rng.between(0, a);
    let r2 = rng.between(x, y);
    (((r1 | r2) as i128 + c as i128).rem_euclid((y - x + 1) as i128) + x as i128) as i64
}

/// The weighted, seeded unit draw: index into `cumulative` (ascending weight sums).
#[inline]
pub fn choose_unit(rng: &mut Rng, cumulative: &[f64]) -> usize {
    if cumulative.len() == 1 {
        // One unit: no draw, so adding a unit to a workload is the only thing that shifts streams.
        return 0;
    }
    let total = *cumulative.last().expect("at least one unit");
    let point = rng.next_f64() * total;
    cumulative
        .iter()
        .position(|&c| point < c)
        .unwrap_or(cumulative.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;
    use serde_json::json;

    fn parse(kind: &str, args: Value) -> Result<Gen, String> {
        Gen::parse(kind, args.as_array().unwrap())
    }

    #[test]
    fn generators_parse_and_bind() {
        assert_eq!(parse("uniform", json!([1, 10])), Ok(Gen::Uniform(1, 10)));
        assert_eq!(parse("uniform", json!([1.0, 2])), Ok(Gen::Uniform(1, 2)));
        assert!(parse("uniform", json!([10, 1])).is_err());
        assert!(parse("uniform", json!([1]))
            .unwrap_err()
            .contains("uniform(a, b)"));
        assert!(parse("nurand", json!([1023, 1, 3000]))
            .unwrap_err()
            .contains("run constant"));
        assert_eq!(
            parse("const", json!(["abc"])).unwrap().bind(),
            Bind::Text { max_len: 3 }
        );
        assert_eq!(parse("const", json!([2.5])).unwrap().bind(), Bind::Float);
        assert_eq!(parse("const", json!([7])).unwrap().bind(), Bind::Int);
        assert_eq!(parse("const", json!([null])).unwrap().bind(), Bind::Null);
        assert_eq!(
            parse("string", json!([5])).unwrap().bind(),
            Bind::Text { max_len: 5 }
        );
        assert!(parse("gaussian", json!([]))
            .unwrap_err()
            .contains("unknown generator"));
        assert_eq!(
            parse("choice", json!(["ab", null, "xyz"])).unwrap().bind(),
            Bind::Text { max_len: 3 }
        );
        assert_eq!(
            parse("choice", json!([1, 2.5])).unwrap(),
            Gen::Choice(vec![Choice::Float(1.0), Choice::Float(2.5)])
        );
        assert_eq!(parse("choice", json!([1, null])).unwrap().bind(), Bind::Int);
        assert_eq!(parse("choice", json!([null])).unwrap().bind(), Bind::Null);
        assert!(parse("choice", json!([]))
            .unwrap_err()
            .contains("one value or more"));
        assert!(parse("choice", json!(["a", 1]))
            .unwrap_err()
            .contains("all numbers or all strings"));
    }

    #[test]
    fn values() {
        let mut rng = Rng::new(1, 3, Stream::Work);
        assert_eq!(Gen::Home(2).int(&mut rng, 3), 1);
        assert_eq!(Gen::Home(2).int(&mut rng, 4), 2);
        assert_eq!(Gen::Attachment.int(&mut rng, 4), 4);
        assert_eq!(Gen::ConstInt(-9).int(&mut rng, 1), -9);
        for _ in 0..1000 {
            assert!(Gen::Seed.int(&mut rng, 1) >= 0);
            let v = Gen::Uniform(-5, 5).int(&mut rng, 1);
            assert!((-5..=5).contains(&v));
        }
        let mut buffer = [0u8; 8];
        let n = Gen::Text(8).text(&mut rng, &mut buffer);
        assert_eq!(n, 8);
        assert!(buffer.iter().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(
            Gen::ConstText(b"xy".to_vec()).text(&mut rng, &mut buffer),
            2
        );
        assert_eq!(&buffer[..2], b"xy");
    }

    #[test]
    fn nurand_is_in_range_and_skewed() {
        let mut rng = Rng::new(9, 1, Stream::Work);
        let mut hits = vec![0u32; 3001];
        for _ in 0..300_000 {
            let v = nurand(&mut rng, 1023, 1, 3000, 259);
            assert!((1..=3000).contains(&v));
            hits[v as usize] += 1;
        }
        let max = *hits.iter().max().unwrap();
        let min = *hits[1..].iter().min().unwrap();
        // Non-uniform: the most frequent value is drawn many times more often than the rarest.
        assert!(max > 4 * min.max(1), "max {max} min {min}");
        // Same C, same seed → same values; another C shifts them.
        let mut a = Rng::new(9, 1, Stream::Work);
        let mut b = Rng::new(9, 1, Stream::Work);
        assert_eq!(
            nurand(&mut a, 255, 0, 999, 7),
            nurand(&mut b, 255, 0, 999, 7)
        );
        let mut c = Rng::new(9, 1, Stream::Work);
        let mut d = Rng::new(9, 1, Stream::Work);
        let shifted = (nurand(&mut c, 255, 0, 999, 7) + 1) % 1000;
        assert_eq!(nurand(&mut d, 255, 0, 999, 8), shifted);
    }

    #[test]
    fn unit_draw_follows_weights() {
        let mut rng = Rng::new(11, 1, Stream::Work);
        let cumulative = [45.0, 88.0, 92.0, 96.0, 100.0];
        let mut counts = [0u32; 5];
        for _ in 0..100_000 {
            counts[choose_unit(&mut rng, &cumulative)] += 1;
        }
        assert!((44_000..46_000).contains(&counts[0]), "{counts:?}");
        assert!((42_000..44_000).contains(&counts[1]), "{counts:?}");
        assert!((3_500..4_500).contains(&counts[4]), "{counts:?}");
        // A zero-weight unit is never drawn.
        let zero = [1.0, 1.0, 2.0];
        assert!((0..10_000).all(|_| choose_unit(&mut rng, &zero) != 1));
        let mut r1 = Rng::new(11, 2, Stream::Work);
        let mut r2 = Rng::new(11, 2, Stream::Work);
        let s1: Vec<usize> = (0..100)
            .map(|_| choose_unit(&mut r1, &cumulative))
            .collect();
        let s2: Vec<usize> = (0..100)
            .map(|_| choose_unit(&mut r2, &cumulative))
            .collect();
        assert_eq!(s1, s2);
    }
}
