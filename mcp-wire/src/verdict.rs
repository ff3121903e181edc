//! What an answer says about its call, read as the answer streams past: a JSON-RPC result, a
//! `tools/call` result with `isError: true` (a tool error), or a JSON-RPC error and its code.
//! The scan never copies, parses or re-serializes the body: it follows the JSON structure byte
//! by byte (strings skipped with `memchr`), keeps the depth and the key it is under only for
//! the first two levels (`result`/`error`, then `isError`/`code`), and is fed the chunks as
//! they come, split anywhere. For an SSE answer it reads the `data` of each event and takes the
//! first event that is a response (progress notifications and server requests carry `method`
//! and are passed over); a JSON answer is one message.
//!
//! A JSON answer known to be whole in one chunk (its `Content-Length` read at once, the common
//! case) is first searched for the text `rror"`, the end of both keys a verdict other than a
//! result needs (`"error"`, `"isError"`): without it, or with only `"isError": false`, the
//! message is taken as a result at the cost of one SIMD search, and the structural scan runs
//! only when other such text is there.
//!
//! Limits, by design: a key written with escapes (`"is\u0045rror"`) is not recognised, a
//! JSON-RPC batch answer gives no verdict, and a body with a content coding is not read (the
//! caller does not feed it).

/// What one JSON-RPC response said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A `result` that is not a tool error.
    Result,
    /// A `result` carrying `isError: true` (a tool that failed, `tools/call`).
    ToolError,
    /// An `error`, with its `code` when that is an integer.
    RpcError(Option<i64>),
}

impl Verdict {
    /// The `code` label of `mcpgw_rpc_errors_total`: the code when it is in JSON-RPC's
    /// reserved range (-32768..=-32000, which holds every code MCP and the gateway use), else
    /// `other`, so the label stays bounded whatever a backend sends.
    pub fn code_label(code: Option<i64>) -> String {
        match code {
            Some(c @ -32768..=-32000) => c.to_string(),
            _ => "other".to_owned(),
        }
    }
}

/// Which body shape is being scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `application/json`: one message.
    Json,
    /// `text/event-stream`: messages in the events' `data`.
    Sse,
}

/// The incremental scan of one answer. Feed it with [`AnswerScan::push`]; read
/// [`AnswerScan::verdict`] at any time (it is set once and stays).
#[derive(Debug, Clone)]
pub struct AnswerScan {
    shape: Shape,
    json: JsonScan,
    sse: SseLine,
    verdict: Option<Verdict>,
    /// Bytes have been pushed (a whole-body look no longer applies).
    pushed: bool,
}

/// `rror"`: the end of `"error"` and of `"isError"`, the keys of every verdict but a result.
static ERROR_KEYS: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"rror\""));

/// Whether `body` may hold a key that makes a verdict other than a result: some `rror"` that
/// is not `"isError"` followed by `false` (what most SDKs send on every tool result).
fn may_say_error(body: &[u8]) -> bool {
    ERROR_KEYS.find_iter(body).any(|at| {
        let is_error_key = body[..at].ends_with(b"\"isE");
        let after = &body[at + 5..];
        let value = after.trim_ascii_start();
        let said_false = value
            .strip_prefix(b":")
            .is_some_and(|v| v.trim_ascii_start().starts_with(b"false"));
        !(is_error_key && said_false)
    })
}

impl AnswerScan {
    /// A scan of a body of this shape.
    pub fn new(shape: Shape) -> AnswerScan {
        AnswerScan {
            shape,
            json: JsonScan::default(),
            sse: SseLine::default(),
            verdict: None,
            pushed: false,
        }
    }

    /// Reads a JSON body that is known to be the whole answer. An object without the text
    /// `rror"` has neither an `error` nor an `isError` key the scan would recognise, so it is
    /// a result; anything else goes through the structural scan as [`AnswerScan::push`] would.
    pub fn push_whole(&mut self, body: &[u8]) {
        let object = body
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b == b'{');
        let quick = self.shape == Shape::Json && !self.pushed && self.verdict.is_none();
        let closed = body
            .iter()
            .rfind(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b == b'}');
        if quick && object && closed && !may_say_error(body) {
            self.pushed = true;
            self.verdict = Some(Verdict::Result);
            return;
        }
        self.push(body);
    }

    /// The verdict, once the response message has been read whole.
    pub fn verdict(&self) -> Option<Verdict> {
        self.verdict
    }

    /// Reads the next chunk of the body.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.verdict.is_some() {
            return;
        }
        self.pushed = true;
        match self.shape {
            Shape::Json => {
                self.json.push(chunk);
                self.verdict = self.json.verdict();
            }
            Shape::Sse => self.push_sse(chunk),
        }
    }

    fn push_sse(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() && self.verdict.is_none() {
            let line = &mut self.sse;
            if line.after_cr && chunk[0] == b'\n' {
                line.after_cr = false;
                chunk = &chunk[1..];
                continue;
            }
            line.after_cr = false;
            if let LineState::Data = line.state {
                let end = memchr::memchr2(b'\n', b'\r', chunk).unwrap_or(chunk.len());
                if end > 0 {
                    line.len += end;
                    self.json.push(&chunk[..end]);
                    // a message is whole when its object closes: no need to wait for the
                    // blank line (a stream may end without one)
                    self.verdict = self.json.verdict();
                    chunk = &chunk[end..];
                    continue;
                }
            }
            let b = chunk[0];
            chunk = &chunk[1..];
            if b == b'\n' || b == b'\r' {
                self.sse.after_cr = b == b'\r';
                self.end_line();
                continue;
            }
            let line = &mut self.sse;
            line.len += 1;
            line.state = match line.state {
                LineState::Field(n) if n < 4 && b == b"data"[n] => LineState::Field(n + 1),
                LineState::Field(4) if b == b':' => LineState::DataColon,
                LineState::DataColon if b == b' ' => LineState::Data,
                LineState::DataColon => {
                    self.json.push(&[b]);
                    self.verdict = self.json.verdict();
                    LineState::Data
                }
                _ => LineState::Other,
            };
        }
    }

    /// A line ended: a blank line ends the event (its message is judged), a data line adds
    /// the `\n` that joins multi-line data.
    fn end_line(&mut self) {
        let line = std::mem::take(&mut self.sse);
        self.sse.after_cr = line.after_cr;
        if line.len == 0 {
            let json = std::mem::take(&mut self.json);
            self.verdict = json.verdict();
            return;
        }
        if matches!(line.state, LineState::Data | LineState::DataColon) {
            self.json.push(b"\n");
        }
    }
}

/// Where the SSE reader is in the current line.
#[derive(Debug, Clone, Copy, Default)]
enum LineState {
    /// Reading the field name; `n` bytes of `data` matched so far.
    Field(usize),
    /// `data:` read; a single space may follow.
    DataColon,
    /// In a `data` value: fed to the JSON scan.
    Data,
    /// Another field or a comment: skipped.
    #[default]
    Other,
}

#[derive(Debug, Clone)]
struct SseLine {
    state: LineState,
    /// Bytes of the line so far (0 at the end of a line: a blank line).
    len: usize,
    /// The last byte was a CR: a LF right after it belongs to the same line end.
    after_cr: bool,
}

impl Default for SseLine {
    fn default() -> Self {
        SseLine {
            state: LineState::Field(0),
            len: 0,
            after_cr: false,
        }
    }
}

/// The key the scan is under at depth 1 (the message) or 2 (its `result` or `error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Key {
    #[default]
    Other,
    Result,
    Error,
    Method,
    Code,
    IsError,
}

impl Key {
    fn of(depth: u32, top: Key, name: &[u8]) -> Key {
        match (depth, top, name) {
            (1, _, b"result") => Key::Result,
            (1, _, b"error") => Key::Error,
            (1, _, b"method") => Key::Method,
            (2, Key::Error, b"code") => Key::Code,
            (2, Key::Result, b"isError") => Key::IsError,
            _ => Key::Other,
        }
    }
}

/// The longest key or scalar kept: `isError` and any `code` a backend plausibly sends.
const KEPT: usize = 24;

/// The structural JSON scan of one message.
#[derive(Debug, Clone, Default)]
struct JsonScan {
    /// Containers open (1 inside the message object).
    depth: u32,
    /// The message was not an object (a batch, garbage): no verdict.
    not_object: bool,
    /// The message object closed.
    closed: bool,
    in_string: bool,
    escaped: bool,
    /// The string being read is a key at depth 1 or 2 (kept in `buf`).
    in_key: bool,
    /// At depth 1 or 2 in an object, where a key comes next.
    want_key: bool,
    /// Whether the depth-2 container is an object.
    obj2: bool,
    /// The depth-1 key whose value is being read.
    top: Key,
    /// The depth-2 key whose value is being read.
    sub: Key,
    /// Reading a scalar value of `sub` (kept in `buf`).
    in_scalar: bool,
    buf: [u8; KEPT],
    len: usize,
    saw_result: bool,
    saw_error: bool,
    saw_method: bool,
    is_error: bool,
    code: Option<i64>,
}

impl JsonScan {
    fn verdict(&self) -> Option<Verdict> {
        if !self.closed || self.not_object || self.saw_method {
            return None;
        }
        if self.saw_error {
            Some(Verdict::RpcError(self.code))
        } else if self.saw_result {
            Some(if self.is_error {
                Verdict::ToolError
            } else {
                Verdict::Result
            })
        } else {
            None
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        if self.len > KEPT {
            return;
        }
        let n = bytes.len().min(KEPT.saturating_sub(self.len));
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        // one past the end marks a key or scalar too long to be one we look for
        self.len = if bytes.len() > n {
            KEPT + 1
        } else {
            self.len + n
        };
    }

    fn kept(&self) -> &[u8] {
        if self.len > KEPT {
            b""
        } else {
            &self.buf[..self.len]
        }
    }

    fn push(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            if self.closed || self.not_object {
                return;
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    chunk = &chunk[1..];
                    continue;
                }
                let Some(at) = memchr::memchr2(b'"', b'\\', chunk) else {
                    if self.in_key {
                        self.keep(chunk);
                    }
                    return;
                };
                if self.in_key {
                    self.keep(&chunk[..at]);
                }
                if chunk[at] == b'\\' {
                    // an escaped key is not one we look for
                    self.len = KEPT + 1;
                    self.escaped = true;
                } else {
                    self.in_string = false;
                    if self.in_key {
                        self.in_key = false;
                        self.end_key();
                    }
                }
                chunk = &chunk[at + 1..];
                continue;
            }
            let b = chunk[0];
            chunk = &chunk[1..];
            if self.in_scalar {
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                    self.in_scalar = false;
                    self.end_scalar();
                } else {
                    self.keep(&[b]);
                    continue;
                }
            }
            self.structural(b);
        }
    }

    fn structural(&mut self, b: u8) {
        match b {
            b' ' | b'\t' | b'\r' | b'\n' | b':' => {}
            b'"' => {
                self.in_string = true;
                self.in_key = self.want_key && (self.depth == 1 || (self.depth == 2 && self.obj2));
                self.want_key = false;
                self.len = 0;
            }
            b'{' | b'[' => {
                if self.depth == 0 && b != b'{' {
                    self.not_object = true;
                    return;
                }
                self.depth += 1;
                if self.depth == 2 {
                    self.obj2 = b == b'{';
                }
                self.want_key = b == b'{' && self.depth <= 2;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                match self.depth {
                    0 => self.closed = true,
                    1 => self.top = Key::Other,
                    _ => {}
                }
                if self.depth == 1 || self.depth == 2 {
                    self.sub = Key::Other;
                }
            }
            b',' => {
                self.want_key = self.depth == 1 || (self.depth == 2 && self.obj2);
                if self.depth == 1 {
                    self.top = Key::Other;
                } else if self.depth == 2 {
                    self.sub = Key::Other;
                }
            }
            _ if self.depth == 0 => self.not_object = true,
            _ => {
                // a scalar value (number, true, false, null)
                if self.depth == 2 && matches!(self.sub, Key::Code | Key::IsError) {
                    self.in_scalar = true;
                    self.len = 0;
                    self.keep(&[b]);
                }
            }
        }
    }

    fn end_key(&mut self) {
        let key = Key::of(self.depth, self.top, self.kept());
        if self.depth == 1 {
            self.top = key;
            match key {
                Key::Result => self.saw_result = true,
                Key::Error => self.saw_error = true,
                Key::Method => self.saw_method = true,
                _ => {}
            }
        } else {
            self.sub = key;
        }
    }

    fn end_scalar(&mut self) {
        match self.sub {
            Key::Code => {
                self.code = std::str::from_utf8(self.kept())
                    .ok()
                    .and_then(|s| s.parse().ok())
            }
            Key::IsError => self.is_error = self.kept() == b"true",
            _ => {}
        }
    }
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
