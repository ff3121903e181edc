//! One entry of a gateway stream, as Redis answers it (`XRANGE`, `XREAD`).

use crate::session::store::streams::StreamEntry;
use bytes::Bytes;
use redis::Value;

/// One stream entry, as Redis answers it.
pub(super) struct Entry(pub(super) StreamEntry);

impl redis::FromRedisValue for Entry {
    fn from_redis_value(v: Value) -> Result<Self, redis::ParsingError> {
        let (id, fields): (String, Vec<(String, Vec<u8>)>) = redis::from_redis_value(v)?;
        let seq = id
            .split_once('-')
            .and_then(|(s, _)| s.parse().ok())
            .ok_or_else(|| redis::ParsingError::from("not a gateway stream entry"))?;
        let mut entry = StreamEntry {
            seq,
            event: None,
            writer: String::new(),
            request: None,
            backend: None,
            end: false,
        };
        for (name, value) in fields {
            match name.as_str() {
                "e" => entry.event = Some(Bytes::from(value)),
                "r" => entry.writer = String::from_utf8_lossy(&value).into_owned(),
                "q" => entry.request = Some(String::from_utf8_lossy(&value).into_owned()),
                "b" => entry.backend = Some(String::from_utf8_lossy(&value).into_owned()),
                "end" => entry.end = true,
                _ => {}
            }
        }
        Ok(Entry(entry))
    }
}
