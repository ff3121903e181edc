//! Why a credential was refused: the `data.reason` of the 401 answer.

/// Why a credential was refused: `data.reason` of the 401 answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No credential at all.
    Missing,
    /// Not a well-formed token (or too long).
    Malformed,
    /// The signature does not verify.
    BadSignature,
    /// No key with the token's `kid`, even after fetching the key set again.
    UnknownKey,
    /// `alg: none`, a symmetric algorithm, or one the key is not for.
    Algorithm,
    /// Past `exp` (plus leeway).
    Expired,
    /// Before `nbf` (minus leeway).
    NotYetValid,
    /// `iss` is not the configured issuer.
    WrongIssuer,
    /// `aud` does not name this resource.
    WrongAudience,
    /// An API key that is not in the key file.
    UnknownApiKey,
    /// A claim an identity header carries holds a control character (CR, LF, ...): no
    /// header can carry it (`identity.rs`).
    Unrenderable,
}

impl Refusal {
    /// The `data.reason` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Missing => "missing",
            Refusal::Malformed => "malformed",
            Refusal::BadSignature => "bad-signature",
            Refusal::UnknownKey => "unknown-key",
            Refusal::Algorithm => "algorithm-not-allowed",
            Refusal::Expired => "expired",
            Refusal::NotYetValid => "not-yet-valid",
            Refusal::WrongIssuer => "wrong-issuer",
            Refusal::WrongAudience => "wrong-audience",
            Refusal::UnknownApiKey => "unknown-api-key",
            Refusal::Unrenderable => "unrenderable-claim",
        }
    }
}
