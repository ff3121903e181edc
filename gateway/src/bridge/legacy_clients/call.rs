//! One bridged call, round by round: the legacy request goes out as a 2026-07-28 request; the
//! answer's notifications go to the client (progress kept increasing across rounds); an
//! `input_required` result becomes server→client requests on the call's answer (after the
//! capability check), the client's responses are awaited and the call is retried with them
//! and the `requestState`, until the result is complete or the round cap is reached.

use super::limits::{INPUT_TIMEOUT, MAX_ROUNDS};
use super::live::Live;
use super::upstream::{Sent, Upstream};
use crate::bridge::answer::Messages;
use crate::error::GatewayError;
use crate::upstream::Backend;
use mcp_wire::translate::request::{modern_request, Envelope, Retry};
use mcp_wire::translate::result::{answer, peek, Answer, ProgressShift};
use mcp_wire::translate::rounds::{
    missing_capability, server_request, ClientAnswer, InputRequired,
};
use mcp_wire::translate::ClientInit;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::mpsc;

/// How a call ended, when not with a gateway error.
#[derive(Debug)]
pub(super) enum Final {
    /// The legacy result.
    Result(Value),
    /// The backend's response message as it is (first round: it has the client's id).
    Verbatim(bytes::Bytes),
    /// The server's JSON-RPC error object, passed on.
    Error(Value),
    /// The client cancelled the call: nothing more is sent.
    Cancelled,
}

/// A round's response.
enum Response {
    /// The backend's response message as it is, for the client.
    Verbatim(bytes::Bytes),
    /// The response message, parsed.
    Parsed(Value),
}

/// One call to bridge.
pub(super) struct Call<'a> {
    pub(super) up: Upstream<'a>,
    pub(super) live: &'a Live,
    /// The bridges' metric families (rounds fulfilled).
    pub(super) metrics: &'a crate::bridge::metrics::BridgeMetrics,
    pub(super) session: &'a Arc<str>,
    pub(super) init: &'a ClientInit,
    pub(super) log_level: Option<&'a str>,
    /// The client's request, parsed.
    pub(super) msg: &'a Value,
    /// Its id as JSON text (for cancellation).
    pub(super) id_json: &'a str,
    pub(super) method: &'a str,
    pub(super) repeatable: bool,
}

/// What a call reports as it goes: messages for the client before the answer, and the
/// backends that answered (the last one is the one logged).
pub(super) struct Progress {
    pub(super) to_client: mpsc::Sender<Value>,
    pub(super) backend: Option<Arc<Backend>>,
    pub(super) rounds: usize,
}

impl Call<'_> {
    /// Runs the call to its end.
    pub(super) async fn run(&self, out: &mut Progress) -> Result<Final, GatewayError> {
        let in_flight = self.live.call(self.session, self.id_json)?;
        let run = self.rounds(out);
        let done = tokio::select! {
            done = run => done,
            _ = in_flight.cancelled.notified() => Ok(Final::Cancelled),
        };
        if let Ok(done) = &done {
            self.learn(done);
        }
        done
    }

    /// The call's rounds, each a request to a backend, until its result or the round cap.
    async fn rounds(&self, out: &mut Progress) -> Result<Final, GatewayError> {
        let env = Envelope {
            init: self.init,
            log_level: self.log_level,
        };
        let mut shift = ProgressShift::default();
        let mut retry: Option<Retry> = None;
        // a retry carries the same arguments: mirrored once
        let params = self.param_headers(env).await;
        // Round k is the k-th request to a backend; MAX_ROUNDS input_required answers are
        // fulfilled, the next one is refused.
        for round in 1..=MAX_ROUNDS + 1 {
            out.rounds = round;
            let req = modern_request(self.msg, env, retry.as_ref())
                .map_err(|e| GatewayError::untranslatable(&self.up.pool.name, &e.to_string()))?;
            let sent = self.up.send_with(&req, &params, self.repeatable).await?;
            out.backend = Some(sent.backend.clone());
            let first = retry.is_none();
            let mut response = match self.response(sent, first, &mut shift, out).await? {
                Response::Verbatim(raw) => return Ok(Final::Verbatim(raw)),
                Response::Parsed(response) => response,
            };
            if let Some(error) = response.get_mut("error") {
                return Ok(Final::Error(error.take()));
            }
            let result = response
                .get_mut("result")
                .map(Value::take)
                .unwrap_or_default();
            let input = match answer(result) {
                Ok(Answer::Complete(result)) => return Ok(Final::Result(result)),
                Ok(Answer::InputRequired(input)) => input,
                Err(e) => {
                    return Err(GatewayError::untranslatable(
                        &self.up.pool.name,
                        &e.to_string(),
                    ))
                }
            };
            if round > MAX_ROUNDS {
                break;
            }
            let responses = self.ask_client(&input, out).await?;
            let metrics = self.metrics;
            metrics
                .bridge_rounds
                .with_label_values(&[&self.up.pool.name])
                .inc();
            retry = Some(Retry {
                id: Value::String(format!("mcpgw-retry-{}-{round}", self.id_json)),
                input_responses: responses,
                request_state: input.request_state,
            });
            shift.next_round();
        }
        Err(GatewayError::bridge_rounds_exceeded(
            self.method,
            MAX_ROUNDS,
        ))
    }

    /// Reads one round's answer to its response: its notifications go to the client (their
    /// progress shifted), a backend's request is dropped; the first round's response goes to
    /// the client as it is when it can. An answer cut off before its response is the backend
    /// lost; one without a response, untranslatable.
    async fn response(
        &self,
        sent: Sent,
        first: bool,
        shift: &mut ProgressShift,
        out: &Progress,
    ) -> Result<Response, GatewayError> {
        let mut messages = Messages::new(sent.exchange);
        let status = messages.status();
        let response = loop {
            let next = messages
                .next()
                .await
                .map_err(|_| GatewayError::backend_lost(&self.up.pool.name, &sent.backend.label))?;
            let Some(raw) = next else {
                if messages.is_event_stream() && status < 400 {
                    // an event stream ended before its response: the outcome is unknown
                    return Err(GatewayError::backend_lost(
                        &self.up.pool.name,
                        &sent.backend.label,
                    ));
                }
                break None;
            };
            let Some(peek) = peek(&raw) else { continue };
            if peek.response && peek.verbatim && first {
                messages.finish(self.up.engine).await;
                return Ok(Response::Verbatim(raw));
            }
            let Ok(msg) = serde_json::from_slice::<Value>(&raw) else {
                continue;
            };
            if peek.response {
                break Some(msg);
            }
            if peek.request {
                // a server→client request on a 2026-07-28 answer has no way back
                tracing::debug!("a 2026-07-28 backend sent a request on a POST answer; dropped");
                continue;
            }
            if let Some(note) = shift.shift(msg) {
                let _ = out.to_client.send(note).await;
            }
        };
        messages.finish(self.up.engine).await;
        let Some(response) = response else {
            let detail = format!("HTTP {status} without a JSON-RPC response");
            return Err(GatewayError::untranslatable(&self.up.pool.name, &detail));
        };
        Ok(Response::Parsed(response))
    }

    /// Sends the client one server→client request per input request (after checking it
    /// declared each capability) and waits for all the answers.
    async fn ask_client(
        &self,
        input: &InputRequired,
        out: &mut Progress,
    ) -> Result<Map<String, Value>, GatewayError> {
        let pool = &self.up.pool.name;
        match missing_capability(self.init, input) {
            Ok(None) => {}
            Ok(Some((method, required))) => {
                return Err(GatewayError::missing_client_capability(&method, required))
            }
            Err(e) => return Err(GatewayError::untranslatable(pool, &e.to_string())),
        }
        let mut asked = Vec::with_capacity(input.requests.len());
        for req in &input.requests {
            let a = self.live.ask(self.session);
            let msg = server_request(req, &a.id, &a.id);
            let _ = out.to_client.send(msg).await;
            asked.push((req, a));
        }
        let mut responses = Map::new();
        let timeout_ms = INPUT_TIMEOUT.as_millis() as u64;
        for (req, mut a) in asked {
            let answer = tokio::time::timeout(INPUT_TIMEOUT, &mut a.answer).await;
            let given = match answer {
                Ok(Ok(ClientAnswer::Result(v))) => v,
                Ok(Ok(ClientAnswer::Error(e))) => {
                    return Err(GatewayError::input_not_given(
                        &req.method,
                        &req.key,
                        Some(e),
                        timeout_ms,
                    ))
                }
                Ok(Err(_)) | Err(_) => {
                    return Err(GatewayError::input_not_given(
                        &req.method,
                        &req.key,
                        None,
                        timeout_ms,
                    ))
                }
            };
            responses.insert(req.key.clone(), given);
        }
        Ok(responses)
    }
}
