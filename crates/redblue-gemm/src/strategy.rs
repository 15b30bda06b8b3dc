//! [`Strategy`]: how COSMA splits the `m × n × k` iteration space, as plain data that prints and
//! parses as `pm2,sk2,pn2`.

use std::fmt;
use std::str::FromStr;

/// A dimension of the iteration space of `C (m × n) = A (m × k) · B (k × n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// Rows of `A` and `C`.
    M,
    /// Columns of `B` and `C`.
    N,
    /// The reduction dimension: columns of `A`, rows of `B`.
    K,
}

impl Dim {
    /// The three dimensions in the order `m, n, k`.
    pub const ALL: [Dim; 3] = [Dim::M, Dim::N, Dim::K];

    /// Index into `[m, n, k]` arrays.
    pub fn index(self) -> usize {
        match self {
            Dim::M => 0,
            Dim::N => 1,
            Dim::K => 2,
        }
    }

    fn letter(self) -> char {
        ['m', 'n', 'k'][self.index()]
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// Whether a step hands the parts to different ranks or to the same ranks one after another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// The ranks are divided into `divisor` groups, one per part, working at the same time.
    Parallel,
    /// The same ranks do the parts one after another (to fit a memory limit).
    Sequential,
}

/// One split of the iteration space: `divisor` parts along `dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// Parallel or sequential.
    pub kind: StepKind,
    /// The dimension split.
    pub dim: Dim,
    /// The number of parts, at least 2.
    pub divisor: usize,
}

impl Step {
    /// A parallel step.
    pub fn parallel(dim: Dim, divisor: usize) -> Self {
        Step {
            kind: StepKind::Parallel,
            dim,
            divisor,
        }
    }

    /// A sequential step.
    pub fn sequential(dim: Dim, divisor: usize) -> Self {
        Step {
            kind: StepKind::Sequential,
            dim,
            divisor,
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            StepKind::Parallel => 'p',
            StepKind::Sequential => 's',
        };
        write!(f, "{kind}{}{}", self.dim.letter(), self.divisor)
    }
}

/// Why a strategy string or step list was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StrategyError {
    /// A token is not `p|s`, `m|n|k`, then a number (the offending token).
    Syntax(String),
    /// A divisor below 2 (the offending step, as written).
    Divisor(String),
    /// The parallel divisors multiply to more ranks than fit in `usize`.
    TooManyRanks,
}

impl fmt::Display for StrategyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrategyError::Syntax(t) => write!(
                f,
                "strategy step `{t}` is not p|s (parallel|sequential), m|n|k, then a divisor, \
                 e.g. `pm2`"
            ),
            StrategyError::Divisor(t) => write!(f, "strategy step `{t}`: the divisor must be ≥ 2"),
            StrategyError::TooManyRanks => write!(f, "strategy: the parallel divisors overflow"),
        }
    }
}

impl std::error::Error for StrategyError {}

/// COSMA's splitting strategy: a list of [`Step`]s applied in order, from the whole problem on
/// all ranks down to one local multiplication per rank and sequential part.
///
/// Printed and parsed as comma-separated steps, `p|s` + `m|n|k` + divisor: `pm2,sk2,pn2`
/// splits `m` over two groups of ranks, then `k` into two halves done one after the other,
/// then `n` over two groups — 4 ranks. The empty string is the strategy of one rank with no
/// split.
///
/// # Examples
/// ```
/// use redblue_gemm::{Dim, Step, Strategy};
///
/// let s: Strategy = "pm2,sk2,pn2".parse()?;
/// assert_eq!(s.ranks(), 4);
/// assert_eq!(s.grid(), [2, 2, 1]);
/// assert_eq!(s.steps()[1], Step::sequential(Dim::K, 2));
/// assert_eq!(s.to_string(), "pm2,sk2,pn2");
/// # Ok::<(), redblue_gemm::StrategyError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Strategy {
    steps: Vec<Step>,
}

impl Strategy {
    /// A strategy from its steps.
    ///
    /// # Errors
    /// [`StrategyError::Divisor`] if a divisor is below 2; [`StrategyError::TooManyRanks`] if
    /// the parallel divisors overflow `usize`.
    pub fn new(steps: Vec<Step>) -> Result<Self, StrategyError> {
        if let Some(bad) = steps.iter().find(|s| s.divisor < 2) {
            return Err(StrategyError::Divisor(bad.to_string()));
        }
        steps
            .iter()
            .filter(|s| s.kind == StepKind::Parallel)
            .try_fold(1usize, |acc, s| acc.checked_mul(s.divisor))
            .ok_or(StrategyError::TooManyRanks)?;
        Ok(Strategy { steps })
    }

    /// The steps, outermost first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The number of ranks the strategy uses: the product of the parallel divisors.
    pub fn ranks(&self) -> usize {
        self.product(StepKind::Parallel).iter().product()
    }

    /// The process grid `[p_m, p_n, p_k]`: the product of the parallel divisors per dimension.
    pub fn grid(&self) -> [usize; 3] {
        self.product(StepKind::Parallel)
    }

    /// The product of the sequential divisors per dimension `[m, n, k]` (`usize::MAX` if it
    /// overflows).
    pub fn sequential_parts(&self) -> [usize; 3] {
        self.product(StepKind::Sequential)
    }

    fn product(&self, kind: StepKind) -> [usize; 3] {
        let mut out = [1usize; 3];
        for s in self.steps.iter().filter(|s| s.kind == kind) {
            // Saturating: sequential divisors are not bounded by `Strategy::new`.
            out[s.dim.index()] = out[s.dim.index()].saturating_mul(s.divisor);
        }
        out
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl FromStr for Strategy {
    type Err = StrategyError;

    fn from_str(text: &str) -> Result<Self, StrategyError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Strategy::default());
        }
        let steps = text
            .split(',')
            .map(|token| {
                let token = token.trim();
                let syntax = || StrategyError::Syntax(token.to_string());
                let mut chars = token.chars();
                let kind = match chars.next() {
                    Some('p') => StepKind::Parallel,
                    Some('s') => StepKind::Sequential,
                    _ => return Err(syntax()),
                };
                let dim = match chars.next() {
                    Some('m') => Dim::M,
                    Some('n') => Dim::N,
                    Some('k') => Dim::K,
                    _ => return Err(syntax()),
                };
                let digits = chars.as_str();
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(syntax());
                }
                let divisor = digits.parse().map_err(|_| syntax())?;
                Ok(Step { kind, dim, divisor })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Strategy::new(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{any, prop_assert_eq, proptest};

    #[test]
    fn parses_and_prints() {
        let s: Strategy = "pm2, sk3,pn5".parse().unwrap();
        assert_eq!(
            s.steps(),
            &[
                Step::parallel(Dim::M, 2),
                Step::sequential(Dim::K, 3),
                Step::parallel(Dim::N, 5)
            ]
        );
        assert_eq!(s.to_string(), "pm2,sk3,pn5");
        assert_eq!(
            (s.ranks(), s.grid(), s.sequential_parts()),
            (10, [2, 5, 1], [1, 1, 3])
        );
        let empty: Strategy = "".parse().unwrap();
        assert_eq!((empty.ranks(), empty.to_string()), (1, String::new()));
    }

    #[test]
    fn refuses_bad_tokens_with_the_token_named() {
        for (text, token) in [
            ("pm2,xk2", "xk2"),
            ("pq2", "pq2"),
            ("pm", "pm"),
            ("pm-2", "pm-2"),
        ] {
            assert_eq!(
                text.parse::<Strategy>(),
                Err(StrategyError::Syntax(token.into()))
            );
        }
        assert_eq!(
            "pm1".parse::<Strategy>(),
            Err(StrategyError::Divisor("pm1".into()))
        );
        assert_eq!(
            "pm0".parse::<Strategy>(),
            Err(StrategyError::Divisor("pm0".into()))
        );
        let huge = format!("pm{},pn{}", usize::MAX / 2, 3);
        assert_eq!(huge.parse::<Strategy>(), Err(StrategyError::TooManyRanks));
        let message = "pm2,xk2".parse::<Strategy>().unwrap_err().to_string();
        assert!(message.contains("xk2"), "{message}");
    }

    proptest! {
        #[test]
        fn display_then_parse_is_the_identity(
            raw in proptest::collection::vec((any::<bool>(), 0usize..3, 2usize..40), 0..8)
        ) {
            let steps: Vec<Step> = raw
                .into_iter()
                .map(|(par, d, divisor)| Step {
                    kind: if par { StepKind::Parallel } else { StepKind::Sequential },
                    dim: Dim::ALL[d],
                    divisor,
                })
                .collect();
            let s = Strategy::new(steps).unwrap();
            prop_assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
        }
    }
}
