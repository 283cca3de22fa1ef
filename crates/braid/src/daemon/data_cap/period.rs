//! The calendar periods of a data cap, in UTC: a day runs from 00:00:00 to
//! the next midnight, a month from its first day to the next month's. UTC
//! rather than local time: no time-zone database, no 23- or 25-hour days
//! at daylight-saving changes, and the same boundaries whatever `TZ` the
//! daemon runs with. Times are seconds since the Unix epoch, passed in, so
//! tests choose the date.

use crate::config::Period;

const SECS_PER_DAY: u64 = 86_400;

/// 9999-12-31T23:59:59Z: later times count as this one, so that no date
/// arithmetic can overflow whatever a usage file or a clock says.
const LATEST: u64 = 253_402_300_799;

/// A period as `[start, end)` in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub start: u64,
    pub end: u64,
}

/// The period of kind `period` that holds Unix second `t`.
pub fn bounds(period: Period, t: u64) -> Bounds {
    let day = t.min(LATEST) / SECS_PER_DAY;
    match period {
        Period::Day => Bounds {
            start: day * SECS_PER_DAY,
            end: (day + 1) * SECS_PER_DAY,
        },
        Period::Month => {
            let (year, month, _) = civil_from_days(day);
            let (next_year, next_month) = if month == 12 {
                (year + 1, 1)
            } else {
                (year, month + 1)
            };
            Bounds {
                start: days_from_civil(year, month, 1) * SECS_PER_DAY,
                end: days_from_civil(next_year, next_month, 1) * SECS_PER_DAY,
            }
        }
    }
}

/// Unix second `t` as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_text(t: u64) -> String {
    let t = t.min(LATEST + 1);
    let (year, month, day) = civil_from_days(t / SECS_PER_DAY);
    let s = t % SECS_PER_DAY;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// The proleptic Gregorian date of day `days` since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift to an era starting on 0000-03-01, so that the leap day is the
    // last day of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097; // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 of a date on or after it (Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unix seconds of a UTC date and time, from an independent source:
    /// values `date -u -d ... +%s` printed.
    const T_2026_11_23_21_55_47: u64 = 1_795_470_947;
    const T_2024_02_29_00_00_00: u64 = 1_709_164_800;
    const T_2024_03_01_00_00_00: u64 = 1_709_251_200;
    const T_2023_03_01_00_00_00: u64 = 1_677_628_800;
    const T_2000_02_29_12_00_00: u64 = 951_825_600;
    const T_2100_03_01_00_00_00: u64 = 4_107_542_400;

    #[test]
    fn text_matches_known_dates() {
        assert_eq!(utc_text(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_text(T_2026_11_23_21_55_47), "2026-11-23T21:55:47Z");
        assert_eq!(utc_text(T_2024_02_29_00_00_00), "2024-02-29T00:00:00Z");
        assert_eq!(utc_text(T_2000_02_29_12_00_00), "2000-02-29T12:00:00Z");
        assert_eq!(utc_text(T_2100_03_01_00_00_00), "2100-03-01T00:00:00Z");
    }

    #[test]
    fn a_day_runs_from_midnight_to_midnight() {
        let b = bounds(Period::Day, T_2026_11_23_21_55_47);
        assert_eq!(utc_text(b.start), "2026-11-23T00:00:00Z");
        assert_eq!(utc_text(b.end), "2026-11-24T00:00:00Z");
        // The boundary itself starts the next day.
        assert_eq!(bounds(Period::Day, b.end).start, b.end);
        assert_eq!(bounds(Period::Day, b.end - 1), b);
    }

    #[test]
    fn a_month_runs_from_its_first_day_to_the_next_months() {
        let b = bounds(Period::Month, T_2026_11_23_21_55_47);
        assert_eq!(utc_text(b.start), "2026-11-01T00:00:00Z");
        assert_eq!(utc_text(b.end), "2026-12-01T00:00:00Z");
        let december = bounds(Period::Month, b.end);
        assert_eq!(december.start, b.end);
        assert_eq!(utc_text(december.end), "2027-01-01T00:00:00Z");
        assert_eq!(bounds(Period::Month, b.end - 1), b);
    }

    #[test]
    fn february_has_29_days_in_leap_years_only() {
        let leap = bounds(Period::Month, T_2024_02_29_00_00_00);
        assert_eq!(leap.end, T_2024_03_01_00_00_00);
        assert_eq!((leap.end - leap.start) / SECS_PER_DAY, 29);
        let common = bounds(Period::Month, T_2023_03_01_00_00_00 - 1);
        assert_eq!((common.end - common.start) / SECS_PER_DAY, 28);
        // Divisible by 400: a leap year; by 100 only: not.
        let y2000 = bounds(Period::Month, T_2000_02_29_12_00_00);
        assert_eq!((y2000.end - y2000.start) / SECS_PER_DAY, 29);
        let y2100 = bounds(Period::Month, T_2100_03_01_00_00_00 - 1);
        assert_eq!((y2100.end - y2100.start) / SECS_PER_DAY, 28);
        assert_eq!(y2100.end, T_2100_03_01_00_00_00);
    }

    #[test]
    fn the_far_future_does_not_overflow() {
        let b = bounds(Period::Month, u64::MAX);
        assert_eq!(utc_text(b.start), "9999-12-01T00:00:00Z");
        assert_eq!(utc_text(b.end), "10000-01-01T00:00:00Z");
        assert_eq!(utc_text(u64::MAX), "10000-01-01T00:00:00Z");
    }

    #[test]
    fn days_and_dates_round_trip_over_four_centuries() {
        // Every day from 1970 to 2370: day n's date gives day n back, and
        // consecutive days give consecutive or month-rolling dates.
        let mut previous = civil_from_days(0);
        assert_eq!(previous, (1970, 1, 1));
        for n in 1..146_097 {
            let (y, m, d) = civil_from_days(n);
            assert_eq!(days_from_civil(y, m, d), n);
            let (py, pm, _) = previous;
            assert!(
                (y, m) == (py, pm) && d == previous.2 + 1
                    || d == 1 && (m == pm + 1 && y == py || m == 1 && pm == 12 && y == py + 1),
                "{previous:?} then {:?}",
                (y, m, d)
            );
            previous = (y, m, d);
        }
    }
}
