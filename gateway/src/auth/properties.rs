//! Property tests (proptest) for the auth parsers of untrusted bytes, in the crate because
//! `auth` is not public: resource URIs (`resource_uri.rs`: never panics; every form it gives
//! for a URI is matched by authz as the URI itself is, so no spelling slips past a rule) and
//! JWTs (`jwt.rs`: arbitrary token strings and headers never panic and are never accepted
//! without a valid signature; `alg: none`, HMAC and alg/key mismatches are refused).
//!
//! `cargo test -p mcp-gateway --lib auth::properties` runs 64 cases per property (or
//! `PROPTEST_CASES`).

use super::authz::RouteGuard;
use super::resource_uri::{forms, routing_forms};
use super::{Auth, Principal};
use crate::config::{AuthConfig, AuthzRule, JwksSource, JwtConfig, Pattern, Require};
use base64::Engine as _;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use proptest::prelude::*;
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const ISS: &str = "https://idp.example.com";
const AUD: &str = "https://gw.example.com/mcp";

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    ProptestConfig::with_cases(cases)
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/auth")
        .join(name)
}

fn auth() -> Auth {
    Auth::new(&AuthConfig {
        resource: AUD.into(),
        authorization_servers: vec![ISS.into()],
        scopes_supported: vec![],
        jwt: Some(JwtConfig {
            issuer: ISS.into(),
            audiences: vec![AUD.into()],
            jwks: JwksSource::File(fixture("jwks.json")),
            leeway: Duration::from_secs(30),
            refresh_min_interval: Duration::from_secs(60),
            fetch_timeout: crate::config::DEFAULT_JWKS_FETCH_TIMEOUT,
        }),
        api_keys: None,
    })
}

fn claims() -> serde_json::Value {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "exp": now + 600, "scope": "tools"})
}

fn sign(alg: Algorithm, kid: &str, pem: &str) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    let bytes = std::fs::read(fixture(pem)).unwrap();
    let key = match alg {
        Algorithm::ES256 => EncodingKey::from_ec_pem(&bytes).unwrap(),
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
            EncodingKey::from_secret(&bytes).unwrap()
        }
        _ => EncodingKey::from_rsa_pem(&bytes).unwrap(),
    };
    encode(&header, &claims(), &key).unwrap()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Whether `token` is accepted (`Err`: the refusal's `data.reason`).
fn accepted(rt: &tokio::runtime::Runtime, auth: &Auth, token: &str) -> Result<(), String> {
    let mut headers = http::HeaderMap::new();
    let Ok(value) = format!("Bearer {token}").parse() else {
        return Err("not a header value".into());
    };
    headers.insert(http::header::AUTHORIZATION, value);
    rt.block_on(auth.authenticate(&headers))
        .map(|_| ())
        .map_err(|e| e.data["reason"].as_str().unwrap_or("").to_owned())
}

/// A token-like string: base64url-ish segments, dots, and anything printable.
fn token_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_=-]{0,40}(\\.[A-Za-z0-9_=-]{0,40}){0,4}",
        "[ -~]{0,80}",
        prop::collection::vec(any::<u8>(), 0..60).prop_map(|b| b64(&b)),
        (
            prop::collection::vec(any::<u8>(), 0..40),
            prop::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(h, c)| format!("{}.{}.{}", b64(&h), b64(&c), b64(b"sig"))),
    ]
}

/// A JWT header as an attacker may write it.
fn any_header() -> impl Strategy<Value = serde_json::Value> {
    let alg = prop::sample::select(vec![
        "none", "None", "NONE", "HS256", "HS512", "RS256", "RS512", "PS256", "ES256", "ES384",
        "EdDSA", "", "rs256",
    ]);
    let kid = prop::option::of(prop::sample::select(vec!["rs-1", "es-1", "nope", ""]));
    (alg, kid, prop::option::of("[a-z]{0,6}"), any::<bool>()).prop_map(|(alg, kid, typ, jwk)| {
        let mut h = json!({ "alg": alg });
        if let Some(kid) = kid {
            h["kid"] = json!(kid);
        }
        if let Some(typ) = typ {
            h["typ"] = json!(typ);
        }
        if jwk {
            // a key embedded in the header is never trusted
            h["jwk"] = json!({"kty": "oct", "k": b64(b"attacker")});
        }
        h
    })
}

/// A URI an attacker may spell a protected resource with: case, dot segments, escapes,
/// whitespace, controls, non-ASCII.
fn any_uri() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("admin".to_owned()),
        Just("ADMIN".to_owned()),
        Just("://".to_owned()),
        Just(":".to_owned()),
        Just("/".to_owned()),
        Just("/../".to_owned()),
        Just("/./".to_owned()),
        Just("%2e%2E/".to_owned()),
        Just("%73ecret".to_owned()),
        Just("secret".to_owned()),
        Just("%".to_owned()),
        Just("%ff".to_owned()),
        Just("%c3%a9".to_owned()),
        Just("\t".to_owned()),
        Just(" ".to_owned()),
        Just("\u{0}".to_owned()),
        Just("file".to_owned()),
        Just("https://Host:443".to_owned()),
        Just("é".to_owned()),
        Just("?q=1#f".to_owned()),
        "[ -~]{0,4}",
        "\\PC{0,3}",
    ];
    prop::collection::vec(piece, 0..10).prop_map(|p| p.concat())
}

/// `s` as a glob matching exactly itself.
fn literal_glob(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A guard whose one rule on `resources/read` requires the scope `admin` for `glob`.
fn guard(glob: &str) -> Option<RouteGuard> {
    let rule = AuthzRule {
        method: Some(Pattern::new("resources/read").ok()?),
        name: Some(Pattern::new(glob).ok()?),
        require: Require::Scope("admin".into()),
    };
    Some(RouteGuard::from_rules(false, &[rule]))
}

fn user() -> Principal {
    Principal {
        id: "t|user".into(),
        subject: "user".into(),
        scopes: vec!["tools".into()],
        claims: Default::default(),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn resource_uri_forms_never_panic_and_keep_the_uri_first(uri in any_uri(), raw in "\\PC{0,40}") {
        for uri in [&uri, &raw] {
            let routed = routing_forms(uri);
            prop_assert_eq!(routed[0].as_ref(), uri.as_str());
            if let Ok(all) = forms(uri) {
                prop_assert_eq!(all[0].as_ref(), uri.as_str());
                for f in &all {
                    prop_assert!(!f.chars().any(|c| c.is_ascii_control()), "{:?}", f);
                }
                let mut unique = all.clone();
                unique.dedup();
                prop_assert_eq!(unique.len(), all.len());
            }
        }
    }

    #[test]
    fn every_form_of_a_uri_is_matched_by_authz_as_the_uri_is(uri in any_uri()) {
        let Ok(all) = forms(&uri) else {
            // undecidable: refused by any rule on the method, whatever the name
            let g = guard("nothing-matches-this").unwrap();
            prop_assert!(g.decide(Some(&user()), Some("resources/read"), Some(&uri)).is_err());
            return Ok(());
        };
        let user = user();
        for form in &all {
            // a rule naming any one form of the URI catches the URI itself
            let Some(g) = guard(&literal_glob(form)) else { continue };
            let denied = g.decide(Some(&user), Some("resources/read"), Some(&uri));
            prop_assert!(denied.is_err(), "{:?} slipped past a rule on its form {:?}", uri, form);
            // and each form, sent as it is, is refused by that rule too
            prop_assert!(g.decide(Some(&user), Some("resources/read"), Some(form)).is_err());
            // the scope the rule asks for lets it through
            let admin = Principal { scopes: vec!["admin".into()], ..user.clone() };
            prop_assert!(g.decide(Some(&admin), Some("resources/read"), Some(&uri)).is_ok());
        }
    }

    #[test]
    fn arbitrary_token_strings_are_never_accepted(token in token_like()) {
        let (rt, auth) = (runtime(), auth());
        prop_assert!(accepted(&rt, &auth, &token).is_err(), "{}", token);
    }

    #[test]
    fn a_valid_signature_under_another_header_is_never_accepted(header in any_header()) {
        let (rt, auth) = (runtime(), auth());
        let valid = sign(Algorithm::RS256, "rs-1", "rs256.pem");
        prop_assert_eq!(accepted(&rt, &auth, &valid), Ok(()));
        let mut parts = valid.split('.');
        let (original, claims, signature) =
            (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        let forged = b64(header.to_string().as_bytes());
        prop_assume!(forged != original);
        for sig in [signature, "", "AAAA"] {
            let token = format!("{forged}.{claims}.{sig}");
            let refused = accepted(&rt, &auth, &token);
            prop_assert!(refused.is_err(), "{} accepted", header);
            let alg = header["alg"].as_str().unwrap_or("");
            if alg == "none" || alg.starts_with("HS") {
                prop_assert_eq!(refused.unwrap_err(), "algorithm-not-allowed");
            }
        }
    }

    #[test]
    fn a_tampered_token_is_never_accepted(at in any::<usize>(), byte in any::<u8>()) {
        let (rt, auth) = (runtime(), auth());
        let valid = sign(Algorithm::RS256, "rs-1", "rs256.pem");
        let mut bytes = valid.clone().into_bytes();
        let at = at % bytes.len();
        prop_assume!(bytes[at] != byte);
        bytes[at] = byte;
        let token = String::from_utf8_lossy(&bytes).into_owned();
        prop_assume!(token != valid);
        // base64url padding bits: a changed last character may decode to the same signature
        let last = valid.len() - 1;
        prop_assume!(at != last);
        prop_assert!(accepted(&rt, &auth, &token).is_err(), "{}", token);
    }
}

#[test]
fn none_hmac_and_alg_key_mismatches_are_refused() {
    let (rt, auth) = (runtime(), auth());
    let claims = b64(claims().to_string().as_bytes());
    for alg in ["none", "HS256"] {
        let header = b64(json!({"alg": alg, "kid": "rs-1"}).to_string().as_bytes());
        for sig in ["", "c2ln"] {
            let token = format!("{header}.{claims}.{sig}");
            assert_eq!(
                accepted(&rt, &auth, &token),
                Err("algorithm-not-allowed".into())
            );
        }
    }
    // the RSA public key as an HMAC secret (the classic confusion)
    let hs = sign(Algorithm::HS256, "rs-1", "rs256.pub.pem");
    assert_eq!(
        accepted(&rt, &auth, &hs),
        Err("algorithm-not-allowed".into())
    );
    // an RS256 signature named as the EC key, and an ES256 one named as the RSA key
    for token in [
        sign(Algorithm::RS256, "es-1", "rs256.pem"),
        sign(Algorithm::ES256, "rs-1", "es256.pem"),
        sign(Algorithm::PS256, "rs-1", "rs256.pem"),
    ] {
        assert!(accepted(&rt, &auth, &token).is_err(), "{token}");
    }
}
