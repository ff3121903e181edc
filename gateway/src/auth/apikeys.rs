//! API keys: a file of `<sha256 hex of the key> <principal name>` lines (`#` comments), so the
//! file holds no usable secret. Re-read when its modification time or size changes (looked at
//! at most once a second); an unreadable or broken file keeps the keys already loaded.
//!
//! A presented key is looked up by its SHA-256 digest, not compared with `subtle` as the admin
//! token is: what the map's lookup may take time over is the digest, and a digest's first bytes
//! tell nothing of a key that has them.

use super::principal::Principal;
use crate::config::ApiKeysConfig;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often the file is looked at for changes.
const CHECK_EVERY: Duration = Duration::from_secs(1);

type Keys = HashMap<[u8; 32], Arc<Principal>>;

struct Loaded {
    keys: Arc<Keys>,
    stamp: Option<(SystemTime, u64)>,
    checked: Instant,
}

/// The key file, loaded.
pub struct ApiKeys {
    file: PathBuf,
    header: http::HeaderName,
    loaded: Mutex<Loaded>,
}

impl ApiKeys {
    /// Loads the key file of `config`.
    pub fn new(config: &ApiKeysConfig) -> ApiKeys {
        let keys = ApiKeys {
            file: config.file.clone(),
            header: http::HeaderName::from_bytes(config.header.as_bytes())
                .unwrap_or(http::HeaderName::from_static("x-api-key")),
            loaded: Mutex::new(Loaded {
                keys: Arc::new(HashMap::new()),
                stamp: None,
                checked: Instant::now(),
            }),
        };
        keys.reload_if_changed(true);
        keys
    }

    /// The header carrying a key besides `Authorization: Bearer`.
    pub fn header(&self) -> &http::HeaderName {
        &self.header
    }

    /// The principal of `key`, if the file lists its hash.
    pub fn lookup(&self, key: &[u8]) -> Option<Arc<Principal>> {
        let keys = self.reload_if_changed(false);
        let digest: [u8; 32] = Sha256::digest(key).into();
        keys.get(&digest).cloned()
    }

    fn reload_if_changed(&self, force: bool) -> Arc<Keys> {
        let mut loaded = crate::sync::lock(&self.loaded);
        if !force && loaded.checked.elapsed() < CHECK_EVERY {
            return loaded.keys.clone();
        }
        loaded.checked = Instant::now();
        let stamp = std::fs::metadata(&self.file)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        if stamp.is_some() && stamp == loaded.stamp {
            return loaded.keys.clone();
        }
        match std::fs::read_to_string(&self.file) {
            Ok(text) => {
                let keys = parse(&text);
                tracing::info!(file = %self.file.display(), keys = keys.len(), "API keys loaded");
                loaded.keys = Arc::new(keys);
                loaded.stamp = stamp;
            }
            Err(e) => {
                tracing::warn!(file = %self.file.display(), error = %e, "API key file unreadable; keeping the keys loaded")
            }
        }
        loaded.keys.clone()
    }
}

/// Parses key lines; malformed lines are skipped with a warning.
fn parse(text: &str) -> Keys {
    let mut keys = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(hash), Some(name)) = (parts.next(), parts.next()) else {
            tracing::warn!(line = n + 1, "API key line needs `<sha256 hex> <name>`");
            continue;
        };
        let Some(digest) = hex32(hash) else {
            tracing::warn!(line = n + 1, "API key hash is not 64 hex digits");
            continue;
        };
        keys.insert(
            digest,
            Arc::new(Principal {
                id: format!("key:{name}").into(),
                subject: name.to_owned(),
                scopes: parts.map(str::to_owned).collect(),
                claims: Default::default(),
            }),
        );
    }
    keys
}

fn hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha_hex(key: &str) -> String {
        Sha256::digest(key.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn a_key_file_maps_hashes_to_principals_and_skips_broken_lines() {
        let text = format!(
            "# comment\n{} alice tools admin\nnot-a-hash bob\n{}\n",
            sha_hex("secret-a"),
            sha_hex("lonely")
        );
        let keys = parse(&text);
        assert_eq!(keys.len(), 1);
        let digest: [u8; 32] = Sha256::digest(b"secret-a").into();
        let alice = &keys[&digest];
        assert_eq!(&*alice.id, "key:alice");
        assert!(alice.has_scope("admin"));
    }

    #[test]
    fn a_changed_key_file_is_picked_up() {
        let dir = std::env::temp_dir().join(format!("mcpgw-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("keys.txt");
        std::fs::write(&file, format!("{} alice\n", sha_hex("one"))).unwrap();
        let keys = ApiKeys::new(&ApiKeysConfig {
            file: file.clone(),
            header: "x-api-key".into(),
        });
        assert!(keys.lookup(b"one").is_some());
        assert!(keys.lookup(b"two").is_none());
        std::fs::write(
            &file,
            format!("{} bob\n{} carol\n", sha_hex("two"), sha_hex("three")),
        )
        .unwrap();
        keys.reload_if_changed(true);
        assert_eq!(&*keys.lookup(b"two").unwrap().id, "key:bob");
        assert!(keys.lookup(b"one").is_none());
        std::fs::remove_dir_all(&dir).ok();
    }
}
