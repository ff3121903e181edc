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
    fn new_versions_are_stateless() {
        assert_eq!(Era::of_version(Some("2026-07-28")), Era::Stateless);
        assert_eq!(Era::of_version(Some("2027-01-01")), Era::Stateless);
    }
}
