use std::time::Duration;

/// Limits of a gate, validated at construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateConfig {
    /// Leases out at once (1..=1024).
    pub max_active: usize,
    /// Requests that may wait (0..=100,000); the queue bound answers an overload with 429 rather
    /// than unbounded memory and latency.
    pub max_waiting: usize,
    /// How long a request may wait for a lease (1 ms..=300 s).
    pub wait_deadline: Duration,
}

/// Why a gate configuration is refused; each names the value and the allowed range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateConfigError {
    /// `max_active` or `max_waiting` out of range.
    #[error("invalid_capacity: {name} must be {min}..={max}, got {value}")]
    InvalidCapacity {
        /// `max_active` or `max_waiting`.
        name: &'static str,
        /// The value given.
        value: usize,
        /// Smallest allowed.
        min: usize,
        /// Largest allowed.
        max: usize,
    },
    /// The wait deadline is out of range.
    #[error("invalid_wait_deadline: the wait deadline must be 1 ms..=300 s, got {0:?}")]
    InvalidWaitDeadline(Duration),
}

impl GateConfigError {
    /// The machine-readable code: `invalid_capacity` or `invalid_wait_deadline`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidCapacity { .. } => "invalid_capacity",
            Self::InvalidWaitDeadline(_) => "invalid_wait_deadline",
        }
    }
}

/// Allowed ranges.
pub const MAX_ACTIVE_RANGE: std::ops::RangeInclusive<usize> = 1..=1024;
/// Allowed ranges.
pub const MAX_WAITING_RANGE: std::ops::RangeInclusive<usize> = 0..=100_000;
/// Allowed ranges.
pub const WAIT_DEADLINE_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(300);

impl GateConfig {
    /// Checks every limit; reports the first problem with its value and range.
    pub fn new(
        max_active: usize,
        max_waiting: usize,
        wait_deadline: Duration,
    ) -> Result<Self, GateConfigError> {
        for (name, value, range) in [
            ("max_active", max_active, MAX_ACTIVE_RANGE),
            ("max_waiting", max_waiting, MAX_WAITING_RANGE),
        ] {
            if !range.contains(&value) {
                return Err(GateConfigError::InvalidCapacity {
                    name,
                    value,
                    min: *range.start(),
                    max: *range.end(),
                });
            }
        }
        if !WAIT_DEADLINE_RANGE.contains(&wait_deadline) {
            return Err(GateConfigError::InvalidWaitDeadline(wait_deadline));
        }
        Ok(Self {
            max_active,
            max_waiting,
            wait_deadline,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_configurations_are_refused_with_their_code() {
        let ms = Duration::from_millis;
        assert!(GateConfig::new(1, 0, ms(1)).is_ok());
        assert!(GateConfig::new(1024, 100_000, Duration::from_secs(300)).is_ok());
        for (a, w, d, code) in [
            (0, 1, ms(100), "invalid_capacity"),
            (1025, 1, ms(100), "invalid_capacity"),
            (1, 100_001, ms(100), "invalid_capacity"),
            (1, 1, ms(0), "invalid_wait_deadline"),
            (1, 1, Duration::from_secs(301), "invalid_wait_deadline"),
        ] {
            let err = GateConfig::new(a, w, d).unwrap_err();
            assert_eq!(err.code(), code, "{err}");
            assert!(err.to_string().starts_with(code));
        }
    }
}
