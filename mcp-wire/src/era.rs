//! The two protocol eras and how a request tells which one it speaks.

/// The first protocol revision without sessions.
pub const STATELESS_SINCE: &str = "2026-07-28";

/// Protocol era of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25 and earlier: `initialize` handshake and `Mcp-Session-Id`.
    Legacy,
    /// 2026-07-28 and later: every request carries `params._meta`, no session.
    Stateless,
}

impl Era {
    /// Classifies a protocol version string. Versions are ISO dates, so they order as strings;
    /// anything that is not a date (or absent) is treated as legacy, as the 2.3.0 server does.
    pub fn of_version(version: Option<&str>) -> Era {
        match version {
            Some(v) if is_date(v) && v >= STATELESS_SINCE => Era::Stateless,
            _ => Era::Legacy,
        }
    }

    /// Label for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Stateless => "stateless",
        }
    }
}

/// What a backend serves: which client eras it answers natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendEra {
    /// Only the 2025-11-25 era (and earlier): `initialize` and sessions.
    Legacy,
    /// Only 2026-07-28 (and later): per-request `_meta`, no sessions.
    Modern,
    /// Both: answers `initialize` sessions and 2026-07-28 requests.
    Dual,
}

impl BackendEra {
    /// Whether a request of `era` can go to this backend as it is, without a bridge.
    pub fn serves(self, era: Era) -> bool {
        matches!(
            (self, era),
            (BackendEra::Dual, _)
                | (BackendEra::Legacy, Era::Legacy)
                | (BackendEra::Modern, Era::Stateless)
        )
    }

    /// Parses a config value (`legacy`, `modern`, `dual`).
    pub fn parse(s: &str) -> Option<BackendEra> {
        match s {
            "legacy" => Some(BackendEra::Legacy),
            "modern" => Some(BackendEra::Modern),
            "dual" => Some(BackendEra::Dual),
            _ => None,
        }
    }

    /// Label for metrics, logs and the admin API.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendEra::Legacy => "legacy",
            BackendEra::Modern => "modern",
            BackendEra::Dual => "dual",
        }
    }
}

fn is_date(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_versions_are_legacy() {
        for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
            assert_eq!(Era::of_version(Some(v)), Era::Legacy, "{v}");
        }
        assert_eq!(Era::of_version(None), Era::Legacy);
        assert_eq!(Era::of_version(Some("garbage")), Era::Legacy);
    }

    #[test]
    fn a_backend_serves_its_own_era_and_dual_serves_both() {
        use BackendEra::*;
        assert!(Legacy.serves(Era::Legacy) && !Legacy.serves(Era::Stateless));
        assert!(Modern.serves(Era::Stateless) && !Modern.serves(Era::Legacy));
        assert!(Dual.serves(Era::Legacy) && Dual.serves(Era::Stateless));
        for e in [Legacy, Modern, Dual] {
            assert_eq!(BackendEra::parse(e.as_str()), Some(e));
        }
        assert_eq!(BackendEra::parse("detect"), None);
    }

    #[test]
    fn new_versions_are_stateless() {
        assert_eq!(Era::of_version(Some("2026-07-28")), Era::Stateless);
        assert_eq!(Era::of_version(Some("2027-01-01")), Era::Stateless);
    }
}
