//! The console's files, embedded in the binary at build time (`include_bytes!` of
//! `console/assets/`: plain HTML, CSS and JavaScript modules, no build step, nothing fetched
//! from elsewhere at run time, so the console works air-gapped), and the headers every console
//! answer carries: a Content-Security-Policy that lets the page load only its own files and
//! talk only to its own origin, no sniffing, no referrer, no framing.

use http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};

/// The page's policy: its own scripts, styles and connections only (no inline code: every
/// script and style is a file below), images from itself or `data:`, never framed, no `<base>`,
/// no form posts.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; \
    form-action 'none'";

/// One embedded file: its path under `/console/`, content type and bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the console. A module imports the others by their `/console/` paths.
const ASSETS: &[Asset] = &[
    Asset {
        path: "index.html",
        content_type: HTML,
        body: include_bytes!("assets/index.html"),
    },
    Asset {
        path: "console.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("assets/console.css"),
    },
    Asset {
        path: "console.js",
        content_type: JS,
        body: include_bytes!("assets/console.js"),
    },
    Asset {
        path: "render.js",
        content_type: JS,
        body: include_bytes!("assets/render.js"),
    },
    Asset {
        path: "charts.js",
        content_type: JS,
        body: include_bytes!("assets/charts.js"),
    },
    Asset {
        path: "actions.js",
        content_type: JS,
        body: include_bytes!("assets/actions.js"),
    },
    Asset {
        path: "pins.js",
        content_type: JS,
        body: include_bytes!("assets/pins.js"),
    },
    Asset {
        path: "favicon.svg",
        content_type: "image/svg+xml",
        body: include_bytes!("assets/favicon.svg"),
    },
];

/// The answer for `path` (`/`, `/console` and `/console/` are the page), or 404.
pub fn answer(path: &str) -> Response<Vec<u8>> {
    let name = match path {
        "/" | "/console" | "/console/" => "index.html",
        p => p.strip_prefix("/console/").unwrap_or(""),
    };
    match ASSETS.iter().find(|a| a.path == name) {
        Some(a) => response(StatusCode::OK, a.content_type, a.body.to_vec()),
        None => response(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            b"no such console file\n".to_vec(),
        ),
    }
}

/// An answer with `body` and the console's headers.
pub fn response(
    status: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
) -> Response<Vec<u8>> {
    let length = HeaderValue::from(body.len());
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CONTENT_LENGTH, length);
    secure(headers);
    response
}

/// The JSON-RPC error `e` as an answer (id `null`: no JSON-RPC request was made), with its
/// status, its headers and the console's: the admin listener's refusals and the stream's 503.
pub fn error(e: &crate::error::GatewayError) -> Response<Vec<u8>> {
    let (status, extra, body) = e.to_http(&mcp_wire::RequestId::null());
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut answer = response(status, "application/json", body.to_vec());
    for (name, value) in extra {
        if let Ok(value) = HeaderValue::from_str(&value) {
            answer.headers_mut().insert(name, value);
        }
    }
    answer
}

/// The console's headers on `headers`: the policy, no sniffing, no referrer, not cached (the
/// page is small, and an upgraded gateway must never run an old script).
pub fn secure(headers: &mut http::HeaderMap) {
    let set = [
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_console_answer_carries_the_policy_and_the_page_has_no_inline_code() {
        for path in ["/", "/console", "/console/console.js", "/console/nope"] {
            let r = answer(path);
            assert_eq!(r.headers()["content-security-policy"], CSP, "{path}");
            assert_eq!(r.headers()["x-content-type-options"], "nosniff");
            assert_eq!(r.headers()["referrer-policy"], "no-referrer");
        }
        assert_eq!(answer("/console/nope").status(), StatusCode::NOT_FOUND);
        let page = String::from_utf8(answer("/").into_body()).unwrap();
        assert!(!page.contains("<style"), "no inline style element");
        assert!(!page.contains(" style="), "no inline style attribute");
        let handler = page.split(" on").skip(1).any(|rest| {
            let name = rest.trim_start_matches(|c: char| c.is_ascii_lowercase());
            name.len() < rest.len() && name.starts_with('=')
        });
        assert!(!handler, "no inline event handler");
        for tag in page.split("<script").skip(1) {
            assert!(tag.starts_with(" type=\"module\" src=\"/console/"), "{tag}");
        }
    }

    #[test]
    fn the_scripts_never_write_html() {
        for a in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            let text = std::str::from_utf8(a.body).unwrap();
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
            ] {
                assert!(!text.contains(sink), "{} uses {sink}", a.path);
            }
        }
    }
}
