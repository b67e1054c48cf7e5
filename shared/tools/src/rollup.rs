//! How a window's events are counted from the rollups (migration `0007_event_rollups`): the
//! boundaries that split `[since, until)` into whole hours, whole minutes and the parts of a
//! minute at either end, the parameters of `sql::window_parts`.

use jiff::Timestamp;

const MINUTE: i64 = 60_000_000;
const HOUR: i64 = 3_600_000_000;

/// `since <= m1 <= h1 <= h2 <= m2 <= until`: `[h1, h2)` whole hours, `[m1, h1)` and
/// `[h2, m2)` whole minutes, `[since, m1)` and `[m2, until)` counted from `events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    pub m1: Timestamp,
    pub h1: Timestamp,
    pub h2: Timestamp,
    pub m2: Timestamp,
}

impl Split {
    /// The split of `[since, until)` for buckets of `bucket_seconds` (hour rows are used only
    /// when a bucket holds whole hours) and, for one entity, without the minute rollup (there
    /// is none per entity: the ends up to the first and after the last whole hour come from
    /// that entity's events).
    pub fn new(since: Timestamp, until: Timestamp, bucket_seconds: i64, entity: bool) -> Self {
        let (s, u) = (since.as_microsecond(), until.as_microsecond());
        // What the rollups cover: whole minutes, or for one entity (no minute rollup) the
        // whole window, of which only the whole hours are read from a rollup.
        let (from, to) = if entity {
            (s, u)
        } else {
            let m1 = ceil(s, MINUTE).min(u);
            (m1, floor(u, MINUTE).max(m1))
        };
        let (h1, h2) = if bucket_seconds % 3_600 == 0 {
            let h1 = ceil(from, HOUR).min(to);
            (h1, floor(to, HOUR).max(h1))
        } else {
            (to, to)
        };
        // Per entity the minute ranges are empty: the raw ends meet the hours.
        let (m1, m2) = if entity { (h1, h2) } else { (from, to) };
        let at = |us: i64| Timestamp::from_microsecond(us).unwrap_or(until);
        Self {
            m1: at(m1),
            h1: at(h1),
            h2: at(h2),
            m2: at(m2),
        }
    }
}

fn floor(us: i64, unit: i64) -> i64 {
    us.div_euclid(unit) * unit
}

/// `us` rounded up to a multiple of `unit`, saturating (the caller clamps it to the window).
fn ceil(us: i64, unit: i64) -> i64 {
    let down = floor(us, unit);
    if down == us {
        us
    } else {
        down.saturating_add(unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn split(since: &str, until: &str, bucket: i64, entity: bool) -> [String; 4] {
        let s = Split::new(at(since), at(until), bucket, entity);
        [s.m1, s.h1, s.h2, s.m2].map(|t| t.to_string())
    }

    #[test]
    fn a_window_splits_into_raw_ends_minutes_and_hours() {
        assert_eq!(
            split(
                "2026-01-01T10:15:30.5Z",
                "2026-01-01T14:45:10Z",
                3_600,
                false
            ),
            [
                "2026-01-01T10:16:00Z",
                "2026-01-01T11:00:00Z",
                "2026-01-01T14:00:00Z",
                "2026-01-01T14:45:00Z"
            ]
        );
        // Minute buckets: no hour rows, the minutes run from end to end.
        assert_eq!(
            split("2026-01-01T10:15:30Z", "2026-01-01T14:45:10Z", 60, false),
            [
                "2026-01-01T10:16:00Z",
                "2026-01-01T14:45:00Z",
                "2026-01-01T14:45:00Z",
                "2026-01-01T14:45:00Z"
            ]
        );
        // One entity: whole hours in the middle, raw rows for the rest.
        assert_eq!(
            split("2026-01-01T10:15:30Z", "2026-01-01T14:45:10Z", 86_400, true),
            [
                "2026-01-01T11:00:00Z",
                "2026-01-01T11:00:00Z",
                "2026-01-01T14:00:00Z",
                "2026-01-01T14:00:00Z"
            ]
        );
    }

    #[test]
    fn short_and_aligned_windows_stay_ordered_inside_the_window() {
        // Inside one minute: everything raw.
        assert_eq!(
            split("2026-01-01T10:15:10Z", "2026-01-01T10:15:50Z", 3_600, false),
            ["2026-01-01T10:15:50Z"; 4].map(String::from)
        );
        // Inside one hour, across minutes: no hour rows.
        let s = split("2026-01-01T10:15:10Z", "2026-01-01T10:45:50Z", 3_600, false);
        assert_eq!(s[0], "2026-01-01T10:16:00Z");
        assert_eq!(s[1], "2026-01-01T10:45:00Z");
        assert_eq!(s[2], "2026-01-01T10:45:00Z");
        // Aligned on hours: nothing raw, nothing by minute.
        assert_eq!(
            split("2026-01-01T10:00:00Z", "2026-01-01T12:00:00Z", 3_600, false),
            [
                "2026-01-01T10:00:00Z",
                "2026-01-01T10:00:00Z",
                "2026-01-01T12:00:00Z",
                "2026-01-01T12:00:00Z"
            ]
        );
        // Before the epoch.
        let s = split("1969-12-31T22:30:00Z", "1970-01-01T01:30:00Z", 3_600, false);
        assert_eq!(s[1], "1969-12-31T23:00:00Z");
        assert_eq!(s[2], "1970-01-01T01:00:00Z");
        // The ends of time: the rounded boundaries never leave the window.
        let min_plus = Timestamp::MIN
            .checked_add(jiff::SignedDuration::from_secs(30))
            .unwrap();
        let last = at("9999-12-30T21:59:59.999999Z");
        for (since, until) in [
            (
                at("2026-01-01T10:15:10Z"),
                at("2026-01-01T10:15:10.000001Z"),
            ),
            (Timestamp::MIN, min_plus),
            (at("9999-12-30T21:59:30Z"), last),
            (Timestamp::MIN, last),
        ] {
            for entity in [false, true] {
                for bucket in [60, 3_600, 86_400] {
                    let s = Split::new(since, until, bucket, entity);
                    // As PostgreSQL holds them: to the microsecond.
                    let us =
                        |t: Timestamp| Timestamp::from_microsecond(t.as_microsecond()).unwrap();
                    let order = [us(since), s.m1, s.h1, s.h2, s.m2, us(until)];
                    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
                }
            }
        }
    }
}
