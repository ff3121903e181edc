//! TLS to a pool's backends (`pools.NAME.tls`) through pingora's rustls connector: the CA
//! bundle the backends' certificates must chain to (default: the system roots), the server
//! name sent and verified (default: the pool's `host` without port), verification on unless
//! `verify: false`.

use crate::config::PoolTls;
use pingora::protocols::tls::CaType;
use pingora::upstreams::peer::HttpPeer;
use pingora::utils::tls::{parse_x509, WrappedX509};
use std::net::SocketAddr;
use std::sync::Arc;

/// A pool's TLS settings, the CA bundle loaded.
#[derive(Debug)]
pub struct PeerTls {
    sni: String,
    verify: bool,
    ca: Option<Arc<CaType>>,
}

impl PeerTls {
    /// Loads the CA bundle of `config` (an unreadable bundle is logged and trusts nothing).
    pub fn new(config: &PoolTls, host: Option<&str>) -> PeerTls {
        let sni = config.sni.clone().unwrap_or_else(|| {
            host.map(|h| h.rsplit_once(':').map_or(h, |(name, _)| name))
                .unwrap_or_default()
                .to_owned()
        });
        let ca = config.ca.as_ref().map(|path| {
            let ders = match std::fs::read_to_string(path) {
                Ok(pem) => pem_certificates(&pem),
                Err(e) => {
                    tracing::error!(file = %path.display(), error = %e, "CA bundle unreadable");
                    Vec::new()
                }
            };
            let certs: Vec<WrappedX509> = ders
                .into_iter()
                .map(|der| WrappedX509::new(der, parse_x509))
                .collect();
            Arc::<CaType>::from(certs.into_boxed_slice())
        });
        PeerTls {
            sni,
            verify: config.verify,
            ca,
        }
    }

    /// A TLS peer for `addr`.
    pub fn peer(&self, addr: SocketAddr) -> HttpPeer {
        let mut peer = HttpPeer::new(addr, true, self.sni.clone());
        peer.options.verify_cert = self.verify;
        peer.options.verify_hostname = self.verify;
        peer.options.ca = self.ca.clone();
        peer
    }
}

/// The DER bytes of every `CERTIFICATE` block of a PEM bundle.
pub fn pem_certificates(pem: &str) -> Vec<Vec<u8>> {
    use base64::Engine as _;
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in pem.lines().map(str::trim) {
        match (&mut block, line) {
            (None, "-----BEGIN CERTIFICATE-----") => block = Some(String::new()),
            (Some(b), "-----END CERTIFICATE-----") => {
                if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b.as_bytes()) {
                    out.push(der);
                }
                block = None;
            }
            (Some(b), l) => b.push_str(l),
            (None, _) => {}
        }
    }
    out
}
