//! splitmix64 (Steele, Lea & Flood, OOPSLA 2014): the one mixer sigbench derives its
//! seeded values from — `{token}` names and random file data, state seeds and the pages a
//! state touches, the plan's order, simulations and permutation tests. Tiny, well known,
//! cheap enough for the timed window; the C reproducer writes the same function.

/// splitmix64's step and finaliser: `z`'s bits spread over all of the result.
pub fn mix64(z: u64) -> u64 {
    let mut z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seeded generator (splitmix64's sequence from its state): simulations draw the same
/// values every run, and a permutation test gives the same p-value every time.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        let z = mix64(self.0);
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_splitmix64() {
        // The reference sequence of splitmix64 seeded with 0 (Vigna's splitmix64.c).
        let mut r = Rng(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(mix64(0), 0xe220_a839_7b1d_cdaf);
    }
}
