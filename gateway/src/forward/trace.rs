//! Request ids: the client's `X-Request-Id` when it sends a usable one, else one the gateway
//! makes (a per-process random prefix and a counter: unique, cheap, no clock). The id is set on
//! the request itself, so every upstream request made for it carries it.

use pingora::http::RequestHeader;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The header carrying the request id.
pub const REQUEST_ID: &str = "x-request-id";

/// Returns the request's id, adding a fresh one to the request when it has none.
pub fn request_id(req: &mut RequestHeader) -> String {
    static NAME: http::HeaderName = http::HeaderName::from_static(REQUEST_ID);
    let given = req
        .headers
        .get(&NAME)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128);
    if let Some(id) = given {
        return id.to_owned();
    }
    static PREFIX: OnceLock<u32> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(rand::random);
    let id = made_id(prefix, NEXT.fetch_add(1, Ordering::Relaxed));
    let _ = req.insert_header(REQUEST_ID, id.as_str());
    id
}

/// `{prefix:08x}-{n:x}`, written by hand: `format!` costs ten times as much, on every request.
fn made_id(prefix: u32, n: u64) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 8 + 1 + 16];
    for (i, slot) in out[..8].iter_mut().enumerate() {
        *slot = HEX[(prefix >> (28 - 4 * i) & 0xf) as usize];
    }
    out[8] = b'-';
    let digits = (64 - n.leading_zeros()).div_ceil(4).max(1) as usize;
    for i in 0..digits {
        out[9 + i] = HEX[(n >> (4 * (digits - 1 - i)) & 0xf) as usize];
    }
    // ASCII hex digits and a dash
    String::from_utf8_lossy(&out[..9 + digits]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{made_id, request_id};
    use pingora::http::RequestHeader;

    #[test]
    fn made_ids_are_the_prefix_and_the_counter_in_hex() {
        for (prefix, n) in [
            (0, 0),
            (0xdead_beef, 1),
            (7, 0xff),
            (u32::MAX, u64::MAX),
            (0x10, 0x1000),
        ] {
            assert_eq!(made_id(prefix, n), format!("{prefix:08x}-{n:x}"));
        }
    }

    #[test]
    fn a_request_without_one_gets_an_id_with_or_without_header_case() {
        for mut req in [
            RequestHeader::build("POST", b"/mcp", None).unwrap(),
            RequestHeader::build_no_case("POST", b"/mcp", None).unwrap(),
        ] {
            req.insert_header("Mcp-Method", "tools/call").unwrap();
            let id = request_id(&mut req);
            assert_eq!(req.headers["x-request-id"], id.as_str());
            // written as pingora writes it upstream: both headers, whatever the maps
            let mut wire = Vec::new();
            req.header_to_h1_wire(&mut wire);
            let wire = String::from_utf8(wire).unwrap().to_ascii_lowercase();
            assert!(wire.contains(&format!("x-request-id: {id}\r\n")), "{wire}");
            assert!(wire.contains("mcp-method: tools/call\r\n"), "{wire}");
            // a client's own id is kept
            assert_eq!(request_id(&mut req), id);
        }
    }
}
