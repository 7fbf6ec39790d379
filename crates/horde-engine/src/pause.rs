//! Pauses (think times): how long each one lasts. Fixed, drawn from a distribution with the
//! user's random stream (so a seeded run repeats its pauses), or rendered from the session
//! (`pause_template`). How a user waits is the user's business (`VirtualUser::pause`).

use crate::session::expression::Template;
use rand::Rng;
use std::time::Duration;

pub enum PauseKind {
    Fixed(Duration),
    /// Uniform in [min, max].
    Uniform(Duration, Duration),
    /// Exponential of this mean.
    Exponential(Duration),
    /// Normal, a draw below 0 taken as 0.
    Normal {
        mean: Duration,
        std_dev: Duration,
    },
    /// A template rendering to a duration (seconds, or with a unit).
    Template(Box<TemplatePause>),
}

pub struct TemplatePause {
    pub duration: Template,
    /// Where a value that is no duration is counted.
    pub row_id: usize,
}

impl PauseKind {
    /// The length of one pause of a kind known without the session; `None` for a template.
    pub(crate) fn draw(&self, rng: &mut impl Rng) -> Option<Duration> {
        Some(match self {
            PauseKind::Fixed(duration) => *duration,
            PauseKind::Uniform(min, max) => *min + (*max - *min).mul_f64(rng.random::<f64>()),
            PauseKind::Exponential(mean) => mean.mul_f64(-(1.0 - rng.random::<f64>()).ln()),
            PauseKind::Normal { mean, std_dev } => {
                let seconds = mean.as_secs_f64() + std_dev.as_secs_f64() * standard_normal(rng);
                Duration::from_secs_f64(seconds.max(0.0))
            }
            PauseKind::Template(_) => return None,
        })
    }
}

/// A draw of the standard normal distribution (Box-Muller), from two uniform draws.
fn standard_normal(rng: &mut impl Rng) -> f64 {
    // 1 - u is in (0, 1]: its logarithm is finite.
    let radius = (-2.0 * (1.0 - rng.random::<f64>()).ln()).sqrt();
    radius * (std::f64::consts::TAU * rng.random::<f64>()).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    /// Mean and standard deviation, in milliseconds, of many pauses of `kind`.
    fn moments(kind: &PauseKind, draws: usize) -> (f64, f64, Vec<f64>) {
        let mut rng = SmallRng::seed_from_u64(23);
        let samples: Vec<f64> = (0..draws).map(|_| kind.draw(&mut rng).unwrap().as_secs_f64() * 1000.0).collect();
        let mean = samples.iter().sum::<f64>() / draws as f64;
        let variance = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (draws - 1) as f64;
        (mean, variance.sqrt(), samples)
    }

    #[test]
    fn normal_pauses_have_the_mean_and_standard_deviation_asked_for() {
        let ms = Duration::from_millis;
        let (mean, std_dev, samples) = moments(&PauseKind::Normal { mean: ms(1000), std_dev: ms(200) }, 200_000);
        // The standard error of the mean is 200/sqrt(200000) = 0.45 ms: 2 ms is over 4 of them.
        assert!((mean - 1000.0).abs() < 2.0, "mean {mean}");
        assert!((std_dev - 200.0).abs() < 2.0, "standard deviation {std_dev}");
        // About 68.3% within one standard deviation, 95.4% within two.
        let within =
            |k: f64| samples.iter().filter(|s| (**s - 1000.0).abs() <= k * 200.0).count() as f64 / samples.len() as f64;
        assert!((within(1.0) - 0.6827).abs() < 0.005, "{}", within(1.0));
        assert!((within(2.0) - 0.9545).abs() < 0.005, "{}", within(2.0));
    }

    #[test]
    fn normal_pauses_below_zero_are_zero() {
        let ms = Duration::from_millis;
        let (_, _, samples) = moments(&PauseKind::Normal { mean: ms(100), std_dev: ms(100) }, 100_000);
        assert!(samples.iter().all(|s| *s >= 0.0));
        // P(N(100, 100) < 0) = P(Z < -1) = 15.9%: those are pauses of 0.
        let zero = samples.iter().filter(|s| **s == 0.0).count() as f64 / samples.len() as f64;
        assert!((zero - 0.1587).abs() < 0.005, "{zero}");
    }

    #[test]
    fn uniform_and_exponential_pauses_keep_their_moments() {
        let ms = Duration::from_millis;
        let (mean, std_dev, samples) = moments(&PauseKind::Uniform(ms(100), ms(300)), 100_000);
        assert!(samples.iter().all(|s| (100.0..=300.0).contains(s)));
        assert!((mean - 200.0).abs() < 1.0 && (std_dev - 200.0 / 12f64.sqrt()).abs() < 1.0, "{mean} {std_dev}");
        let (mean, std_dev, _) = moments(&PauseKind::Exponential(ms(500)), 200_000);
        assert!((mean - 500.0).abs() < 5.0 && (std_dev - 500.0).abs() < 5.0, "{mean} {std_dev}");
    }
}
