//! `tasks-server`: a real 2026-07-28 MCP server with the Tasks extension (SEP-2663,
//! `io.modelcontextprotocol/tasks`), built on the Rust SDK (rmcp 3.11) and served statelessly
//! over Streamable HTTP at `http://127.0.0.1:P/mcp`, for the gateway's tests.
//!
//! `tasks-server --port P --name NAME [--shared-state DIR] [--ttl-ms N] [--poll-interval-ms N]
//! [--json-response] [--serve PATH=NAME2]...`
//!
//! `--serve PATH=NAME2` (repeatable) serves one more, independent server at PATH beside `/mcp`:
//! named NAME2 (its `whoami`, its results, its `x-tasks-server`), with tasks of its own (a task
//! made at PATH is unknown at `/mcp` and at every other PATH): one process standing for several
//! MCP servers that differ only by path. Not with `--shared-state`.
//!
//! Without `--shared-state` the tasks live in rmcp's own `TaskManager` (this process's memory);
//! with it, every process started on the same DIR keeps its task records as JSON files there, so
//! a task made by one process can be read, updated and cancelled through another (servers
//! keeping their tasks in a database). Either way the answers are rmcp's own types, serialized
//! by rmcp. `tests/peers/README.md` documents the tools and the exact answers.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, DetailedTask, GetTaskParams, GetTaskResult, Implementation, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, ServerCapabilities, ServerConfig, Task,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{
    current_timestamp, TaskExit, TaskManager, TaskOptions, DEFAULT_POLL_INTERVAL_MS,
    DEFAULT_TASK_TTL_MS,
};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{tool, tool_handler, tool_router, ErrorData as McpError, ServerHandler};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The key of `ask_task`'s one input request (in `inputRequests` / `inputResponses`).
const ASK_KEY: &str = "name";

/// How long a handler waits for an rmcp task operation to settle after the event that settles
/// it (the releasing poll, the input response, the cancel), so the next `tasks/get` sees it.
const SETTLE_WAIT: Duration = Duration::from_secs(2);

/// Response header naming the process that answered (the only thing added to rmcp's answers):
/// with `--shared-state` any process can answer for any task.
const PEER_HEADER: &str = "x-tasks-server";

#[derive(Debug, Clone)]
struct Args {
    port: u16,
    name: String,
    shared_state: Option<PathBuf>,
    ttl_ms: Option<u64>,
    poll_interval_ms: u64,
    json_response: bool,
    /// `--serve PATH=NAME`: more servers of their own, at other paths than `/mcp`.
    extra: Vec<(String, String)>,
}

fn usage() -> ! {
    eprintln!(
        "usage: tasks-server --port P --name NAME [--shared-state DIR] [--ttl-ms N|none] \
         [--poll-interval-ms N] [--json-response] [--serve PATH=NAME]..."
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        port: 0,
        name: String::new(),
        shared_state: None,
        ttl_ms: Some(DEFAULT_TASK_TTL_MS),
        poll_interval_ms: DEFAULT_POLL_INTERVAL_MS,
        json_response: false,
        extra: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    let mut port = None;
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--port" => port = Some(value().parse().unwrap_or_else(|_| usage())),
            "--name" => args.name = value(),
            "--shared-state" => args.shared_state = Some(PathBuf::from(value())),
            "--ttl-ms" => {
                let v = value();
                args.ttl_ms = match v.as_str() {
                    "none" => None,
                    _ => Some(v.parse().unwrap_or_else(|_| usage())),
                };
            }
            "--poll-interval-ms" => {
                args.poll_interval_ms = value().parse().unwrap_or_else(|_| usage())
            }
            "--json-response" => args.json_response = true,
            "--serve" => {
                let v = value();
                match v.split_once('=') {
                    Some((path, name))
                        if path.starts_with('/')
                            && path != "/mcp"
                            && !name.is_empty()
                            && !args.extra.iter().any(|(p, _)| p == path) =>
                    {
                        args.extra.push((path.to_owned(), name.to_owned()))
                    }
                    _ => usage(),
                }
            }
            _ => usage(),
        }
    }
    match port {
        Some(p) if !args.name.is_empty() => args.port = p,
        _ => usage(),
    }
    if !args.extra.is_empty() && args.shared_state.is_some() {
        usage();
    }
    args
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn text_result(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// `ask_task`'s input request: an elicitation asking for a name.
fn ask_request() -> InputRequest {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "message": "What is your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            }
        }
    }))
    .expect("a valid elicitation request")
}

/// `ask_task`'s result for the client's elicitation answer (`ElicitResult`).
fn ask_answer(owner: &str, response: &Value) -> CallToolResult {
    let action = response["action"].as_str().unwrap_or("accept");
    match response["content"]["name"].as_str() {
        Some(name) if action == "accept" => text_result(format!("{owner}:hello {name}")),
        _ => CallToolResult::error(vec![ContentBlock::text(format!("{owner}:{action}"))]),
    }
}

fn result_object(result: &CallToolResult) -> serde_json::Map<String, Value> {
    match serde_json::to_value(result) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    }
}

/// rmcp's answer for a task id it does not hold (`task_manager::unknown_task`).
fn unknown_task(task_id: &str) -> McpError {
    McpError::invalid_params(format!("unknown task: {task_id}"), None)
}

fn args_of<T: serde::de::DeserializeOwned>(request: &CallToolRequestParams) -> Result<T, McpError> {
    serde_json::from_value(Value::Object(request.arguments.clone().unwrap_or_default()))
        .map_err(|e| McpError::invalid_params(e.to_string(), None))
}

fn default_polls() -> u64 {
    3
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// How many `tasks/get` answers show the task `working` before it completes.
    #[serde(default = "default_polls")]
    polls: u64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// How long the task runs, in milliseconds.
    ms: u64,
}

#[derive(Clone)]
struct TasksServer {
    name: Arc<str>,
    tool_router: ToolRouter<TasksServer>,
    backend: Arc<Backend>,
    options: TaskOptions,
}

enum Backend {
    Memory(Memory),
    Shared(SharedStore),
}

/// In-process tasks: rmcp's `TaskManager`, plus the poll gates of `slow_task`s.
#[derive(Default)]
struct Memory {
    manager: TaskManager,
    gates: Mutex<HashMap<String, PollGate>>,
}

/// A `slow_task` waits for its gate: released by the `tasks/get` that comes after `polls` reads.
struct PollGate {
    polls: u64,
    seen: u64,
    release: tokio::sync::oneshot::Sender<()>,
}

/// The plain (non-task) answers: what the tools do for a client that did not declare the tasks
/// extension (rmcp leaves it to the handler: these answer directly).
#[tool_router]
impl TasksServer {
    #[tool(description = "The server's name")]
    async fn whoami(&self) -> String {
        self.name.to_string()
    }

    #[tool(
        description = "A task that completes after `polls` tasks/get reads (answered directly without the tasks extension)"
    )]
    async fn slow_task(&self, Parameters(_args): Parameters<SlowArgs>) -> String {
        format!("{}:done", self.name)
    }

    #[tool(
        description = "A task that asks for a name (tasks/update) and greets it; without the tasks extension, a 2026-07-28 input_required round trip"
    )]
    async fn ask_task(&self) -> Result<CallToolResult, McpError> {
        // call_tool answers ask_task itself: it needs the request's inputResponses
        Err(McpError::internal_error(
            "ask_task is answered by call_tool",
            None,
        ))
    }

    #[tool(description = "A task that completes after `ms` milliseconds")]
    async fn sleep_task(&self, Parameters(SleepArgs { ms }): Parameters<SleepArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("{}:slept", self.name)
    }
}

impl TasksServer {
    fn new(args: &Args, name: &str, backend: Backend) -> Self {
        let options = TaskOptions::new()
            .with_ttl_ms(args.ttl_ms)
            .with_poll_interval_ms(args.poll_interval_ms);
        TasksServer {
            name: name.into(),
            tool_router: Self::tool_router(),
            backend: Arc::new(backend),
            options,
        }
    }

    /// `ask_task` without the tasks extension: SEP-2322's input_required round trip.
    fn ask_directly(&self, request: &CallToolRequestParams) -> CallToolResponse {
        match request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(ASK_KEY))
        {
            Some(answer) => ask_answer(&self.name, answer).into(),
            None => InputRequiredResult::from_input_requests(InputRequests::from([(
                ASK_KEY.to_owned(),
                ask_request(),
            )]))
            .into(),
        }
    }

    /// A `tools/call` the client may get as a task: `None` for the tools that are not tasks.
    async fn start_task(&self, request: &CallToolRequestParams) -> Option<Result<Task, McpError>> {
        let work = match request.name.as_ref() {
            "slow_task" => match args_of::<SlowArgs>(request) {
                Ok(a) => Work::Slow {
                    polls: a.polls,
                    seen: 0,
                },
                Err(e) => return Some(Err(e)),
            },
            "sleep_task" => match args_of::<SleepArgs>(request) {
                Ok(a) => Work::Sleep {
                    until_ms: now_ms() + a.ms,
                    ms: a.ms,
                },
                Err(e) => return Some(Err(e)),
            },
            "ask_task" => Work::Ask,
            _ => return None,
        };
        Some(match &*self.backend {
            Backend::Memory(memory) => Ok(memory.spawn(&self.name, &self.options, work).await),
            Backend::Shared(store) => {
                let store = store.clone();
                let options = self.options.clone();
                blocking(move || store.create(&options, work)).await
            }
        })
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, McpError> + Send + 'static,
) -> Result<T, McpError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?
}

impl Memory {
    async fn spawn(&self, name: &str, options: &TaskOptions, work: Work) -> Task {
        let name = name.to_owned();
        match work {
            Work::Slow { polls, .. } => {
                let (release, released) = tokio::sync::oneshot::channel();
                let task = self.manager.spawn(options.clone(), move |ctx| {
                    Box::pin(async move {
                        tokio::select! {
                            _ = ctx.cancelled() => Err(TaskExit::Cancelled),
                            _ = released => Ok(text_result(format!("{name}:done"))),
                        }
                    })
                });
                self.gates.lock().unwrap().insert(
                    task.task_id.clone(),
                    PollGate {
                        polls,
                        seen: 0,
                        release,
                    },
                );
                task
            }
            Work::Sleep { ms, .. } => self.manager.spawn(options.clone(), move |ctx| {
                Box::pin(async move {
                    tokio::select! {
                        _ = ctx.cancelled() => Err(TaskExit::Cancelled),
                        _ = tokio::time::sleep(Duration::from_millis(ms)) => {
                            Ok(text_result(format!("{name}:slept")))
                        }
                    }
                })
            }),
            Work::Ask => {
                let task = self.manager.spawn(options.clone(), move |ctx| {
                    Box::pin(async move {
                        let answer = ctx.request_input(ASK_KEY, ask_request()).await?;
                        Ok(ask_answer(&name, &answer))
                    })
                });
                // The operation registers its input request once it runs: wait for it, so the
                // first tasks/get already shows input_required.
                self.settle(&task.task_id, |s| s != TaskStatus::Working)
                    .await;
                task
            }
        }
    }

    /// Waits (a bounded while) until the task's status satisfies `done`.
    async fn settle(&self, task_id: &str, done: impl Fn(TaskStatus) -> bool) {
        let deadline = tokio::time::Instant::now() + SETTLE_WAIT;
        while tokio::time::Instant::now() < deadline {
            match self.manager.get_task(task_id) {
                Ok(t) if !done(t.status()) => tokio::time::sleep(Duration::from_millis(1)).await,
                _ => return,
            }
        }
    }

    async fn get(&self, task_id: &str) -> Result<DetailedTask, McpError> {
        let released = {
            let mut gates = self.gates.lock().unwrap();
            match gates.get_mut(task_id) {
                Some(gate) if gate.seen >= gate.polls => {
                    let gate = gates.remove(task_id).expect("the gate just seen");
                    let _ = gate.release.send(());
                    true
                }
                Some(gate) => {
                    gate.seen += 1;
                    false
                }
                None => false,
            }
        };
        if released {
            self.settle(task_id, |s| s.is_terminal()).await;
        }
        self.manager.get_task(task_id)
    }

    async fn update(&self, task_id: &str, responses: InputResponses) -> Result<(), McpError> {
        let answers_pending = match self.manager.get_task(task_id)?.payload {
            TaskPayload::InputRequired { input_requests } => {
                responses.keys().any(|k| input_requests.contains_key(k))
            }
            _ => false,
        };
        self.manager.update_task(task_id, responses)?;
        if answers_pending {
            self.settle(task_id, |s| s != TaskStatus::Working).await;
        }
        Ok(())
    }

    async fn cancel(&self, task_id: &str) -> Result<(), McpError> {
        self.manager.cancel_task(task_id)?;
        self.gates.lock().unwrap().remove(task_id);
        self.settle(task_id, |s| s.is_terminal()).await;
        Ok(())
    }
}

/// What a task does, as its shared record keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Work {
    /// Completes on the `tasks/get` after `polls` reads; `seen` counts the reads.
    Slow { polls: u64, seen: u64 },
    /// Waits for the answer to its input request.
    Ask,
    /// Completes at `until_ms` (Unix ms), `ms` after it started.
    Sleep { until_ms: u64, ms: u64 },
}

/// One task in `--shared-state DIR`: `DIR/<taskId>.json`.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// The state as `tasks/get` answers it (rmcp's type and serialization).
    detailed: DetailedTask,
    /// The process that ran the `tools/call` (the results carry its name).
    owner: String,
    work: Work,
    created_ms: u64,
    terminal_ms: Option<u64>,
}

impl Record {
    fn settle(&mut self, payload: TaskPayload, now: u64) {
        let mut task = self.detailed.task.clone();
        task.last_updated_at = current_timestamp();
        self.detailed = DetailedTask::new(task, payload);
        self.terminal_ms = Some(now);
    }

    fn terminal(&self) -> bool {
        self.detailed.status().is_terminal()
    }

    /// What happens by itself: the TTL and the clock (rmcp's `sweep_expired`, and
    /// `sleep_task`'s end). `false` when the record is past its retention and is to be dropped.
    fn advance(&mut self, now: u64) -> bool {
        let ttl = self.detailed.task.ttl_ms;
        if !self.terminal() {
            if ttl.is_some_and(|ttl| now.saturating_sub(self.created_ms) >= ttl) {
                let error = McpError::internal_error(
                    "task expired: TTL elapsed before completion".to_string(),
                    None,
                );
                let error = match serde_json::to_value(&error) {
                    Ok(Value::Object(map)) => map,
                    _ => serde_json::Map::new(),
                };
                self.settle(TaskPayload::Failed { error }, now);
            } else if let Work::Sleep { until_ms, .. } = self.work {
                if now >= until_ms {
                    let result = result_object(&text_result(format!("{}:slept", self.owner)));
                    self.settle(TaskPayload::Completed { result }, now);
                }
            }
        }
        match (ttl, self.terminal_ms) {
            (Some(ttl), Some(at)) => now.saturating_sub(at) < ttl,
            _ => true,
        }
    }
}

/// Task records shared by every process started on one directory: each operation takes the
/// directory's lock (`DIR/.lock`, an OS file lock), reads the record, changes it and writes it
/// back atomically (a temporary file renamed over it).
#[derive(Clone)]
struct SharedStore {
    dir: Arc<Path>,
    owner: Arc<str>,
}

impl SharedStore {
    fn open(dir: &Path, owner: &str) -> std::io::Result<SharedStore> {
        std::fs::create_dir_all(dir)?;
        Ok(SharedStore {
            dir: dir.into(),
            owner: owner.into(),
        })
    }

    fn lock(&self) -> Result<std::fs::File, McpError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(".lock"))
            .map_err(io_error)?;
        file.lock().map_err(io_error)?;
        Ok(file)
    }

    fn path(&self, task_id: &str) -> Option<PathBuf> {
        let plain = !task_id.is_empty()
            && task_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-');
        plain.then(|| self.dir.join(format!("{task_id}.json")))
    }

    fn write(&self, path: &Path, record: &Record) -> Result<(), McpError> {
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let bytes = serde_json::to_vec(record).map_err(|e| io_error(e.into()))?;
        std::fs::write(&tmp, bytes).map_err(io_error)?;
        std::fs::rename(&tmp, path).map_err(io_error)
    }

    fn create(&self, options: &TaskOptions, work: Work) -> Result<Task, McpError> {
        let _lock = self.lock()?;
        let task_id = uuid::Uuid::new_v4().to_string();
        let now = current_timestamp();
        let mut task = Task::new(task_id.clone(), TaskStatus::Working, now.clone(), now);
        task.ttl_ms = options.ttl_ms;
        task.poll_interval_ms = options.poll_interval_ms;
        task.status_message = options.status_message.clone();
        let payload = match work {
            Work::Ask => TaskPayload::InputRequired {
                input_requests: InputRequests::from([(ASK_KEY.to_owned(), ask_request())]),
            },
            _ => TaskPayload::Working,
        };
        let record = Record {
            detailed: DetailedTask::new(task.clone(), payload),
            owner: self.owner.to_string(),
            work,
            created_ms: now_ms(),
            terminal_ms: None,
        };
        self.write(&self.path(&task_id).expect("a uuid"), &record)?;
        Ok(task)
    }

    /// Runs `change` on the task's record under the lock and writes it back.
    fn with_record<T>(
        &self,
        task_id: &str,
        change: impl FnOnce(&mut Record, u64) -> T,
    ) -> Result<T, McpError> {
        let path = self.path(task_id).ok_or_else(|| unknown_task(task_id))?;
        let _lock = self.lock()?;
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(unknown_task(task_id))
            }
            Err(e) => return Err(io_error(e)),
        };
        let mut record: Record = serde_json::from_slice(&bytes).map_err(|e| io_error(e.into()))?;
        let now = now_ms();
        if !record.advance(now) {
            let _ = std::fs::remove_file(&path);
            return Err(unknown_task(task_id));
        }
        let out = change(&mut record, now);
        self.write(&path, &record)?;
        Ok(out)
    }

    fn get(&self, task_id: &str) -> Result<DetailedTask, McpError> {
        self.with_record(task_id, |record, now| {
            if !record.terminal() {
                if let Work::Slow { polls, seen } = &mut record.work {
                    if *seen >= *polls {
                        let text = format!("{}:done", record.owner);
                        let result = result_object(&text_result(text));
                        record.settle(TaskPayload::Completed { result }, now);
                    } else {
                        *seen += 1;
                    }
                }
            }
            let mut detailed = record.detailed.clone();
            detailed.task.status = detailed.status();
            detailed
        })
    }

    fn update(&self, task_id: &str, responses: InputResponses) -> Result<(), McpError> {
        self.with_record(task_id, |record, now| {
            let answer = match &record.detailed.payload {
                TaskPayload::InputRequired { input_requests } => input_requests
                    .keys()
                    .find_map(|k| responses.get(k))
                    .cloned(),
                _ => None,
            };
            match answer {
                Some(answer) => {
                    let result = result_object(&ask_answer(&record.owner, &answer));
                    record.settle(TaskPayload::Completed { result }, now);
                }
                // rmcp touches the task on every update, answered or not
                None => record.detailed.task.last_updated_at = current_timestamp(),
            }
        })
    }

    fn cancel(&self, task_id: &str) -> Result<(), McpError> {
        self.with_record(task_id, |record, now| {
            // every operation here honours a cancel at once
            if !record.terminal() {
                record.settle(TaskPayload::Cancelled, now);
            }
        })
    }
}

fn io_error(e: std::io::Error) -> McpError {
    McpError::internal_error(format!("shared task state: {e}"), None)
}

#[tool_handler]
impl ServerHandler for TasksServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(self.name.to_string(), "1.0.0"))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tasks = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        if tasks {
            if let Some(task) = self.start_task(&request).await {
                return Ok(CallToolResponse::Task(CreateTaskResult::new(task?)));
            }
        }
        if request.name == "ask_task" {
            return Ok(self.ask_directly(&request));
        }
        let tcc = ToolCallContext::new(self, request, context);
        self.tool_router.call(tcc).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let task = match &*self.backend {
            Backend::Memory(memory) => memory.get(&request.task_id).await?,
            Backend::Shared(store) => {
                let store = store.clone();
                blocking(move || store.get(&request.task_id)).await?
            }
        };
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match &*self.backend {
            Backend::Memory(memory) => {
                memory
                    .update(&request.task_id, request.input_responses)
                    .await
            }
            Backend::Shared(store) => {
                let store = store.clone();
                blocking(move || store.update(&request.task_id, request.input_responses)).await
            }
        }
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        match &*self.backend {
            Backend::Memory(memory) => memory.cancel(&request.task_id).await,
            Backend::Shared(store) => {
                let store = store.clone();
                blocking(move || store.cancel(&request.task_id)).await
            }
        }
    }
}

type Body = http_body_util::combinators::BoxBody<bytes::Bytes, Infallible>;

type Service = StreamableHttpService<TasksServer, LocalSessionManager>;

/// The servers of one process: `/mcp`'s, then those of `--serve`, each with its path and name.
type Served = Arc<Vec<(String, Service, Arc<str>)>>;

fn service(server: TasksServer, json_response: bool) -> Service {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(json_response)
        // behind a gateway the Host header names the gateway; this process binds 127.0.0.1 only
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

async fn serve_connection(stream: tokio::net::TcpStream, served: Served) {
    let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let served = served.clone();
        async move {
            let at = served
                .iter()
                .position(|(path, _, _)| req.uri().path() == path);
            // a path no server is at: answered (404) in the process's name, `/mcp`'s
            let name = served[at.unwrap_or(0)].2.clone();
            let mut response: hyper::Response<Body> = if let Some(at) = at {
                served[at].1.handle(req).await
            } else {
                use http_body_util::BodyExt as _;
                hyper::Response::builder()
                    .status(404)
                    .body(
                        http_body_util::Full::new(bytes::Bytes::from_static(b"not found\n"))
                            .boxed(),
                    )
                    .expect("a response")
            };
            if let Ok(value) = http::HeaderValue::from_str(&name) {
                response.headers_mut().insert(PEER_HEADER, value);
            }
            Ok::<_, Infallible>(response)
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), svc)
        .await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = parse_args();
    let backend = match &args.shared_state {
        None => Backend::Memory(Memory::default()),
        Some(dir) => match SharedStore::open(dir, &args.name) {
            Ok(store) => Backend::Shared(store),
            Err(e) => {
                eprintln!("tasks-server: shared state {}: {e}", dir.display());
                std::process::exit(1);
            }
        },
    };
    let server = TasksServer::new(&args, &args.name, backend);
    let mut served = vec![(
        "/mcp".to_owned(),
        service(server, args.json_response),
        Arc::<str>::from(args.name.as_str()),
    )];
    for (path, name) in &args.extra {
        // its own tasks: a memory of its own (--shared-state is refused with --serve)
        let server = TasksServer::new(&args, name, Backend::Memory(Memory::default()));
        served.push((
            path.clone(),
            service(server, args.json_response),
            Arc::from(name.as_str()),
        ));
    }
    let served: Served = Arc::new(served);
    let listener =
        match tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], args.port))).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("tasks-server: bind 127.0.0.1:{}: {e}", args.port);
                std::process::exit(1);
            }
        };
    let port = listener.local_addr().expect("a local address").port();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("a SIGTERM handler");
    eprintln!(
        "tasks-server {}: listening on 127.0.0.1:{port}/mcp ({})",
        args.name,
        match &args.shared_state {
            Some(dir) => format!("shared state {}", dir.display()),
            None => "in-memory tasks".to_owned(),
        }
    );
    for (path, name) in &args.extra {
        eprintln!("tasks-server {}: also {name} at {path}", args.name);
    }
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "READY {port}");
        let _ = out.flush();
    }
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(serve_connection(stream, served.clone()));
                }
                Err(e) => eprintln!("tasks-server: accept: {e}"),
            },
            _ = term.recv() => {
                eprintln!("tasks-server {}: SIGTERM", args.name);
                std::process::exit(143);
            }
        }
    }
}
