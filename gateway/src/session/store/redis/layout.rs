//! How a session lies in Redis: the record's hash fields (the immutable part as one JSON
//! field, the binding, generation, stale mark, settings and last use beside it, so scripts
//! change one field without parsing JSON), and the scripts that change a session atomically on
//! its slot.

use crate::session::store::StoreError;
use crate::session::{Binding, GoneReason, SessionRecord, Settings};
use redis::Script;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// The part of a record that never changes.
#[derive(Serialize, Deserialize)]
pub(super) struct Base {
    pub(super) id: Arc<str>,
    pub(super) pool: Arc<str>,
    pub(super) client: Arc<str>,
    pub(super) principal: Option<Arc<str>>,
    pub(super) path: Arc<str>,
    pub(super) init_params: Arc<str>,
    pub(super) protocol_version: Arc<str>,
}

/// A store error with `e` as its detail.
pub(super) fn failed(e: impl std::fmt::Display) -> StoreError {
    StoreError {
        detail: e.to_string(),
    }
}

pub(super) static CREATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'base', ARGV[1], 'binding', ARGV[2], 'gen', ARGV[3], 'stale', '0',
  'settings', ARGV[4], 'last_use', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1",
    )
});

pub(super) static TOUCH: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"local last = redis.call('HGET', KEYS[1], 'last_use')
if not last then return 0 end
if tonumber(ARGV[1]) > tonumber(last) then redis.call('HSET', KEYS[1], 'last_use', ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1",
    )
});

pub(super) static REBIND: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"local gen = redis.call('HGET', KEYS[1], 'gen')
if not gen then return {'none'} end
if gen ~= ARGV[1] then
  local f = redis.call('HGETALL', KEYS[1])
  table.insert(f, 1, 'lost')
  return f
end
local old = redis.call('HGET', KEYS[1], 'binding')
redis.call('HSET', KEYS[1], 'binding', ARGV[2], 'gen', ARGV[3], 'stale', '0')
local f = redis.call('HGETALL', KEYS[1])
table.insert(f, 1, old)
table.insert(f, 1, 'won')
return f",
    )
});

pub(super) static MARK_STALE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"if redis.call('HGET', KEYS[1], 'gen') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'stale', '1')
end
return 1",
    )
});

pub(super) static SETTINGS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"local cur = redis.call('HGET', KEYS[1], 'settings')
if not cur then return -1 end
if cur ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'settings', ARGV[2])
return 1",
    )
});

pub(super) static END: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"local f = redis.call('HGETALL', KEYS[1])
if #f == 0 then return f end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return f",
    )
});

pub(super) static CLAIM_EXPIRED: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"local last = redis.call('HGET', KEYS[1], 'last_use')
if not last then return {'missing'} end
local due = tonumber(last) + tonumber(ARGV[2])
if due > tonumber(ARGV[1]) then return {'later', tostring(due)} end
local f = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], 'expired', 'PX', ARGV[3])
table.insert(f, 1, 'expired')
return f",
    )
});

pub(super) fn parse_reason(s: &str) -> Option<GoneReason> {
    match s {
        "expired" => Some(GoneReason::Expired),
        "deleted" => Some(GoneReason::Deleted),
        "reinit-failed" => Some(GoneReason::ReinitFailed),
        _ => None,
    }
}

/// A record from its hash fields (a flat field/value list).
pub(super) fn decode(fields: &[String]) -> Result<SessionRecord, StoreError> {
    let map: HashMap<&str, &str> = fields
        .chunks_exact(2)
        .map(|kv| (kv[0].as_str(), kv[1].as_str()))
        .collect();
    let get = |k: &str| {
        map.get(k)
            .copied()
            .ok_or_else(|| failed(format!("session record without `{k}`")))
    };
    let base: Base = serde_json::from_str(get("base")?).map_err(failed)?;
    let mut binding: Binding = serde_json::from_str(get("binding")?).map_err(failed)?;
    binding.generation = get("gen")?.parse().map_err(failed)?;
    binding.stale = get("stale")? == "1";
    let settings: Settings = serde_json::from_str(get("settings")?).map_err(failed)?;
    Ok(SessionRecord {
        id: base.id,
        pool: base.pool,
        client: base.client,
        principal: base.principal,
        path: base.path,
        init_params: base.init_params,
        protocol_version: base.protocol_version,
        binding,
        settings,
        last_use_ms: get("last_use")?.parse().map_err(failed)?,
    })
}

pub(super) fn json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(failed)
}
