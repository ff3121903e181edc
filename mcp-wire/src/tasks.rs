//! Task handles in answers, as the gateway reads them to learn where a task lives.
//!
//! - 2026-07-28, the Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`): a request
//!   answered with `result.resultType: "task"`, the server's `result.taskId` and `result.ttlMs`
//!   (milliseconds from creation; `null`: unlimited);
//! - 2025-11-25, the experimental tasks (SEP-1686): a task-augmented request answered with a
//!   `CreateTaskResult`, `result.task.taskId` and `result.task.ttl` (milliseconds; `null`:
//!   unlimited).
//!
//! The answer is a JSON body or an SSE stream whose response event carries it; nothing here
//! changes a byte of it.

use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The Tasks extension's identifier (client and server capabilities, `_meta`).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Which protocol's task a handle names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEra {
    /// The Tasks extension (2026-07-28).
    Modern,
    /// The experimental tasks of 2025-11-25.
    Legacy,
}

/// A task handle found in an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    /// The server's task id.
    pub task_id: String,
    /// Its time-to-live in milliseconds, when the server gave one (`None`: unlimited or not
    /// said).
    pub ttl_ms: Option<u64>,
    /// The protocol the handle is of.
    pub era: TaskEra,
}

#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(borrow, default)]
    result: Option<Result<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Result<'a> {
    #[serde(borrow, default)]
    result_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    task_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    ttl_ms: Option<&'a RawValue>,
    #[serde(borrow, default)]
    task: Option<LegacyTask<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LegacyTask<'a> {
    #[serde(borrow, default)]
    task_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    ttl: Option<&'a RawValue>,
}

/// A TTL as sent: an integer is kept; anything else (a float, a huge number) reads as "not
/// said" rather than failing the whole answer.
fn ms(raw: Option<&RawValue>) -> Option<u64> {
    raw?.get().parse().ok()
}

/// The task handle one JSON-RPC response carries, if it is one.
pub fn handle_in_message(message: &[u8]) -> Option<Handle> {
    // most answers are not handles: a cheap look before parsing (with a searcher built once)
    static TASK: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"task"));
    TASK.find(message)?;
    let answer: Answer<'_> = serde_json::from_slice(message).ok()?;
    let result = answer.result?;
    if result.result_type.as_deref() == Some("task") {
        return Some(Handle {
            task_id: result.task_id?.into_owned(),
            ttl_ms: ms(result.ttl_ms),
            era: TaskEra::Modern,
        });
    }
    let task = result.task?;
    Some(Handle {
        task_id: task.task_id?.into_owned(),
        ttl_ms: ms(task.ttl),
        era: TaskEra::Legacy,
    })
}

/// The task handle an answer body carries: a JSON body, or the response event of an SSE
/// stream (`sse`).
pub fn handle_in_answer(sse: bool, body: &[u8]) -> Option<Handle> {
    if !sse {
        return handle_in_message(body);
    }
    let content_type = Some("text/event-stream");
    crate::sse::messages(content_type, body)
        .iter()
        .find_map(|m| handle_in_message(m))
}

/// The status a task's answer reports (`result.status`, both eras: a `tasks/get`,
/// `tasks/cancel` or `tasks/update` answer carries the task), when it says one.
#[derive(Deserialize)]
struct StatusAnswer<'a> {
    #[serde(borrow, default)]
    result: Option<StatusResult<'a>>,
}

#[derive(Deserialize)]
struct StatusResult<'a> {
    #[serde(borrow, default)]
    status: Option<Cow<'a, str>>,
}

/// Whether one JSON-RPC response reports its task ended: `result.status` is `completed`,
/// `failed` or `cancelled` (the terminal statuses of both eras).
pub fn ended_in_message(message: &[u8]) -> bool {
    if !may_be_terminal(message) {
        return false;
    }
    let Ok(answer) = serde_json::from_slice::<StatusAnswer<'_>>(message) else {
        return false;
    };
    matches!(
        answer.result.and_then(|r| r.status).as_deref(),
        Some("completed" | "failed" | "cancelled")
    )
}

/// Whether `bytes` name a terminal status at all: most polls find the task working, and this
/// look is far cheaper than a parse.
fn may_be_terminal(bytes: &[u8]) -> bool {
    // one pass: every `"status"` key, and the string value after it
    memchr::memmem::find_iter(bytes, b"\"status\"").any(|at| {
        let rest = &bytes[at + 8..];
        let value = rest
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b':'))
            .map_or(&[][..], |i| &rest[i..]);
        [&b"\"completed\""[..], b"\"failed\"", b"\"cancelled\""]
            .iter()
            .any(|s| value.starts_with(s))
    })
}

/// Whether an answer (a JSON body, or an SSE stream when `sse`) to a request naming a task
/// reports the task ended.
pub fn ended_in_answer(sse: bool, body: &[u8]) -> bool {
    if !may_be_terminal(body) {
        return false;
    }
    if !sse {
        return ended_in_message(body);
    }
    crate::sse::messages(Some("text/event-stream"), body)
        .iter()
        .any(|m| ended_in_message(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_modern_handle_is_read_with_its_ttl() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttlMs":60000,"pollIntervalMs":1000}}"#;
        let h = handle_in_answer(false, body).unwrap();
        assert_eq!(h.task_id, "t-1");
        assert_eq!(h.ttl_ms, Some(60000));
        assert_eq!(h.era, TaskEra::Modern);
    }

    #[test]
    fn an_unlimited_ttl_and_a_legacy_handle() {
        let body =
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t","ttlMs":null}}"#;
        assert_eq!(handle_in_answer(false, body).unwrap().ttl_ms, None);
        let legacy = br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"abc","status":"working","ttl":5000}}}"#;
        let h = handle_in_answer(false, legacy).unwrap();
        assert_eq!(
            (h.task_id.as_str(), h.ttl_ms, h.era),
            ("abc", Some(5000), TaskEra::Legacy)
        );
    }

    #[test]
    fn other_answers_are_not_handles() {
        for body in [
            &br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"task"}]}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","taskId":"t","status":"completed"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"task not found"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":7}}"#,
            b"not json with task",
        ] {
            assert_eq!(handle_in_answer(false, body), None, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn a_handle_in_an_sse_answer_after_a_notification() {
        let body = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"resultType\":\"task\",\"taskId\":\"s\",\"ttlMs\":1e3}}\n\n";
        let h = handle_in_answer(true, body).unwrap();
        assert_eq!(h.task_id, "s");
        assert_eq!(h.ttl_ms, None, "a TTL that is not an integer is not said");
    }

    #[test]
    fn a_terminal_status_ends_the_task_and_others_do_not() {
        for (body, ended) in [
            (&br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","taskId":"t","status":"completed"}}"#[..], true),
            (br#"{"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"cancelled"}}"#, true),
            (br#"{"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"failed"}}"#, true),
            (br#"{"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"working"}}"#, false),
            (br#"{"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"input_required"}}"#, false),
            (br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"status completed"}}"#, false),
            (br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"status completed"}]}}"#, false),
            (b"status: completed", false),
        ] {
            assert_eq!(ended_in_answer(false, body), ended, "{}", String::from_utf8_lossy(body));
        }
        let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"taskId\":\"s\",\"status\":\"completed\"}}\n\n";
        assert!(ended_in_answer(true, sse));
    }
}
