//! A timer's ISO 8601 text from a diagram → the arguments of `timer(..)`:
//! `timeDuration` `PT1H30M` → a duration, `timeCycle` `R3/PT20S` → `every` and
//! `times`, `timeDate` `2030-01-01T00:00:00Z` → a point in time. Anything else (a
//! cron line, an expression) is for the Rust block to bind.

/// The Rust text of `timer(..)`'s arguments for `element` holding `text`, or `None`
/// when the text is not a form this reads.
pub fn arguments(element: &str, text: &str) -> Option<String> {
    let text = text.trim();
    match element {
        "timeDuration" => Some(duration(text)?),
        "timeCycle" => {
            let (repeat, period) = text.split_once('/')?;
            let times = repeat.strip_prefix('R')?;
            let every = duration(period)?;
            if times.is_empty() {
                Some(format!("every = {every}"))
            } else {
                let n: u32 = times.parse().ok()?;
                Some(format!("every = {every}, times = {n}"))
            }
        }
        "timeDate" => {
            let secs = date(text)?;
            Some(format!(
                "at = ::std::time::UNIX_EPOCH + ::core::time::Duration::from_secs({secs})"
            ))
        }
        _ => None,
    }
}

/// `P1DT2H3M4.5S` (weeks, days, hours, minutes, seconds) as a `Duration` expression.
fn duration(text: &str) -> Option<String> {
    let rest = text.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    if date.is_empty() && time.is_empty() {
        return None;
    }
    let mut nanos: u128 = 0;
    let mut add = |part: &str, units: &[(char, u128)]| -> Option<()> {
        let mut number = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                number.push(c);
                continue;
            }
            let (_, unit) = units.iter().find(|(u, _)| *u == c)?;
            nanos += scaled(&number, *unit)?;
            number.clear();
        }
        number.is_empty().then_some(())
    };
    const SEC: u128 = 1_000_000_000;
    add(date, &[('W', 7 * 86_400 * SEC), ('D', 86_400 * SEC)])?;
    add(time, &[('H', 3_600 * SEC), ('M', 60 * SEC), ('S', SEC)])?;
    let d = "::core::time::Duration";
    Some(if nanos.is_multiple_of(SEC) {
        format!("{d}::from_secs({})", nanos / SEC)
    } else if nanos.is_multiple_of(1_000_000) {
        format!("{d}::from_millis({})", nanos / 1_000_000)
    } else {
        format!("{d}::from_nanos({nanos})")
    })
}

/// `number` (digits, perhaps a fraction) times `unit` nanoseconds.
fn scaled(number: &str, unit: u128) -> Option<u128> {
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut total = whole.checked_mul(unit)?;
    let mut scale = unit;
    for c in frac.chars() {
        scale /= 10;
        total += u128::from(c.to_digit(10)?) * scale;
    }
    Some(total)
}

/// `YYYY-MM-DDThh:mm:ssZ` (UTC; `+00:00` also) as seconds since the epoch.
fn date(text: &str) -> Option<u64> {
    let text = text
        .strip_suffix('Z')
        .or_else(|| text.strip_suffix("+00:00"))?;
    let (day, time) = text.split_once('T')?;
    let mut d = day.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, dd) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, mi, s) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&dd) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + dd - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days.checked_mul(86_400)? + (h * 3600 + mi * 60 + s) as i64;
    u64::try_from(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::arguments;

    #[test]
    fn iso_timers() {
        let d = "::core::time::Duration";
        assert_eq!(
            arguments("timeDuration", "PT1H30M").unwrap(),
            format!("{d}::from_secs(5400)")
        );
        assert_eq!(
            arguments("timeDuration", "PT0.2S").unwrap(),
            format!("{d}::from_millis(200)")
        );
        assert_eq!(
            arguments("timeDuration", "P1D").unwrap(),
            format!("{d}::from_secs(86400)")
        );
        assert_eq!(
            arguments("timeCycle", "R3/PT1M").unwrap(),
            format!("every = {d}::from_secs(60), times = 3")
        );
        assert_eq!(
            arguments("timeCycle", "R/PT20S").unwrap(),
            format!("every = {d}::from_secs(20)")
        );
        assert_eq!(
            arguments("timeDate", "2023-11-14T22:13:20Z").unwrap(),
            format!("at = ::std::time::UNIX_EPOCH + {d}::from_secs(1700000000)")
        );
        assert_eq!(arguments("timeDuration", "${delay}"), None);
        assert_eq!(arguments("timeCycle", "0 0 9-17 * * MON-FRI"), None);
        assert_eq!(arguments("timeDuration", "PT"), None);
    }
}
