//! TLS on the listener (`listen-tls`) through pingora's rustls feature, with the certificate and
//! key reloaded when their files change: a rustls certificate resolver that looks at the files'
//! modification times at most once a second (on a handshake) and swaps in the new pair; a pair
//! that cannot be loaded keeps the current one (logged), so a half-written renewal never takes
//! the listener down.
//!
//! The handshake is the connection loop's, not the listener's ([`handshake`]): a connection is
//! admitted (`limits.max-connections`, its client's share) before it, so one handshaking counts
//! against the bounds, and it must end within `client-timeouts.header-s` (pingora's listener
//! gave every handshake 60 s, before any bound).

use arc_swap::ArcSwapOption;
use pingora::listeners::tls::{Acceptor, TlsSettings};
use pingora::protocols::l4::stream::Stream as L4Stream;
use pingora::protocols::Stream;
use pingora::tls::sign::CertifiedKey;
use pingora::tls::{ClientHello, CryptoProvider, ResolvesServerCert};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often the files are looked at for changes.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The listener's certificate, reloaded when its files change.
#[derive(Debug)]
pub struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    current: ArcSwapOption<CertifiedKey>,
    /// Modification times of the loaded pair, and when they were last looked at.
    seen: Mutex<(Option<(SystemTime, SystemTime)>, Instant)>,
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).ok()?.modified().ok()
}

impl ReloadingCert {
    /// Loads the pair now; an error when it cannot be loaded (the gateway does not start).
    pub fn new(cert: &Path, key: &Path) -> Result<Arc<ReloadingCert>, String> {
        pingora::tls::install_default_crypto_provider();
        let loaded = load(cert, key)?;
        Ok(Arc::new(ReloadingCert {
            cert: cert.to_owned(),
            key: key.to_owned(),
            current: ArcSwapOption::from_pointee(loaded),
            seen: Mutex::new((modified(cert).zip(modified(key)), Instant::now())),
        }))
    }

    /// pingora TLS settings serving this certificate.
    pub fn settings(self: &Arc<Self>) -> TlsSettings {
        let mut settings = TlsSettings::intermediate("", "")
            .unwrap_or_else(|_| unreachable!("intermediate() only stores the paths"));
        settings.set_cert_resolver(self.clone());
        settings
    }

    fn reload_if_changed(&self) {
        let mut seen = crate::sync::lock(&self.seen);
        if seen.1.elapsed() < CHECK_EVERY {
            return;
        }
        seen.1 = Instant::now();
        let stamp = modified(&self.cert).zip(modified(&self.key));
        if stamp.is_none() || stamp == seen.0 {
            return;
        }
        match load(&self.cert, &self.key) {
            Ok(pair) => {
                self.current.store(Some(Arc::new(pair)));
                seen.0 = stamp;
                tracing::info!(cert = %self.cert.display(), "listener certificate reloaded");
            }
            Err(e) => {
                tracing::warn!(error = %e, "listener certificate not reloaded; keeping the current one")
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.reload_if_changed();
        self.current.load_full()
    }
}

/// A certificate chain and its key from PEM files.
fn load(cert: &Path, key: &Path) -> Result<CertifiedKey, String> {
    let (cert_s, key_s) = (cert.to_string_lossy(), key.to_string_lossy());
    let (chain, key) = pingora::tls::load_certs_and_key_files(&cert_s, &key_s)
        .map_err(|e| format!("{cert_s} / {key_s}: {e}"))?
        .ok_or_else(|| format!("{cert_s} / {key_s}: no certificate or no key"))?;
    let provider = CryptoProvider::get_default()
        .ok_or_else(|| "no TLS crypto provider installed".to_owned())?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("{key_s}: {e}"))?;
    let pair = CertifiedKey::new(chain, signing);
    // A renewal caught between writing the key and the certificate must not be served.
    pair.keys_match()
        .map_err(|e| format!("{cert_s} / {key_s}: the key does not match the certificate: {e}"))?;
    Ok(pair)
}

/// The TLS handshake of an accepted connection (`stream`, as the plain listener made it), within
/// `within`: the TLS stream, or `None` when the handshake failed or took longer (the connection
/// closes; a client's failed handshake is logged at debug level, it is no fault of the
/// gateway's). The handshake's state is boxed and dropped once done, so a connection's future
/// holds no room for it afterwards.
pub async fn handshake(acceptor: &Acceptor, stream: Stream, within: Duration) -> Option<Stream> {
    let Ok(l4) = stream.into_any().downcast::<L4Stream>() else {
        tracing::warn!("a TLS listener's connection is not a TCP stream; closed");
        return None;
    };
    let handshake = Box::pin(acceptor.tls_handshake(*l4));
    match tokio::time::timeout(within, handshake).await {
        Ok(Ok(tls)) => Some(Box::new(tls)),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "client TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!(
                ?within,
                "client TLS handshake not done within client-timeouts.header-s"
            );
            None
        }
    }
}
