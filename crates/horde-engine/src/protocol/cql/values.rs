//! A parameter's text as its column's CQL type, and a result's value as text. Templates render
//! text; Cassandra checks types strictly, so each `?` is converted to the type the prepared
//! statement says its marker has.

use scylla::frame::response::result::{ColumnType, NativeType};
use scylla::value::{Counter, CqlTimestamp, CqlTimeuuid, CqlValue};

/// `text` as a value of `typ`; an error names what it expected.
pub(crate) fn parameter(text: &str, typ: &ColumnType<'_>) -> Result<CqlValue, String> {
    let ColumnType::Native(native) = typ else {
        return Err(format!(
            "a parameter of type {typ:?} is not supported yet: bind a text, number, uuid, timestamp or blob"
        ));
    };
    let number = |what: &str| format!("expected {what}, found {text:?}");
    Ok(match native {
        NativeType::Ascii => CqlValue::Ascii(text.to_string()),
        NativeType::Text => CqlValue::Text(text.to_string()),
        NativeType::Boolean => match text.trim().to_ascii_lowercase().as_str() {
            "true" => CqlValue::Boolean(true),
            "false" => CqlValue::Boolean(false),
            _ => return Err(number("true or false")),
        },
        NativeType::Int => CqlValue::Int(text.trim().parse().map_err(|_| number("an int"))?),
        NativeType::BigInt => CqlValue::BigInt(text.trim().parse().map_err(|_| number("a bigint"))?),
        NativeType::SmallInt => CqlValue::SmallInt(text.trim().parse().map_err(|_| number("a smallint"))?),
        NativeType::TinyInt => CqlValue::TinyInt(text.trim().parse().map_err(|_| number("a tinyint"))?),
        NativeType::Counter => CqlValue::Counter(Counter(text.trim().parse().map_err(|_| number("a counter"))?)),
        NativeType::Double => CqlValue::Double(text.trim().parse().map_err(|_| number("a double"))?),
        NativeType::Float => CqlValue::Float(text.trim().parse().map_err(|_| number("a float"))?),
        NativeType::Uuid => CqlValue::Uuid(text.trim().parse().map_err(|_| number("a uuid"))?),
        NativeType::Timeuuid => {
            let uuid: uuid::Uuid = text.trim().parse().map_err(|_| number("a timeuuid"))?;
            CqlValue::Timeuuid(CqlTimeuuid::from(uuid))
        }
        NativeType::Timestamp => {
            CqlValue::Timestamp(CqlTimestamp(text.trim().parse().map_err(|_| number("milliseconds since 1970"))?))
        }
        NativeType::Inet => CqlValue::Inet(text.trim().parse().map_err(|_| number("an IP address"))?),
        NativeType::Blob => CqlValue::Blob(blob(text).ok_or_else(|| number("hexadecimal bytes (0x...)"))?),
        other => {
            return Err(format!(
                "a parameter of type {other:?} is not supported yet: bind a text, number, uuid, timestamp or blob"
            ))
        }
    })
}

/// `0xcafe` or `cafe` as bytes.
fn blob(text: &str) -> Option<Vec<u8>> {
    let hex = text.trim().trim_start_matches("0x");
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

/// A value as checks read it: text as is, numbers and ids as CQL writes them, a timestamp in
/// milliseconds, bytes as 0x hex, collections as JSON arrays.
pub(crate) fn text(value: &CqlValue) -> String {
    match value {
        CqlValue::Ascii(text) | CqlValue::Text(text) => text.clone(),
        CqlValue::Boolean(b) => b.to_string(),
        CqlValue::Int(n) => n.to_string(),
        CqlValue::BigInt(n) => n.to_string(),
        CqlValue::SmallInt(n) => n.to_string(),
        CqlValue::TinyInt(n) => n.to_string(),
        CqlValue::Counter(Counter(n)) => n.to_string(),
        CqlValue::Double(n) => n.to_string(),
        CqlValue::Float(n) => n.to_string(),
        CqlValue::Uuid(uuid) => uuid.to_string(),
        CqlValue::Timeuuid(uuid) => uuid.to_string(),
        CqlValue::Timestamp(CqlTimestamp(ms)) => ms.to_string(),
        CqlValue::Inet(address) => address.to_string(),
        CqlValue::Blob(bytes) => {
            let mut hex = String::with_capacity(2 + bytes.len() * 2);
            hex.push_str("0x");
            for byte in bytes {
                hex.push_str(&format!("{byte:02x}"));
            }
            hex
        }
        CqlValue::List(items) | CqlValue::Set(items) => {
            let texts: Vec<String> = items.iter().map(text).collect();
            serde_json::to_string(&texts).unwrap_or_default()
        }
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_take_their_column_types() {
        let native = ColumnType::Native;
        assert_eq!(parameter("42", &native(NativeType::Int)).unwrap(), CqlValue::Int(42));
        assert_eq!(parameter("x", &native(NativeType::Text)).unwrap(), CqlValue::Text("x".into()));
        assert_eq!(parameter("0xcafe", &native(NativeType::Blob)).unwrap(), CqlValue::Blob(vec![0xca, 0xfe]));
        assert!(parameter("4x2", &native(NativeType::Int)).unwrap_err().contains("expected an int"));
        let uuid = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
        assert_eq!(text(&parameter(uuid, &native(NativeType::Uuid)).unwrap()), uuid);
    }
}
