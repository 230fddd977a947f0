//! The core's own random streams: small, fast and identical on every platform and version, so
//! that a seed means the same units and parameters in every run.

/// SplitMix64 step: used to spread (seed, attachment, stream) into generator state.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256** (Blackman & Vigna).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

/// Independent streams of one attachment: what a unit does must not depend on timing draws.
#[derive(Clone, Copy)]
pub enum Stream {
    Work = 1,
    Timing = 2,
}

impl Rng {
    pub fn new(seed: u64, attachment: u32, stream: Stream) -> Rng {
        let mut mix = seed;
        let base = splitmix64(&mut mix);
        let mut state =
            base ^ ((attachment as u64) << 8 | stream as u64).wrapping_mul(0xD605_7F3C_F1A1_8E69);
        let mut s = [0u64; 4];
        for word in &mut s {
            *word = splitmix64(&mut state);
        }
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in 0..span (span > 0), without modulo bias (Lemire's method).
    #[inline]
    pub fn below(&mut self, span: u64) -> u64 {
        let mut m = (self.next_u64() as u128) * (span as u128);
        if (m as u64) < span {
            let threshold = span.wrapping_neg() % span;
            while (m as u64) < threshold {
                m = (self.next_u64() as u128) * (span as u128);
            }
        }
        (m >> 64) as u64
    }

    /// Uniform integer in a..=b (a <= b), the whole i64 range included.
    #[inline]
    pub fn between(&mut self, a: i64, b: i64) -> i64 {
        let span = (b as i128 - a as i128 + 1) as u128;
        if span > u64::MAX as u128 {
            return self.next_u64() as i64;
        }
        (a as i128 + self.below(span as u64) as i128) as i64
    }

    /// Negative-exponential draw with the given mean, capped at `cap` times the mean.
    pub fn exponential(&mut self, mean: f64, cap: f64) -> f64 {
        if mean <= 0.0 {
            return 0.0;
        }
        let u = 1.0 - self.next_f64(); // (0, 1]: ln never sees 0
        (-u.ln() * mean).min(mean * cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut a = Rng::new(42, 1, Stream::Work);
        let mut b = Rng::new(42, 1, Stream::Work);
        let mut c = Rng::new(42, 2, Stream::Work);
        let mut d = Rng::new(42, 1, Stream::Timing);
        let first: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        assert_eq!(first, (0..8).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_ne!(first, (0..8).map(|_| c.next_u64()).collect::<Vec<_>>());
        assert_ne!(first, (0..8).map(|_| d.next_u64()).collect::<Vec<_>>());
    }

    #[test]
    fn between_covers_its_range_evenly() {
        let mut rng = Rng::new(7, 1, Stream::Work);
        let mut seen = [0u32; 10];
        for _ in 0..100_000 {
            let v = rng.between(1, 10);
            assert!((1..=10).contains(&v));
            seen[(v - 1) as usize] += 1;
        }
        for count in seen {
            assert!((9_000..11_000).contains(&count), "{seen:?}");
        }
        assert_eq!(rng.between(5, 5), 5);
        let _ = rng.between(i64::MIN, i64::MAX);
        assert!((-3..=-1).contains(&rng.between(-3, -1)));
    }

    #[test]
    fn exponential_mean_and_cap() {
        let mut rng = Rng::new(3, 1, Stream::Timing);
        let n = 200_000;
        let draws: Vec<f64> = (0..n).map(|_| rng.exponential(2.0, 10.0)).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        assert!((mean - 2.0).abs() < 0.05, "{mean}");
        assert!(draws.iter().all(|&d| (0.0..=20.0).contains(&d)));
        assert_eq!(rng.exponential(0.0, 10.0), 0.0);
    }
}
