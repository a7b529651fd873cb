//! Timers as BPMN writes them: ISO 8601 durations, dates and cycles.

use std::time::{Duration, UNIX_EPOCH};

use crate::events::TimerSpec;

/// A timer as BPMN writes it: the element name and its ISO 8601 text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TimerText {
    /// `timeDuration`, `timeDate` or `timeCycle`.
    pub element: &'static str,
    pub text: String,
}

/// A timer in ISO 8601: `PT1H30M`, `R3/PT20S`, `2030-01-01T00:00:00Z`.
pub(crate) fn timer_text(spec: &TimerSpec) -> TimerText {
    match *spec {
        TimerSpec::After(d) => TimerText {
            element: "timeDuration",
            text: iso_duration(d),
        },
        TimerSpec::Every { every, times } => TimerText {
            element: "timeCycle",
            text: match times {
                Some(n) => format!("R{n}/{}", iso_duration(every)),
                None => format!("R/{}", iso_duration(every)),
            },
        },
        TimerSpec::At(at) => TimerText {
            element: "timeDate",
            text: match at.duration_since(UNIX_EPOCH) {
                Ok(d) => iso_date(d.as_secs()),
                Err(_) => iso_date(0),
            },
        },
    }
}

/// `PT1H2M3.5S`; `PT0S` for zero.
pub(crate) fn iso_duration(d: Duration) -> String {
    let total = d.as_secs();
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    let nanos = d.subsec_nanos();
    let mut out = String::from("PT");
    if h > 0 {
        out.push_str(&format!("{h}H"));
    }
    if m > 0 {
        out.push_str(&format!("{m}M"));
    }
    if s > 0 || nanos > 0 || (h == 0 && m == 0) {
        if nanos > 0 {
            let frac = format!("{nanos:09}");
            out.push_str(&format!("{s}.{}S", frac.trim_end_matches('0')));
        } else {
            out.push_str(&format!("{s}S"));
        }
    }
    out
}

/// Seconds since the epoch as `YYYY-MM-DDThh:mm:ssZ` (proleptic Gregorian, UTC).
fn iso_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_dates_are_iso_8601() {
        assert_eq!(iso_duration(Duration::from_secs(3600)), "PT1H");
        assert_eq!(iso_duration(Duration::from_secs(3725)), "PT1H2M5S");
        assert_eq!(iso_duration(Duration::from_millis(200)), "PT0.2S");
        assert_eq!(iso_duration(Duration::ZERO), "PT0S");
        assert_eq!(iso_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_date(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
