//! PostgreSQL result values as text, as `psql` shows them. Checks compare text. The common
//! types are asked for in the binary format and converted here, which does not depend on the
//! session's settings (time zone, date style, float digits); every other type (intervals,
//! arrays, enums, the database's own types) is asked for in the text format, the server's own
//! rendering (see [`binary_converter`]).

use std::fmt::Write;
use tokio_postgres::types::{FromSql, Type};

type BoxError = Box<dyn std::error::Error + Sync + Send>;

/// Converts one binary value of a column's type to text.
pub type Converter = fn(&[u8]) -> Result<String, BoxError>;

/// How a column of `ty` is read: in the binary format through the converter given here, or,
/// for a type without one (`None`), in the text format as the server renders it.
pub fn binary_converter(ty: &Type) -> Option<Converter> {
    Some(match *ty {
        Type::BOOL => |raw| Ok(if bool::from_sql(&Type::BOOL, raw)? { "t" } else { "f" }.to_string()),
        Type::INT2 => |raw| Ok(i16::from_sql(&Type::INT2, raw)?.to_string()),
        Type::INT4 => |raw| Ok(i32::from_sql(&Type::INT4, raw)?.to_string()),
        Type::INT8 => |raw| Ok(i64::from_sql(&Type::INT8, raw)?.to_string()),
        Type::OID => |raw| Ok(u32::from_sql(&Type::OID, raw)?.to_string()),
        Type::FLOAT4 => |raw| Ok(f32::from_sql(&Type::FLOAT4, raw)?.to_string()),
        Type::FLOAT8 => |raw| Ok(f64::from_sql(&Type::FLOAT8, raw)?.to_string()),
        Type::NUMERIC => numeric,
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::UNKNOWN
        | Type::JSON
        | Type::XML
        | Type::CHAR => |raw| Ok(String::from_utf8_lossy(raw).into_owned()),
        // jsonb's binary form is a version byte, then the text.
        Type::JSONB => |raw| Ok(String::from_utf8_lossy(raw.get(1..).unwrap_or_default()).into_owned()),
        Type::UUID => uuid,
        Type::BYTEA => |raw| {
            let mut text = String::with_capacity(2 + raw.len() * 2);
            text.push_str("\\x");
            for byte in raw {
                let _ = write!(text, "{byte:02x}");
            }
            Ok(text)
        },
        Type::DATE => |raw| Ok(date(i32::from_sql(&Type::INT4, raw)?)),
        Type::TIME => |raw| Ok(time_of_day(i64::from_sql(&Type::INT8, raw)?)),
        Type::TIMESTAMP => |raw| Ok(timestamp(i64::from_sql(&Type::INT8, raw)?)),
        Type::TIMESTAMPTZ => |raw| Ok(format!("{}+00", timestamp(i64::from_sql(&Type::INT8, raw)?))),
        _ => return None,
    })
}

fn uuid(raw: &[u8]) -> Result<String, BoxError> {
    if raw.len() != 16 {
        return Err("a uuid is 16 bytes".into());
    }
    let mut text = String::with_capacity(36);
    for (i, byte) in raw.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        let _ = write!(text, "{byte:02x}");
    }
    Ok(text)
}

/// NUMERIC's binary form: digit count, weight (of the first base-10000 digit), sign, display
/// scale, then the base-10000 digits.
fn numeric(raw: &[u8]) -> Result<String, BoxError> {
    let word = |i: usize| -> Result<u16, BoxError> {
        raw.get(i * 2..i * 2 + 2).map(|b| u16::from_be_bytes([b[0], b[1]])).ok_or_else(|| "a short numeric".into())
    };
    let (count, weight, sign, scale) = (word(0)? as usize, word(1)? as i16 as i64, word(2)?, word(3)? as usize);
    match sign {
        0xC000 => return Ok("NaN".to_string()),
        0xD000 => return Ok("Infinity".to_string()),
        0xF000 => return Ok("-Infinity".to_string()),
        _ => {}
    }
    let digit = |index: i64| -> Result<u16, BoxError> {
        if index < 0 || index as usize >= count {
            Ok(0)
        } else {
            word(4 + index as usize)
        }
    };
    let mut text = String::new();
    if sign == 0x4000 {
        text.push('-');
    }
    if weight < 0 {
        text.push('0');
    } else {
        let _ = write!(text, "{}", digit(0)?);
        for index in 1..=weight {
            let _ = write!(text, "{:04}", digit(index)?);
        }
    }
    if scale > 0 {
        let mut fraction = String::with_capacity(scale + 4);
        let mut index = weight + 1;
        while fraction.len() < scale {
            let _ = write!(fraction, "{:04}", digit(index)?);
            index += 1;
        }
        fraction.truncate(scale);
        text.push('.');
        text.push_str(&fraction);
    }
    Ok(text)
}

const MICROS_PER_DAY: i64 = 86_400_000_000;
/// Days from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const POSTGRES_EPOCH_DAYS: i64 = 10_957;

/// `YYYY-MM-DD` of a day counted from 2000-01-01 (the proleptic Gregorian calendar).
fn date(days: i32) -> String {
    let (year, month, day) = civil_from_days(i64::from(days) + POSTGRES_EPOCH_DAYS);
    format!("{year:04}-{month:02}-{day:02}")
}

fn time_of_day(micros: i64) -> String {
    let (seconds, fraction) = (micros / 1_000_000, micros % 1_000_000);
    let mut text = format!("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    text
}

fn timestamp(micros: i64) -> String {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let (year, month, day) = civil_from_days(days + POSTGRES_EPOCH_DAYS);
    format!("{year:04}-{month:02}-{day:02} {}", time_of_day(micros.rem_euclid(MICROS_PER_DAY)))
}

/// Year, month and day of a day counted from 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_bytes(words: &[u16]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    #[test]
    fn numerics_read_as_postgres_writes_them() {
        // 12345.678: digits 1, 2345, 6780; weight 1; scale 3.
        assert_eq!(numeric(&numeric_bytes(&[3, 1, 0, 3, 1, 2345, 6780])).unwrap(), "12345.678");
        // -0.00012: digits 1 and 2000 from weight -1 (0.0001 is 10000^-1), scale 5.
        assert_eq!(numeric(&numeric_bytes(&[2, 0xFFFF, 0x4000, 5, 1, 2000])).unwrap(), "-0.00012");
        // 0.000012: digit 1200 at weight -2, scale 6.
        assert_eq!(numeric(&numeric_bytes(&[1, 0xFFFE, 0, 6, 1200])).unwrap(), "0.000012");
        // 20000: one digit 2 at weight 1.
        assert_eq!(numeric(&numeric_bytes(&[1, 1, 0, 0, 2])).unwrap(), "20000");
        assert_eq!(numeric(&numeric_bytes(&[0, 0, 0, 2])).unwrap(), "0.00");
        assert_eq!(numeric(&numeric_bytes(&[0, 0, 0xC000, 0])).unwrap(), "NaN");
    }

    #[test]
    fn dates_and_times_read_as_postgres_writes_them() {
        assert_eq!(date(0), "2000-01-01");
        assert_eq!(date(-1), "1999-12-31");
        assert_eq!(date(9556), "2026-03-01");
        assert_eq!(timestamp(86_400_000_000 + 3_723_500_000), "2000-01-02 01:02:03.5");
        assert_eq!(timestamp(-1), "1999-12-31 23:59:59.999999");
        assert_eq!(time_of_day(0), "00:00:00");
    }

    #[test]
    fn every_type_read_as_binary_is_converted() {
        for ty in [Type::BOOL, Type::INT4, Type::NUMERIC, Type::TEXT, Type::JSONB, Type::UUID, Type::TIMESTAMPTZ] {
            assert!(binary_converter(&ty).is_some());
        }
        // Not converted here: the server sends these as text.
        assert!(binary_converter(&Type::INTERVAL).is_none() && binary_converter(&Type::INT4_ARRAY).is_none());
        assert_eq!(binary_converter(&Type::BOOL).unwrap()(&[1]).unwrap(), "t");
        assert_eq!(binary_converter(&Type::INT8).unwrap()(&7i64.to_be_bytes()).unwrap(), "7");
    }

    #[test]
    fn uuids_are_hyphenated() {
        let raw: Vec<u8> = (0..16).collect();
        assert_eq!(uuid(&raw).unwrap(), "00010203-0405-0607-0809-0a0b0c0d0e0f");
    }
}
