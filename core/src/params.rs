//! Parameter generators of the workload contract, the values a unit draws once and uses again
//! (slots: a `let`, a stored `$n`), integer arithmetic over them, and the seeded unit draw.

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
    /// sysbench 1.0's default distribution over a..=b (--rand-type=special).
    Special(i64, i64),
    /// sysbench.rand.string: '#' a digit, '@' a lower-case letter, other bytes as they are.
    Template(Template),
    /// The attachment's earlier draws of this parameter: counter `n` of the unit's draws.
    Sequence(usize),
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
            "sequence" => expect(0, "sequence()").map(|_| Gen::Sequence(0)),
            "special" => {
                expect(2, "special(a, b)")?;
                let (a, b) = (int_arg(args, 0, kind)?, int_arg(args, 1, kind)?);
                if a > b {
                    return Err(format!("special({a}, {b}): a must not exceed b"));
                }
                Ok(Gen::Special(a, b))
            }
            "template" => {
                expect(1, "template('###-@@@')")?;
                match &args[0] {
                    Value::String(s) if s.len() <= MAX_TEXT => Ok(Gen::Template(Template::new(s.as_bytes()))),
                    Value::String(_) => Err(format!("template: at most {MAX_TEXT} bytes")),
                    other => Err(format!("template: {other} is not a string")),
                }
            }
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
                "unknown generator {other:?} (uniform, nurand, home, seed, const, string, attachment, \
                 choice, sequence, special, template)"
            )),
        }
    }

    pub fn bind(&self) -> Bind {
        match self {
            Gen::ConstFloat(_) => Bind::Float,
            Gen::ConstText(t) => Bind::Text { max_len: t.len() },
            Gen::Text(n) => Bind::Text { max_len: *n },
            Gen::Template(t) => Bind::Text {
                max_len: t.shape.len(),
            },
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

    /// The next value of an integer generator; `counters` are the unit's `sequence()` counters.
    #[inline]
    pub fn int(&self, rng: &mut Rng, attachment: u32, counters: &mut [i64]) -> i64 {
        match *self {
            Gen::Uniform(a, b) => rng.between(a, b),
            Gen::NuRand { a, x, y, c } => nurand(rng, a, x, y, c),
            Gen::Home(n) => (attachment as i64 - 1) % n + 1,
            Gen::Seed => (rng.next_u64() >> 1) as i64,
            Gen::ConstInt(v) => v,
            Gen::Attachment => attachment as i64,
            Gen::Special(a, b) => special(rng, a, b),
            Gen::Sequence(n) => {
                let value = counters[n];
                counters[n] = value.wrapping_add(1);
                value
            }
            // A choice of whole numbers in arithmetic (the reader refuses one that may draw null).
            Gen::Choice(ref values) => match values[rng.below(values.len() as u64) as usize] {
                Choice::Int(v) => v,
                _ => 0,
            },
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
            Gen::Template(t) => t.fill(rng, out),
            Gen::Choice(values) => match &values[rng.below(values.len() as u64) as usize] {
                Choice::Text(t) => {
                    out[..t.len()].copy_from_slice(t);
                    t.len()
                }
                _ => 0,
            },
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

/// A `template('###-@@')`, compiled once into its literal bytes and its runs of digits and of
/// letters. Filling it copies the literals, then takes the digits from a pool of 18 per uniform
/// draw of 0..10^18 (written two at a time) and the letters 13 per draw of 0..26^13 — each digit
/// and letter exactly uniform; a sysbench c value (110 digits) takes 7 draws, not 110.
///
/// A pool is drawn when the first of its digits (letters) is needed, so the digit and letter
/// draws of a value interleave in an order fixed by the shape: it is worked out here, once, and
/// a template of at most `SMALL_DRAWS` draws of each kind makes them all first, into one stream
/// per kind, then copies each run from its stream — the same draws in the same order, so the
/// same values, without the per-run bookkeeping of the pools (`fill_pooled`, kept for larger
/// templates).
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub shape: Vec<u8>,
    /// (start, length, digits: true / letters: false)
    runs: Vec<(usize, usize, bool)>,
    /// Where each run's bytes start in the stream of its kind (digit or letter ordinal).
    from: Vec<usize>,
    /// The draws one value makes, in order (true: 18 digits, false: 13 letters); empty when
    /// the template takes more than `SMALL_DRAWS` of a kind (then `fill_pooled`).
    draws: Vec<bool>,
}

/// Pairs of decimal digits, "00" to "99" (128 entries: an index below 128 needs no check).
const PAIRS: [[u8; 2]; 128] = {
    let mut pairs = [[b'?'; 2]; 128];
    let mut i = 0;
    while i < 100 {
        pairs[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    pairs
};
const DIGITS_PER_DRAW: usize = 18;
const LETTERS_PER_DRAW: usize = 13;
/// Draws of each kind a value may take for the stream fill: 144 digits, 104 letters.
const SMALL_DRAWS: usize = 8;
/// 2^57 / 10^8 rounded up: `v * NINE_DIGITS_SCALE` holds v / 10^8 above bit 57 and the rest as
/// a binary fraction exact enough for the next eight digits, two per multiplication by 100, for
/// every v < 10^9 (checked for all of them once; the tests check a sample and the edges).
const NINE_DIGITS_SCALE: u64 = 1_441_151_881;
const FRACTION: u64 = (1 << 57) - 1;

/// Nine decimal digits of `value` (< 10^9), most significant first.
#[inline(always)]
fn nine_digits(out: &mut [u8; 9], value: u32) {
    let mut y = value as u64 * NINE_DIGITS_SCALE;
    out[0] = b'0' + (y >> 57) as u8;
    for k in [1, 3, 5, 7] {
        y = (y & FRACTION) * 100;
        let pair = PAIRS[(y >> 57) as usize];
        out[k] = pair[0];
        out[k + 1] = pair[1];
    }
}

/// Copies a run of a template into its place: one of 8 to 16 bytes (sysbench's are 11) as two
/// overlapping 8-byte moves, any other as a slice copy.
#[inline(always)]
fn copy_run(to: &mut [u8], from: &[u8]) {
    let n = to.len();
    if (8..=16).contains(&n) && from.len() == n {
        to[..8].copy_from_slice(&from[..8]);
        to[n - 8..].copy_from_slice(&from[n - 8..]);
    } else {
        to.copy_from_slice(from);
    }
}

/// The 18 digits of one draw of 0..10^18, most significant first.
#[inline(always)]
fn draw_digits(rng: &mut Rng, out: &mut [u8; DIGITS_PER_DRAW]) {
    let value = rng.below(1_000_000_000_000_000_000);
    let (high, low) = out.split_at_mut(9);
    nine_digits(
        high.try_into().expect("9 bytes"),
        (value / 1_000_000_000) as u32,
    );
    nine_digits(
        low.try_into().expect("9 bytes"),
        (value % 1_000_000_000) as u32,
    );
}

/// The 13 letters of one draw of 0..26^13, least significant first.
#[inline(always)]
fn draw_letters(rng: &mut Rng, out: &mut [u8; LETTERS_PER_DRAW]) {
    let mut value = rng.below(2_481_152_873_203_736_576); // 26^13
    for letter in out.iter_mut() {
        *letter = b'a' + (value % 26) as u8;
        value /= 26;
    }
}

impl Template {
    pub fn new(shape: &[u8]) -> Template {
        let mut runs = Vec::new();
        let mut i = 0;
        while i < shape.len() {
            let kind = shape[i];
            let len = shape[i..].iter().take_while(|&&b| b == kind).count();
            if kind == b'#' || kind == b'@' {
                runs.push((i, len, kind == b'#'));
            }
            i += len;
        }
        // A draw of a kind is made when its stream reaches a multiple of the draw's size.
        let (mut from, mut draws) = (Vec::with_capacity(runs.len()), Vec::new());
        let mut streams = [0usize; 2]; // letters, digits so far
        for &(_, len, is_digits) in &runs {
            let per = if is_digits {
                DIGITS_PER_DRAW
            } else {
                LETTERS_PER_DRAW
            };
            let at = streams[is_digits as usize];
            from.push(at);
            for _ in at.div_ceil(per)..(at + len).div_ceil(per) {
                draws.push(is_digits);
            }
            streams[is_digits as usize] = at + len;
        }
        let digit_draws = draws.iter().filter(|&&d| d).count();
        if digit_draws > SMALL_DRAWS || draws.len() - digit_draws > SMALL_DRAWS {
            draws.clear();
        }
        Template {
            shape: shape.to_vec(),
            runs,
            from,
            draws,
        }
    }

    /// Writes one value into `out` (at least as long as the template); returns its length.
    #[inline]
    pub fn fill(&self, rng: &mut Rng, out: &mut [u8]) -> usize {
        if self.draws.is_empty() && !self.runs.is_empty() {
            return self.fill_pooled(rng, out);
        }
        let mut digits = [0u8; SMALL_DRAWS * DIGITS_PER_DRAW];
        let mut letters = [0u8; SMALL_DRAWS * LETTERS_PER_DRAW];
        let (mut d, mut l) = (digits.as_mut_slice(), letters.as_mut_slice());
        for &is_digits in &self.draws {
            if is_digits {
                let (block, rest) = std::mem::take(&mut d).split_at_mut(DIGITS_PER_DRAW);
                draw_digits(rng, block.try_into().expect("18 bytes"));
                d = rest;
            } else {
                let (block, rest) = std::mem::take(&mut l).split_at_mut(LETTERS_PER_DRAW);
                draw_letters(rng, block.try_into().expect("13 bytes"));
                l = rest;
            }
        }
        let len = self.shape.len();
        out[..len].copy_from_slice(&self.shape);
        for (&(start, run, is_digits), &from) in self.runs.iter().zip(&self.from) {
            let stream = if is_digits { &digits[..] } else { &letters[..] };
            copy_run(&mut out[start..start + run], &stream[from..from + run]);
        }
        len
    }

    /// `fill` for a template of more draws than the stream buffers hold: each pool drawn when
    /// its first byte is needed.
    fn fill_pooled(&self, rng: &mut Rng, out: &mut [u8]) -> usize {
        let len = self.shape.len();
        out[..len].copy_from_slice(&self.shape);
        let mut digits = [0u8; DIGITS_PER_DRAW];
        let mut letters = [0u8; LETTERS_PER_DRAW];
        let (mut digits_left, mut letters_left) = (0, 0);
        for &(start, run, is_digits) in &self.runs {
            let (mut at, end) = (start, start + run);
            while at < end {
                let (pool, left, size) = if is_digits {
                    if digits_left == 0 {
                        draw_digits(rng, &mut digits);
                        digits_left = DIGITS_PER_DRAW;
                    }
                    (&digits[..], &mut digits_left, DIGITS_PER_DRAW)
                } else {
                    if letters_left == 0 {
                        draw_letters(rng, &mut letters);
                        letters_left = LETTERS_PER_DRAW;
                    }
                    (&letters[..], &mut letters_left, LETTERS_PER_DRAW)
                };
                let take = (*left).min(end - at);
                let from = size - *left;
                out[at..at + take].copy_from_slice(&pool[from..from + take]);
                *left -= take;
                at += take;
            }
        }
        len
    }
}

/// sysbench 1.0's "special" distribution with its defaults (12 iterations, 1 % of the range,
/// 75 % of the values): three in four values fall in the middle 1 % of a..b, the others are the
/// mean of 12 uniform draws over it (sb_rand_special, truncated to an integer as there).
#[inline]
pub fn special(rng: &mut Rng, a: i64, b: i64) -> i64 {
    let span = (b - a) as f64;
    let draw = rng.next_f64();
    if draw * span * 4.0 < span {
        let mut sum = 0.0;
        for _ in 0..12 {
            sum += rng.next_f64();
        }
        return a + (sum * span / 12.0) as i64;
    }
    a + (draw * (span * 0.01 + 1.0) + span / 2.0 - span * 0.005) as i64
}

/// Where a parameter's or a let's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Gen(Gen),
    /// The value kept in a slot: a let of the unit or statement, or a stored parameter (`$n`).
    Slot(usize),
    /// A slot's value plus a constant (`id + 99`, `$1 - 1`): the commonest arithmetic, without
    /// the expression machine.
    SlotPlus(usize, i64),
    /// Integer arithmetic in reverse Polish order.
    Expr(Vec<Tok>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Const(i64),
    Slot(usize),
    Gen(Gen),
    Add,
    Sub,
    Mul,
    Neg,
    /// Division by a non-zero constant, rounding down.
    Div(i64),
    /// Remainder of a division by a non-zero constant, with the divisor's sign.
    Rem(i64),
}

/// The most values an expression keeps at once (the contract's limit).
pub const STACK: usize = 16;

/// One attachment's draws for one unit: slot values and `sequence()` counters. Integers (and a
/// float's bits) live in `ints`; text in `texts`, `text_len` long; `nulls` marks a slot whose
/// value is null (a `choice` that drew null, `const(null)`, a slot copied from one).
pub struct Draws {
    pub ints: Vec<i64>,
    pub texts: Vec<Vec<u8>>,
    pub text_len: Vec<usize>,
    pub nulls: Vec<bool>,
    pub counters: Vec<i64>,
}

impl Draws {
    pub fn new(slot_binds: &[Bind], counters: usize) -> Draws {
        Draws {
            ints: vec![0; slot_binds.len()],
            texts: slot_binds
                .iter()
                .map(|b| match b {
                    Bind::Text { max_len } => vec![0u8; *max_len],
                    _ => Vec::new(),
                })
                .collect(),
            text_len: vec![0; slot_binds.len()],
            nulls: slot_binds.iter().map(|b| *b == Bind::Null).collect(),
            counters: vec![0; counters],
        }
    }

    /// Draws `source` into `slot`, bound as `bind`.
    #[inline(always)]
    pub fn fill(
        &mut self,
        slot: usize,
        source: &Source,
        bind: Bind,
        rng: &mut Rng,
        attachment: u32,
    ) {
        if let Source::Gen(Gen::Choice(values)) = source {
            let picked = &values[rng.below(values.len() as u64) as usize];
            self.keep_choice(slot, picked);
            return;
        }
        self.nulls[slot] = match source {
            Source::Slot(n) => self.nulls[*n],
            _ => bind == Bind::Null,
        };
        match bind {
            Bind::Int => {
                let value = source.int(rng, attachment, self);
                self.ints[slot] = value;
            }
            Bind::Text { .. } => {
                let mut text = std::mem::take(&mut self.texts[slot]);
                self.text_len[slot] = source.text(rng, &mut text, self);
                self.texts[slot] = text;
            }
            Bind::Float => {
                let value = source.float(self);
                self.ints[slot] = value.to_bits() as i64;
            }
            Bind::Null => {}
        }
    }

    /// Keeps a value a `choice` drew in `slot` (its text cut to the slot's buffer, which the
    /// choice's longest value sized).
    #[inline]
    pub fn keep_choice(&mut self, slot: usize, value: &Choice) {
        self.nulls[slot] = matches!(value, Choice::Null);
        match value {
            Choice::Int(v) => self.ints[slot] = *v,
            Choice::Float(v) => self.ints[slot] = v.to_bits() as i64,
            Choice::Text(t) => {
                let len = t.len().min(self.texts[slot].len());
                self.texts[slot][..len].copy_from_slice(&t[..len]);
                self.text_len[slot] = len;
            }
            Choice::Null => self.text_len[slot] = 0,
        }
    }
}

impl Source {
    /// How the value is bound; `slot_binds`: the binds of the slots numbered so far.
    pub fn bind(&self, slot_binds: &[Bind]) -> Bind {
        match self {
            Source::Gen(g) => g.bind(),
            Source::Slot(n) => slot_binds[*n],
            Source::SlotPlus(..) | Source::Expr(_) => Bind::Int,
        }
    }

    /// Always inlined: a slot's value (the same value again) is then a load where it is bound,
    /// cheaper than the call a fresh draw needs.
    #[inline(always)]
    pub fn int(&self, rng: &mut Rng, attachment: u32, draws: &mut Draws) -> i64 {
        match self {
            Source::Gen(g) => g.int(rng, attachment, &mut draws.counters),
            Source::Slot(n) => draws.ints[*n],
            Source::SlotPlus(n, c) => draws.ints[*n].wrapping_add(*c),
            Source::Expr(tokens) => evaluate(tokens, rng, attachment, draws),
        }
    }

    /// Writes the value of a text source into `out`; returns its length.
    #[inline]
    pub fn text(&self, rng: &mut Rng, out: &mut [u8], draws: &Draws) -> usize {
        match self {
            Source::Gen(g) => g.text(rng, out),
            Source::Slot(n) => {
                let len = draws.text_len[*n];
                out[..len].copy_from_slice(&draws.texts[*n][..len]);
                len
            }
            Source::SlotPlus(..) | Source::Expr(_) => 0,
        }
    }

    /// The value of a float source (a constant, or a slot that holds one).
    pub fn float(&self, draws: &Draws) -> f64 {
        match self {
            Source::Gen(Gen::ConstFloat(v)) => *v,
            Source::Slot(n) => f64::from_bits(draws.ints[*n] as u64),
            _ => 0.0,
        }
    }
}

#[inline]
fn evaluate(tokens: &[Tok], rng: &mut Rng, attachment: u32, draws: &mut Draws) -> i64 {
    // Small expressions are the rule: a stack of 4 on the hot path, the contract's 16 when needed.
    if tokens.len() <= 7 {
        return evaluate_on::<4>(tokens, rng, attachment, draws);
    }
    evaluate_on::<STACK>(tokens, rng, attachment, draws)
}

/// An expression of at most 2N - 1 tokens never holds more than N values at once.
#[inline]
fn evaluate_on<const N: usize>(
    tokens: &[Tok],
    rng: &mut Rng,
    attachment: u32,
    draws: &mut Draws,
) -> i64 {
    let mut stack = [0i64; N];
    let mut top = 0;
    for token in tokens {
        match token {
            Tok::Const(v) => {
                stack[top] = *v;
                top += 1;
            }
            Tok::Slot(n) => {
                stack[top] = draws.ints[*n];
                top += 1;
            }
            Tok::Gen(g) => {
                stack[top] = g.int(rng, attachment, &mut draws.counters);
                top += 1;
            }
            Tok::Neg => stack[top - 1] = stack[top - 1].wrapping_neg(),
            Tok::Div(d) => stack[top - 1] = floor_div(stack[top - 1], *d),
            Tok::Rem(d) => stack[top - 1] = floor_rem(stack[top - 1], *d),
            Tok::Add | Tok::Sub | Tok::Mul => {
                top -= 1;
                let (left, right) = (stack[top - 1], stack[top]);
                stack[top - 1] = match token {
                    Tok::Add => left.wrapping_add(right),
                    Tok::Sub => left.wrapping_sub(right),
                    _ => left.wrapping_mul(right),
                };
            }
        }
    }
    stack[0]
}

/// Division rounding down (Python's //); i64::MIN / -1 wraps.
#[inline]
fn floor_div(a: i64, d: i64) -> i64 {
    let q = a.wrapping_div(d);
    if a.wrapping_rem(d) != 0 && (a < 0) != (d < 0) {
        q - 1
    } else {
        q
    }
}

/// The remainder with the divisor's sign (Python's %), so that a / d * d + a % d == a.
#[inline]
fn floor_rem(a: i64, d: i64) -> i64 {
    let r = a.wrapping_rem(d);
    if r != 0 && (r < 0) != (d < 0) {
        r + d
    } else {
        r
    }
}

/// A parameter or let of the core config: a generator `{"kind", "args"}`, `{"kind": "slot",
/// "args": [n]}`, or `{"kind": "expr", "args": [tokens]}`; `slots`: how many slots exist before
/// it (it may refer to those only); `counters`: the unit's `sequence()` counters so far.
pub fn parse_source(
    value: &Value,
    slot_binds: &[Bind],
    counters: &mut usize,
) -> Result<Source, String> {
    let (kind, args) = kind_and_args(value)?;
    let slot = |value: &Value| -> Result<usize, String> {
        let n = value
            .as_u64()
            .ok_or_else(|| format!("a slot must be a whole number, not {value}"))?
            as usize;
        if n >= slot_binds.len() {
            return Err(format!(
                "slot {n} is not filled before it is used ({} slots so far)",
                slot_binds.len()
            ));
        }
        Ok(n)
    };
    match kind {
        "slot" => match args {
            [n] => Ok(Source::Slot(slot(n)?)),
            _ => Err("slot takes one argument: the slot's number".into()),
        },
        "expr" => {
            let mut tokens = Vec::with_capacity(args.len());
            let mut depth: usize = 0;
            for token in args {
                let (tok, change): (Tok, isize) = match token {
                    Value::Number(_) => (
                        Tok::Const(
                            token
                                .as_i64()
                                .ok_or_else(|| format!("expr: {token} is not a 64-bit integer"))?,
                        ),
                        1,
                    ),
                    Value::String(op) => match op.as_str() {
                        "+" => (Tok::Add, -1),
                        "-" => (Tok::Sub, -1),
                        "*" => (Tok::Mul, -1),
                        "neg" => (Tok::Neg, 0),
                        other => {
                            return Err(format!("expr: unknown operator {other:?} (+, -, *, neg)"))
                        }
                    },
                    Value::Object(map) if map.contains_key("slot") => {
                        let n = slot(&map["slot"])?;
                        if slot_binds[n] != Bind::Int {
                            return Err(format!("expr: slot {n} does not hold an integer"));
                        }
                        (Tok::Slot(n), 1)
                    }
                    Value::Object(map) if map.contains_key("div") || map.contains_key("rem") => {
                        let (key, make): (&str, fn(i64) -> Tok) = if map.contains_key("div") {
                            ("div", Tok::Div)
                        } else {
                            ("rem", Tok::Rem)
                        };
                        let d = map[key].as_i64().filter(|d| *d != 0).ok_or_else(|| {
                            format!(
                                "expr: {key} needs a whole number other than 0, not {}",
                                map[key]
                            )
                        })?;
                        (make(d), 0)
                    }
                    Value::Object(_) => {
                        let gen = numbered(parse_generator(token)?, counters);
                        let may_be_null = matches!(&gen, Gen::Choice(values)
                            if values.contains(&Choice::Null));
                        if gen.bind() != Bind::Int || may_be_null {
                            return Err(format!("expr: {token} is not an integer generator"));
                        }
                        (Tok::Gen(gen), 1)
                    }
                    other => return Err(format!("expr: {other} is not a token")),
                };
                let needed = if change < 0 {
                    2
                } else if matches!(tok, Tok::Neg | Tok::Div(_) | Tok::Rem(_)) {
                    1
                } else {
                    0
                };
                if depth < needed {
                    return Err("expr: an operator lacks an operand".into());
                }
                depth = (depth as isize + change) as usize;
                if depth > STACK {
                    return Err(format!("expr: more than {STACK} values at once"));
                }
                tokens.push(tok);
            }
            if depth != 1 {
                return Err(format!("expr: leaves {depth} values instead of one"));
            }
            Ok(slot_plus(&tokens).unwrap_or(Source::Expr(tokens)))
        }
        _ => Ok(Source::Gen(numbered(parse_generator(value)?, counters))),
    }
}

/// A slot plus or minus constants (`id + 99`, `$1 + 100 - 1`, `5 + $1`): one addition of their
/// sum, without the expression machine. Wrapping addition and subtraction are associative, so
/// the value is the one the tokens would compute, whatever it is.
fn slot_plus(tokens: &[Tok]) -> Option<Source> {
    let (n, mut offset, rest) = match tokens {
        [Tok::Slot(n), rest @ ..] => (*n, 0i64, rest),
        [Tok::Const(c), Tok::Slot(n), Tok::Add, rest @ ..] => (*n, *c, rest),
        _ => return None,
    };
    if rest.is_empty() && offset == 0 {
        return None; // a slot on its own: left as it is
    }
    for step in rest.chunks(2) {
        offset = match step {
            [Tok::Const(c), Tok::Add] => offset.wrapping_add(*c),
            [Tok::Const(c), Tok::Sub] => offset.wrapping_sub(*c),
            _ => return None,
        };
    }
    Some(Source::SlotPlus(n, offset))
}

fn kind_and_args(value: &Value) -> Result<(&str, &[Value]), String> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("a parameter needs a \"kind\": {value}"))?;
    let args = match value.get("args") {
        None => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(other) => return Err(format!("{kind}: args must be a list, not {other}")),
    };
    Ok((kind, args))
}

fn parse_generator(value: &Value) -> Result<Gen, String> {
    let (kind, args) = kind_and_args(value)?;
    Gen::parse(kind, args)
}

/// A `sequence()` gets the next counter of its unit.
fn numbered(gen: Gen, counters: &mut usize) -> Gen {
    match gen {
        Gen::Sequence(_) => {
            *counters += 1;
            Gen::Sequence(*counters - 1)
        }
        other => other,
    }
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
        assert_eq!(Gen::Home(2).int(&mut rng, 3, &mut []), 1);
        assert_eq!(Gen::Home(2).int(&mut rng, 4, &mut []), 2);
        assert_eq!(Gen::Attachment.int(&mut rng, 4, &mut []), 4);
        assert_eq!(Gen::ConstInt(-9).int(&mut rng, 1, &mut []), -9);
        for _ in 0..1000 {
            assert!(Gen::Seed.int(&mut rng, 1, &mut []) >= 0);
            let v = Gen::Uniform(-5, 5).int(&mut rng, 1, &mut []);
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

    fn source(value: Value, binds: &[Bind]) -> Result<Source, String> {
        parse_source(&value, binds, &mut 0)
    }

    #[test]
    fn arithmetic_over_slots_and_generators() {
        let binds = [Bind::Int, Bind::Text { max_len: 4 }];
        let mut draws = Draws::new(&binds, 1);
        draws.ints[0] = -7;
        let mut rng = Rng::new(3, 1, Stream::Work);
        let eval = |tokens: Value, draws: &mut Draws, rng: &mut Rng| {
            source(json!({"kind": "expr", "args": tokens}), &binds)
                .unwrap()
                .int(rng, 2, draws)
        };
        // Python's // and %: rounding down, the remainder with the divisor's sign.
        assert_eq!(
            eval(json!([{"slot": 0}, {"div": 2}]), &mut draws, &mut rng),
            -4
        );
        assert_eq!(
            eval(json!([{"slot": 0}, {"rem": 2}]), &mut draws, &mut rng),
            1
        );
        assert_eq!(
            eval(json!([{"slot": 0}, {"rem": -2}]), &mut draws, &mut rng),
            -1
        );
        assert_eq!(eval(json!([7, {"div": -2}]), &mut draws, &mut rng), -4);
        assert_eq!(
            eval(json!([{"slot": 0}, "neg", 99, "+"]), &mut draws, &mut rng),
            106
        );
        // `id + 99` and `$1 - 5` skip the expression machine.
        let plus = source(
            json!({"kind": "expr", "args": [{"slot": 0}, 99, "+"]}),
            &binds,
        )
        .unwrap();
        assert_eq!(plus, Source::SlotPlus(0, 99));
        assert_eq!(plus.int(&mut rng, 2, &mut draws), 92);
        let minus = source(
            json!({"kind": "expr", "args": [{"slot": 0}, 5, "-"]}),
            &binds,
        )
        .unwrap();
        assert_eq!(minus.int(&mut rng, 2, &mut draws), -12);
        // sysbench's `$1 + ${range_size} - 1`, and `5 + $1 - 2 + 3`: folded into one constant.
        let folded =
            |tokens: Value| source(json!({"kind": "expr", "args": tokens}), &binds).unwrap();
        assert_eq!(
            folded(json!([{"slot": 0}, 100, "+", 1, "-"])),
            Source::SlotPlus(0, 99)
        );
        assert_eq!(
            folded(json!([5, {"slot": 0}, "+", 2, "-", 3, "+"])),
            Source::SlotPlus(0, 6)
        );
        // The folded sum is the value the machine computes, wrapping included.
        let extremes = [
            vec![
                Tok::Slot(0),
                Tok::Const(1),
                Tok::Add,
                Tok::Const(3),
                Tok::Sub,
            ],
            vec![
                Tok::Slot(0),
                Tok::Const(i64::MAX),
                Tok::Sub,
                Tok::Const(7),
                Tok::Add,
            ],
            vec![
                Tok::Const(i64::MIN),
                Tok::Slot(0),
                Tok::Add,
                Tok::Const(i64::MAX),
                Tok::Add,
                Tok::Const(1),
                Tok::Sub,
            ],
        ];
        for tokens in &extremes {
            let fast = slot_plus(tokens).expect("folds");
            for value in [i64::MIN, -7, 0, 9, i64::MAX] {
                draws.ints[0] = value;
                let machine = evaluate(tokens, &mut rng, 2, &mut draws);
                assert_eq!(fast.int(&mut rng, 2, &mut draws), machine);
            }
        }
        // Anything else stays with the machine.
        assert!(slot_plus(&[Tok::Slot(0)]).is_none());
        assert!(slot_plus(&[Tok::Slot(0), Tok::Const(2), Tok::Mul]).is_none());
        let twice = [
            Tok::Slot(0),
            Tok::Const(2),
            Tok::Add,
            Tok::Slot(0),
            Tok::Add,
        ];
        assert!(slot_plus(&twice).is_none());
        draws.ints[0] = -7;
        // A long expression runs on the full stack.
        let long = json!([1, 2, 3, 4, 5, 6, 7, 8, "+", "+", "+", "+", "+", "+", "+"]);
        assert_eq!(eval(long, &mut draws, &mut rng), 36);
        // (attachment() - 1) * 100 + sequence(): the counter is the unit's, per attachment.
        let seq = json!([{"kind": "attachment"}, 1, "-", 100, "*", {"kind": "sequence"}, "+"]);
        let compiled = source(json!({"kind": "expr", "args": seq}), &binds).unwrap();
        assert_eq!(compiled.int(&mut rng, 2, &mut draws), 100);
        assert_eq!(compiled.int(&mut rng, 2, &mut draws), 101);
        // Wrapping, never a panic.
        assert_eq!(
            eval(json!([i64::MAX, 1, "+"]), &mut draws, &mut rng),
            i64::MIN
        );
        assert_eq!(
            eval(json!([i64::MIN, {"div": -1}]), &mut draws, &mut rng),
            i64::MIN
        );
    }

    #[test]
    fn a_choice_kept_in_a_slot_keeps_its_nulls() {
        let mut counters = 0;
        let choice = parse_source(
            &json!({"kind": "choice", "args": ["ab", null]}),
            &[],
            &mut counters,
        )
        .unwrap();
        let binds = [choice.bind(&[])];
        assert_eq!(binds[0], Bind::Text { max_len: 2 });
        let copy =
            parse_source(&json!({"kind": "slot", "args": [0]}), &binds, &mut counters).unwrap();
        let binds = [binds[0], copy.bind(&binds)];
        let mut draws = Draws::new(&binds, counters);
        let mut rng = Rng::new(9, 1, Stream::Work);
        let (mut nulls, mut texts) = (0, 0);
        for _ in 0..200 {
            draws.fill(0, &choice, binds[0], &mut rng, 1);
            draws.fill(1, &copy, binds[1], &mut rng, 1);
            assert_eq!(draws.nulls[0], draws.nulls[1]);
            if draws.nulls[1] {
                nulls += 1;
            } else {
                assert_eq!(&draws.texts[1][..draws.text_len[1]], b"ab");
                texts += 1;
            }
        }
        assert!(nulls > 50 && texts > 50, "{nulls} nulls, {texts} texts");
        // const(null) is null in its slot from the start.
        let null = Draws::new(&[Bind::Null], 0);
        assert!(null.nulls[0]);
    }

    #[test]
    fn sources_are_checked_when_the_config_is_read() {
        let binds = [Bind::Int, Bind::Text { max_len: 4 }];
        let bad = |value: Value, fragment: &str| {
            let error = source(value, &binds).expect_err("should fail");
            assert!(error.contains(fragment), "{error}");
        };
        bad(
            json!({"kind": "slot", "args": [2]}),
            "not filled before it is used",
        );
        bad(
            json!({"kind": "expr", "args": [{"slot": 1}, 1, "+"]}),
            "does not hold an integer",
        );
        bad(
            json!({"kind": "expr", "args": [1, {"div": 0}]}),
            "other than 0",
        );
        bad(json!({"kind": "expr", "args": [1, 2]}), "leaves 2 values");
        bad(json!({"kind": "expr", "args": ["+"]}), "lacks an operand");
        bad(
            json!({"kind": "expr", "args": [{"kind": "string", "args": [3]}]}),
            "not an integer generator",
        );
        bad(
            json!({"kind": "expr", "args": [{"kind": "choice", "args": [1, null]}, 1, "+"]}),
            "not an integer generator",
        );
        let deep: Vec<Value> = (0..17).map(|_| json!(1)).collect();
        bad(json!({"kind": "expr", "args": deep}), "more than 16 values");
        assert_eq!(
            source(json!({"kind": "slot", "args": [1]}), &binds)
                .unwrap()
                .bind(&binds),
            Bind::Text { max_len: 4 }
        );
    }

    #[test]
    fn nine_digits_are_the_decimal_digits() {
        let check = |v: u32| {
            let mut out = [0u8; 9];
            nine_digits(&mut out, v);
            assert_eq!(out, *format!("{v:09}").as_bytes(), "{v}");
        };
        for v in (0..1_000_000_000).step_by(9_973) {
            check(v);
        }
        for k in 0..=9 {
            let p = 10u32.pow(k);
            for v in [p - 1, p, p + 1, p.saturating_mul(9).min(999_999_999)] {
                check(v.min(999_999_999));
            }
        }
        let mut rng = Rng::new(77, 1, Stream::Work);
        for _ in 0..100_000 {
            check(rng.below(1_000_000_000) as u32);
        }
    }

    #[test]
    fn the_stream_fill_draws_what_the_pooled_fill_draws() {
        // Random shapes of digit, letter and literal runs: both fills take the same draws in the
        // same order and write the same bytes; shapes past SMALL_DRAWS take the pooled fill.
        let mut shapes_rng = Rng::new(5, 1, Stream::Timing);
        let (mut streamed, mut pooled) = (0, 0);
        for _ in 0..3_000 {
            let mut shape = Vec::new();
            let target = shapes_rng.below(700) as usize;
            while shape.len() < target {
                let byte = [b'#', b'@', b'-', b'x'][shapes_rng.below(4) as usize];
                let run = 1 + shapes_rng.below(30) as usize;
                shape.extend(std::iter::repeat_n(byte, run));
            }
            let template = Template::new(&shape);
            if template.draws.is_empty() && !template.runs.is_empty() {
                pooled += 1;
            } else {
                streamed += 1;
            }
            let mut a = Rng::new(shape.len() as u64, 1, Stream::Work);
            let mut b = a.clone();
            let (mut x, mut y) = (vec![0u8; shape.len()], vec![0u8; shape.len()]);
            assert_eq!(template.fill(&mut a, &mut x), shape.len());
            assert_eq!(template.fill_pooled(&mut b, &mut y), shape.len());
            assert_eq!(x, y, "{}", String::from_utf8_lossy(&shape));
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert!(streamed > 300 && pooled > 300, "{streamed} {pooled}");
    }

    /// FNV-1a over the bytes given: a short fingerprint of many drawn values.
    fn fnv(hash: &mut u64, bytes: &[u8]) {
        for &b in bytes {
            *hash = (*hash ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The values a fixed seed draws are pinned (docs/workload-format.md, "Determinism": the same
    /// seed draws the same values): making a generator cheaper must not change one of them.
    #[test]
    fn a_fixed_seed_draws_the_pinned_values() {
        let shapes: [&[u8]; 6] = [
            b"###########-###########-###########-###########-###########-###########-###########-###########-###########-###########",
            b"###########-###########-###########-###########-###########",
            b"##-@@x",
            b"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@",
            b"#@#@##@@###@@@-####################@@@@@@@@@@@@@@@@@@@x#",
            b"",
        ];
        let templates: Vec<Gen> = shapes
            .iter()
            .map(|s| Gen::Template(Template::new(s)))
            .collect();
        let mut rng = Rng::new(12345, 1, Stream::Work);
        let mut out = [0u8; 128];
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        let mut first = Vec::new();
        for round in 0..300 {
            for template in &templates {
                let n = template.text(&mut rng, &mut out);
                fnv(&mut hash, &out[..n]);
                if round == 0 {
                    first.push(String::from_utf8(out[..n].to_vec()).unwrap());
                }
            }
            for gen in [
                Gen::Special(1, 10_000),
                Gen::Uniform(1, 10_000),
                Gen::Text(7),
            ] {
                if let Gen::Text(_) = gen {
                    let n = gen.text(&mut rng, &mut out);
                    fnv(&mut hash, &out[..n]);
                } else {
                    fnv(&mut hash, &gen.int(&mut rng, 1, &mut []).to_le_bytes());
                }
            }
        }
        assert_eq!(
            first[0],
            "07904325436-99240778444-58597759349-18377608606-97627327827-54336266347-\
             05149485827-54461024167-91124575793-51275789499"
        );
        assert_eq!(first[2], "90-kix");
        assert_eq!(
            first[4],
            "9h3t36ql325mxu-31651240386357258217dchacwvpkzddkjfmsdrx1"
        );
        assert_eq!(
            hash, 0xf112_51cf_9269_b7a8,
            "the values drawn for seed 12345 changed"
        );
    }

    #[test]
    fn special_puts_three_in_four_values_in_the_middle_percent() {
        let mut rng = Rng::new(5, 1, Stream::Work);
        let (a, b) = (1, 100_000);
        let middle = (49_500..=50_501).collect::<std::collections::HashSet<i64>>();
        let mut inside = 0;
        for _ in 0..100_000 {
            let v = special(&mut rng, a, b);
            assert!((a..=b).contains(&v));
            inside += middle.contains(&v) as u32;
        }
        // 75 % by construction, plus the few of the 12-term sums that land there.
        assert!((75_000..78_000).contains(&inside), "{inside}");
        let mut out = [0u8; 6];
        let n = Gen::Template(Template::new(b"##-@@x")).text(&mut rng, &mut out);
        assert_eq!(n, 6);
        assert!(out[0].is_ascii_digit() && out[1].is_ascii_digit() && out[2] == b'-');
        assert!(out[3].is_ascii_lowercase() && out[4].is_ascii_lowercase() && out[5] == b'x');
        // sysbench's c: ten groups of 11 digits; every digit (and letter) equally likely.
        let c = Template::new(
            b"###########-###########-###########-###########-###########-@@@@@@@@@@@@@",
        );
        let mut value = vec![0u8; c.shape.len()];
        let (mut digits, mut letters) = ([0u32; 10], [0u32; 26]);
        for _ in 0..2_000 {
            assert_eq!(c.fill(&mut rng, &mut value), 73);
            for (byte, shape) in value.iter().zip(&c.shape) {
                match shape {
                    b'#' => digits[(byte - b'0') as usize] += 1,
                    b'@' => letters[(byte - b'a') as usize] += 1,
                    _ => assert_eq!(byte, shape),
                }
            }
        }
        // 110,000 digits: 11,000 each expected; 26,000 letters: 1,000 each.
        assert!(
            digits.iter().all(|&n| (10_500..11_500).contains(&n)),
            "{digits:?}"
        );
        assert!(
            letters.iter().all(|&n| (850..1_150).contains(&n)),
            "{letters:?}"
        );
    }
}
