//! The mock's answers by tool (the table in [`super`]'s header): JSON results, SSE progress,
//! dropped connections, answers that come late, and the HTTP writes they share with the legacy
//! flavour.

use super::ODD_RESPONSE;
use crate::wire::Head;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Answers one request; false when the connection must close.
pub(super) async fn answer(stream: &mut TcpStream, name: &str, head: &Head, body: &[u8]) -> bool {
    if head.method != "POST" {
        return write(
            stream,
            405,
            "application/json",
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"POST only"}}"#,
        )
        .await;
    }
    // Read only what the mock needs, so bodies with numbers like 1e400 still get answered.
    let request: Value = match serde_json::from_slice::<Envelope>(body) {
        Ok(e) => {
            let arguments = e.params.as_ref().and_then(|p| p.arguments.as_ref());
            json!({"id": e.id, "method": e.method, "params": {
                "name": e.params.as_ref().and_then(|p| p.name.clone()),
                "arguments": arguments.and_then(|a| serde_json::from_str::<Value>(a.get()).ok()),
            }})
        }
        Err(_) => {
            return write(
                stream,
                400,
                "application/json",
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            )
            .await
        }
    };
    let Some(id) = request.get("id").cloned().filter(|id| !id.is_null()) else {
        return write(stream, 202, "application/json", b"").await;
    };
    if request.get("method").and_then(Value::as_str) == Some("server/discover") {
        let discovered = json!({"jsonrpc": "2.0", "id": id, "result": {
            "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": name, "version": "mock"}}}});
        let body = serde_json::to_vec(&discovered).expect("json");
        return write(stream, 200, "application/json", &body).await;
    }
    let tool = request
        .pointer("/params/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let arg = |k: &str, d: u64| {
        request
            .pointer(&format!("/params/arguments/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(d)
    };
    let result = |text: &str| {
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": text}], "isError": false,
            "bodyBytes": body.len(), "resultType": "complete"}}))
        .expect("json")
    };
    match tool {
        "odd_response" => write(stream, 200, "application/json", ODD_RESPONSE.as_bytes()).await,
        "drop_connection" => false,
        "slow" | "sleep" => {
            // a backend that answers late is the behaviour asked for
            tokio::time::sleep(Duration::from_millis(arg("ms", 1000))).await;
            write(stream, 200, "application/json", &result(name)).await
        }
        "sse_progress" | "drop_mid_sse" | "sse_without_result" => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            let steps = if tool != "sse_progress" {
                1
            } else {
                arg("steps", 3)
            };
            for i in 0..steps {
                let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": 1, "progress": i + 1, "total": steps}});
                if !chunk(stream, &format!("event: message\r\ndata: {note}\r\n\r\n")).await {
                    return false;
                }
                let gap = arg("gap_ms", 200);
                if gap > 0 {
                    // the gap between events is the behaviour asked for (a zero gap writes the
                    // events back to back: a timer would add a tick each)
                    tokio::time::sleep(Duration::from_millis(gap)).await;
                }
            }
            if tool == "drop_mid_sse" {
                return false;
            }
            if tool == "sse_without_result" {
                // the stream ends well framed (its last chunk) but without the response: a
                // server that closed it, or one killed as the last chunk went
                return stream.write_all(b"0\r\n\r\n").await.is_ok();
            }
            let done = String::from_utf8(result(name)).expect("utf8");
            chunk(stream, &format!("event: message\r\ndata: {done}\r\n\r\n")).await
                && stream.write_all(b"0\r\n\r\n").await.is_ok()
        }
        _ => write(stream, 200, "application/json", &result(name)).await,
    }
}

#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<EnvelopeParams>,
}

#[derive(serde::Deserialize)]
struct EnvelopeParams {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Box<serde_json::value::RawValue>>,
}

async fn chunk(stream: &mut TcpStream, data: &str) -> bool {
    let framed = format!("{:x}\r\n{data}\r\n", data.len());
    stream.write_all(framed.as_bytes()).await.is_ok() && stream.flush().await.is_ok()
}

async fn write(stream: &mut TcpStream, status: u16, content_type: &str, body: &[u8]) -> bool {
    write_with(
        stream,
        status,
        &[("content-type".into(), content_type.into())],
        body,
    )
    .await
}

pub(super) async fn write_with(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> bool {
    let mut head = format!(
        "HTTP/1.1 {status} Mock\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.is_ok() && stream.write_all(body).await.is_ok()
}
