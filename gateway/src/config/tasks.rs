//! `tasks`: how long the gateway keeps where a task lives, and how many such records. File
//! struct, typed settings with their defaults, validation. A leaf of `crate::config` (which
//! imports it): it imports only `config/problems.rs`.

use super::problems::{Problems, Unknown};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

/// `tasks` in the file.
#[derive(Debug, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub struct FileTasks {
    /// Whether the gateway learns where the tasks its backends create live and routes `tasks/get`, `tasks/update` and `tasks/cancel` there. Default true.
    pub enabled: Option<bool>,
    /// The longest a task's record is kept, in seconds, whatever TTL its server gave (a task without one, `ttlMs: null`, is kept this long). Default 86400 (a day).
    pub max_ttl_s: Option<u64>,
    /// Most task records kept by this replica (with `sessions.store: redis`, most it writes and keeps in its own cache). Past it, new tasks are not recorded (counted as `unrecorded`): their polls are balanced like any request. Default 100000.
    pub max_records: Option<usize>,
    /// Most task records of one principal (anonymous callers: one peer address, IPv6 by /64), so no one caller fills the store for the others. Default 10000.
    pub max_per_principal: Option<usize>,
    /// The longest task id, in bytes, the gateway records or looks up; a longer `params.taskId` is refused with -32602. Default 256.
    pub max_id_bytes: Option<usize>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: Unknown,
}

/// The task records' settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TasksConfig {
    /// `enabled`. Default true.
    pub enabled: bool,
    /// `max-ttl-s`. Default a day.
    pub max_ttl: Duration,
    /// `max-records`. Default 100,000.
    pub max_records: usize,
    /// `max-per-principal`. Default 10,000.
    pub max_per_principal: usize,
    /// `max-id-bytes`. Default 256.
    pub max_id_bytes: usize,
}

impl Default for TasksConfig {
    fn default() -> Self {
        TasksConfig {
            enabled: true,
            max_ttl: Duration::from_secs(86_400),
            max_records: 100_000,
            max_per_principal: 10_000,
            max_id_bytes: 256,
        }
    }
}

/// Validates `tasks`.
pub(crate) fn validate(p: &mut Problems, file: &FileTasks) -> TasksConfig {
    p.unknown(
        "tasks",
        &file.unknown,
        "enabled, max-ttl-s, max-records, max-per-principal, max-id-bytes",
    );
    let d = TasksConfig::default();
    let mut at_least_one = |key: &str, v: Option<u64>, default: u64| {
        p.at_least_one(&format!("tasks.{key}"), v, default)
    };
    let as_u64 = |v: Option<usize>| v.map(|n| n as u64);
    TasksConfig {
        enabled: file.enabled.unwrap_or(true),
        max_ttl: Duration::from_secs(at_least_one(
            "max-ttl-s",
            file.max_ttl_s,
            d.max_ttl.as_secs(),
        )),
        max_records: at_least_one(
            "max-records",
            as_u64(file.max_records),
            d.max_records as u64,
        ) as usize,
        max_per_principal: at_least_one(
            "max-per-principal",
            as_u64(file.max_per_principal),
            d.max_per_principal as u64,
        ) as usize,
        max_id_bytes: at_least_one(
            "max-id-bytes",
            as_u64(file.max_id_bytes),
            d.max_id_bytes as u64,
        ) as usize,
    }
}
