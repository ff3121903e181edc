//! A real browser for the console's tests: Debian's `chromium`, headless, on 127.0.0.1 only,
//! with a profile of its own in a temporary directory, driven through the DevTools protocol
//! over its WebSocket (`tokio-tungstenite`). The protocol's few calls a test needs are written
//! here (open a page, evaluate, screenshot) rather than taken from a crate of the whole
//! protocol's generated types (chromiumoxide, headless_chrome), which would build for minutes.
//! The browser (its whole process group) is killed when the [`Chromium`] drops, a failed test
//! included.

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The browser binary: `CHROMIUM`, else Debian's.
fn binary() -> PathBuf {
    std::env::var_os("CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// A headless chromium, killed on drop (its profile directory removed).
pub struct Chromium {
    child: tokio::process::Child,
    profile: PathBuf,
    socket: Socket,
    next: u64,
    /// The page's session (`Target.attachToTarget`, flattened).
    session: String,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // the browser and every process it started (zygote, renderer, GPU) are one process
        // group, the browser's own: killed together, not left to notice their parent died
        if let Some(pid) = self.child.id() {
            // `--` before the group: procps' kill reads `-KILL -1234` as the option `-1`, and
            // kills every process it may (kill(-1)), the test runner's too
            let _ = std::process::Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{pid}")])
                .status();
        }
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl Chromium {
    /// Starts the browser and opens one blank page of `width`×`height`.
    pub async fn start(width: u32, height: u32) -> Chromium {
        let profile = crate::harness::unique_temp_path("mcpgw-chromium");
        std::fs::create_dir_all(&profile).expect("profile dir");
        let mut child = tokio::process::Command::new(binary())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                // a container's small /dev/shm would crash the renderer
                "--disable-dev-shm-usage",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .process_group(0)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary().display()));
        let url = devtools_url(&mut child).await;
        let (socket, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .expect("connect to the DevTools socket");
        let mut browser = Chromium {
            child,
            profile,
            socket,
            next: 0,
            session: String::new(),
        };
        browser.open_page(width, height).await;
        browser
    }

    async fn open_page(&mut self, width: u32, height: u32) {
        let target = self
            .call_browser("Target.createTarget", json!({"url": "about:blank"}))
            .await;
        let id = target["targetId"].as_str().expect("a target id").to_owned();
        let attached = self
            .call_browser(
                "Target.attachToTarget",
                json!({"targetId": id, "flatten": true}),
            )
            .await;
        self.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_owned();
        let metrics =
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false});
        self.call("Emulation.setDeviceMetricsOverride", metrics)
            .await;
        self.call("Page.enable", json!({})).await;
        self.call("Runtime.enable", json!({})).await;
    }

    /// A command to the browser itself.
    async fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None).await
    }

    /// A command to the page; its result (panics on a protocol error).
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(session)).await
    }

    async fn send(&mut self, method: &str, params: Value, session: Option<String>) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.socket
            .send(Message::text(msg.to_string()))
            .await
            .expect("send to the browser");
        let answer = tokio::time::timeout(Duration::from_secs(30), self.answer_to(id))
            .await
            .unwrap_or_else(|_| panic!("the browser did not answer {method} in 30 s"));
        if let Some(e) = answer.get("error") {
            panic!("{method}: {e}");
        }
        answer["result"].clone()
    }

    /// Reads messages until the answer to `id` (events in between are not needed).
    async fn answer_to(&mut self, id: u64) -> Value {
        while let Some(msg) = self.socket.next().await {
            let Ok(Message::Text(text)) = msg else {
                continue;
            };
            let value: Value = serde_json::from_str(&text).expect("JSON from the browser");
            if value["id"] == json!(id) {
                return value;
            }
        }
        panic!("the DevTools socket closed");
    }

    /// Opens `url` and waits until its document has loaded.
    pub async fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url})).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while tokio::time::Instant::now() < deadline {
            if self.eval("document.readyState").await == "complete" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{url} did not load in 15 s");
    }

    /// The value of `expression` in the page (promises awaited).
    pub async fn eval(&mut self, expression: &str) -> Value {
        let params = json!({"expression": expression, "returnByValue": true, "awaitPromise": true});
        let result = self.call("Runtime.evaluate", params).await;
        if let Some(e) = result.get("exceptionDetails") {
            panic!("`{expression}` threw: {e}");
        }
        result["result"]["value"].clone()
    }

    /// Polls `expression` until it is `true`, for up to `within`; whether it became so.
    pub async fn wait_for(&mut self, expression: &str, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if self.eval(expression).await == json!(true) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Writes the whole page as a PNG to `path`.
    pub async fn screenshot(&mut self, path: &Path) {
        let params = json!({"format": "png", "captureBeyondViewport": true});
        let shot = self.call("Page.captureScreenshot", params).await;
        let data = shot["data"].as_str().expect("PNG data");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("base64 PNG");
        std::fs::write(path, png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// The `ws://` address chromium prints on stderr once it listens.
async fn devtools_url(child: &mut tokio::process::Child) -> String {
    let stderr = child.stderr.take().expect("piped stderr");
    let mut lines = BufReader::new(stderr).lines();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                return Some(url.trim().to_owned());
            }
        }
        None
    })
    .await;
    // keep reading stderr, or chromium blocks once the pipe is full
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    match found {
        Ok(Some(url)) => url,
        _ => panic!("chromium printed no DevTools address in 30 s"),
    }
}
