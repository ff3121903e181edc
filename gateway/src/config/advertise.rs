//! `bridge.advertise-url`: the address other replicas reach this one at, sealed into the
//! `requestState`s it issues so that a retry of an `input_required` call reaching another
//! replica is forwarded to the one holding the parked call (`crate::bridge::modern_clients`).
//! `${VAR}` in the value is read from the environment (a pod's IP in Kubernetes).

use super::problems::Problems;

const KEY: &str = "bridge.advertise-url";

/// Where other replicas reach this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advertise {
    /// `http(s)://HOST:PORT`, normalized (what the states carry, compared as text).
    pub url: String,
    /// The host (an IP address or a DNS name resolved when a retry is forwarded).
    pub host: String,
    /// The port (the scheme's default when the URL has none).
    pub port: u16,
    /// `https`.
    pub tls: bool,
}

impl Advertise {
    /// Reads a holder's URL as [`advertise`] normalized it (from a sealed state: only a
    /// replica with the key wrote it); `None` when it is not one.
    pub fn parse(url: &str) -> Option<Advertise> {
        let u = url::Url::parse(url).ok()?;
        let tls = match u.scheme() {
            "http" => false,
            "https" => true,
            _ => return None,
        };
        let host = match u.host()? {
            url::Host::Ipv6(a) => a.to_string(),
            h => h.to_string(),
        };
        let port = u.port_or_known_default()?;
        let bare = u.path() == "/" && u.query().is_none() && u.fragment().is_none();
        if !bare || !u.username().is_empty() || u.password().is_some() {
            return None;
        }
        let shown = match u.host()? {
            url::Host::Ipv6(a) => format!("[{a}]"),
            h => h.to_string(),
        };
        Some(Advertise {
            url: format!("{}://{shown}:{port}", u.scheme()),
            host,
            port,
            tls,
        })
    }
}

/// Validates `bridge.advertise-url` (`${VAR}` expanded first).
pub(super) fn advertise(p: &mut Problems, raw: &str) -> Option<Advertise> {
    let expanded = match expand(raw) {
        Ok(s) => s,
        Err(var) => {
            p.add(KEY, format!("environment variable {var} is not set"));
            return None;
        }
    };
    let parsed = Advertise::parse(&expanded);
    if parsed.is_none() {
        p.add(
            KEY,
            format!("`{expanded}` is not http(s)://HOST:PORT (no path, query or user)"),
        );
    }
    parsed
}

/// `raw` with each `${NAME}` replaced by the environment's value; the first unset name.
fn expand(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(after.to_owned());
        };
        let name = &after[..end];
        out.push_str(&std::env::var(name).map_err(|_| name.to_owned())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str) -> (Option<Advertise>, usize) {
        let mut p = Problems::default();
        let a = advertise(&mut p, raw);
        (a, p.0.len())
    }

    #[test]
    fn an_advertise_url_is_normalized_with_its_port_and_env_read() {
        let (a, n) = check("http://10.0.0.7:8080");
        assert_eq!(n, 0);
        let a = a.unwrap();
        assert_eq!(a.url, "http://10.0.0.7:8080");
        assert_eq!((a.host.as_str(), a.port, a.tls), ("10.0.0.7", 8080, false));
        let a = check("https://gw-0.gw.ns.svc/").0.unwrap();
        assert_eq!(a.url, "https://gw-0.gw.ns.svc:443");
        assert!(a.tls);
        let a = check("http://[::1]:9000").0.unwrap();
        assert_eq!(
            (a.url.as_str(), a.host.as_str()),
            ("http://[::1]:9000", "::1")
        );
        // PATH is set in every test process
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand("a${PATH}b").unwrap(), format!("a{path}b"));
    }

    #[test]
    fn an_advertise_url_with_a_path_another_scheme_or_an_unset_variable_is_a_problem() {
        for bad in [
            "http://10.0.0.7:8080/mcp",
            "ftp://10.0.0.7",
            "10.0.0.7:8080",
            "http://u:p@10.0.0.7:8080",
            "http://${MCPGW_SURELY_UNSET_VARIABLE}:8080",
            "http://${UNCLOSED",
        ] {
            assert_eq!(check(bad), (None, 1), "{bad}");
        }
    }
}
