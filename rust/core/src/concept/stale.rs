//! docs/spec.md §2.2: `stale_after` text → a UTC instant (microseconds since the Unix
//! epoch) or `None`. ASCII digits only; fractions past microseconds are
//! truncated; the instant must fall in years 1–9999 so Python's `datetime`
//! can hold it.

const MIN_MICROS: i64 = -62_135_596_800_000_000; // 0001-01-01T00:00:00Z
const MAX_MICROS: i64 = 253_402_300_799_999_999; // 9999-12-31T23:59:59.999999Z

/// Whether `t` (microseconds since the epoch) is an instant a `stale_after`
/// can name: what a cache file's record must hold to be believed.
pub fn is_instant(t: i64) -> bool {
    (MIN_MICROS..=MAX_MICROS).contains(&t)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

struct Cur<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cur<'_> {
    fn digits(&mut self, n: usize) -> Option<i64> {
        let s = self.b.get(self.i..self.i + n)?;
        if !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.i += n;
        Some(s.iter().fold(0i64, |a, &d| a * 10 + i64::from(d - b'0')))
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
}

pub fn parse_stale_after(text: &str) -> Option<i64> {
    let mut c = Cur {
        b: text.as_bytes(),
        i: 0,
    };
    let y = c.digits(4)?;
    if !c.eat(b'-') {
        return None;
    }
    let mo = c.digits(2)?;
    if !c.eat(b'-') {
        return None;
    }
    let d = c.digits(2)?;
    if y < 1 || !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
        return None;
    }
    let day_micros = days_from_civil(y, mo, d) * 86_400_000_000;
    if c.done() {
        return Some(day_micros);
    }
    if !(c.eat(b'T') || c.eat(b't') || c.eat(b' ')) {
        return None;
    }
    let h = c.digits(2)?;
    if !c.eat(b':') {
        return None;
    }
    let mi = c.digits(2)?;
    let mut sec = 0;
    let mut micros = 0i64;
    if c.eat(b':') {
        sec = c.digits(2)?;
        if c.eat(b'.') {
            let start = c.i;
            while c.b.get(c.i).is_some_and(u8::is_ascii_digit) {
                c.i += 1;
            }
            let frac = &c.b[start..c.i];
            if frac.is_empty() {
                return None;
            }
            for k in 0..6 {
                micros = micros * 10 + frac.get(k).map_or(0, |&b| i64::from(b - b'0'));
            }
        }
    }
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let mut offset_min = 0i64;
    if c.eat(b'Z') || c.eat(b'z') {
    } else if c.b.get(c.i).is_some_and(|&b| b == b'+' || b == b'-') {
        let sign = if c.b[c.i] == b'-' { -1 } else { 1 };
        c.i += 1;
        let oh = c.digits(2)?;
        let om = if c.done() {
            0
        } else {
            c.eat(b':');
            c.digits(2)?
        };
        if oh > 23 || om > 59 {
            return None;
        }
        offset_min = sign * (oh * 60 + om);
    }
    if !c.done() {
        return None;
    }
    let t = day_micros + ((h * 60 + mi - offset_min) * 60 + sec) * 1_000_000 + micros;
    (MIN_MICROS..=MAX_MICROS).contains(&t).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse_stale_after("1970-01-01"), Some(0));
        assert_eq!(parse_stale_after("1970-01-01T00:00:01Z"), Some(1_000_000));
        assert_eq!(parse_stale_after("1970-01-01 01:00"), Some(3_600_000_000));
        assert_eq!(parse_stale_after("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_stale_after("1970-01-01T01:00:00+0100"), Some(0));
        assert_eq!(parse_stale_after("1970-01-01T01:00:00+01"), Some(0));
        assert_eq!(
            parse_stale_after("1970-01-01T00:00:00.1234569Z"),
            Some(123_456)
        );
        assert_eq!(
            parse_stale_after("2024-02-29"),
            Some(days_from_civil(2024, 2, 29) * 86_400_000_000)
        );
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "24-01-01",
            "2024-01-01T24:00",
            "2024-01-01T",
            "2024-01-01T10:00:60",
            "0000-01-01",
            "0001-01-01T00:00+01:00",
            "２０２４-01-01",
            "2024-01-01T10:00:00.Z",
            "2024-01-01T10:00+24:00",
            "next week",
            "2024-01-01Z",
        ] {
            assert_eq!(parse_stale_after(bad), None, "{bad}");
        }
        assert!(parse_stale_after("9999-12-31T23:59:59.999999Z").is_some());
        assert!(parse_stale_after("9999-12-31T23:59:59-01:00").is_none());
    }
}
