//! The `input_required` rounds of a call on a pooled session (the reverse bridge's multi
//! round-trip requests): parking the call on the backend's request for input and answering the
//! client `input_required` with a sealed `requestState`, or -32021 when it lacks the
//! capability; and the client's retry, checked (-32602 with `data.reason`), matched to its
//! parked call, its answer given to the backend, the call's answer read on.

use super::park::Parked;
use super::serve::{served, unix_ms, Attempt, One};
use crate::bridge::client::{end_stream, end_with_error};
use crate::bridge::Served;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::{Fail, GatewayError};
use mcp_wire::messages;
use mcp_wire::translate::mrtr;
use mcp_wire::translate::rounds::{required_capability, InputRequest};
use pingora::prelude::*;
use serde_json::Value;

impl One<'_> {
    fn principal(&self) -> &str {
        self.to.caller.principal().map_or("", |p| &p.id)
    }

    /// Parks the call on the backend's request for input and answers the client
    /// `input_required`, or -32021 when it did not declare the capability (the backend is
    /// refused and the call cancelled there).
    pub(super) async fn park(
        &self,
        session: &mut impl Client,
        parked: Parked,
        params: Value,
        streaming: &mut bool,
    ) -> Result<Attempt, Fail> {
        let entry = parked.used.0.clone();
        let parking = &self.bridge.parking;
        let request = InputRequest {
            key: "input".into(),
            method: parked.method.clone(),
            params,
        };
        let required = required_capability(&request)
            .map_err(|e| GatewayError::untranslatable(&entry.pool.name, &e.to_string()))?;
        if !self.env.declares(&required.0) {
            parking.refused(&entry.pool.name);
            let refusal =
                GatewayError::capability_not_declared_upstream().to_backend(&parked.server_id);
            parking.end_upstream(parked, refusal, "the client lacks the capability");
            let mut e = GatewayError::missing_client_capability(&request.method, required.1);
            e.status = Some(400);
            if *streaming {
                end_with_error(session, &e, self.id).await?;
                return Ok(Attempt::Done(served(&entry.backend)));
            }
            return Err(e.into());
        }
        let ttl_ms = self.to.config.input_ttl.as_millis() as u64;
        let id = match parking.park(parked, self.to.config.parked) {
            Ok(id) => id,
            Err(full) => {
                let full = *full;
                // never left hanging: the backend's request refused, the call cancelled
                let refusal =
                    GatewayError::no_room_to_park_upstream().to_backend(&full.call.server_id);
                parking.end_upstream(full.call, refusal, "too many calls wait for input");
                let e = GatewayError::parked_calls_full(full.scope, full.limit);
                if *streaming {
                    end_with_error(session, &e, self.id).await?;
                    return Ok(Attempt::Done(served(&entry.backend)));
                }
                return Err(e.into());
            }
        };
        let state = mrtr::State {
            principal: self.principal().to_owned(),
            expires_ms: unix_ms() + ttl_ms,
            digest: mrtr::request_digest(self.msg),
            parked: id,
            key: request.key.clone(),
            holder: self.to.config.advertise.as_ref().map(|a| a.url.clone()),
        };
        let sealed = mrtr::seal(parking.sealer(self.to.config.request_state_key), &state);
        let info = entry.init_result.get("serverInfo");
        let result = mrtr::input_required(
            &request.key,
            &request.method,
            &request.params,
            &sealed,
            info,
        );
        let body = messages::result(self.id, &result);
        if *streaming {
            end_stream(session, body).await?;
        } else {
            answer::json(session, 200, None, body).await?;
        }
        Ok(Attempt::Done(served(&entry.backend)))
    }

    /// A retry with `inputResponses` and `requestState`: checked, matched to its parked call,
    /// the answer given to the backend, the call's answer read on.
    pub(super) async fn resume(
        &self,
        session: &mut impl Client,
        sealed: &str,
        responses: Option<&serde_json::Map<String, Value>>,
    ) -> Result<Served, Fail> {
        let parking = &self.bridge.parking;
        let state = self.open_state(sealed)?;
        let Some(answer) = responses.and_then(|r| r.get(&state.key)) else {
            let detail = format!("inputResponses has no `{}`", state.key);
            return Err(self.refused("missing-response", &detail));
        };
        if !answer.is_object() {
            // the backend waits for a result object: refused before the call is taken, so it
            // stays parked for a valid retry with the same requestState
            let detail = format!(
                "inputResponses.{} must be an object (the result of the server's request)",
                state.key
            );
            return Err(self.refused("invalid-response", &detail));
        }
        let Some(parked) = parking.take(&state.parked) else {
            // parked on another replica: forwarded there, once
            let own = self.to.config.advertise.as_ref().map(|a| a.url.as_str());
            if let Some(holder) = state.holder.as_deref().filter(|h| Some(*h) != own) {
                if !super::forward::was_forwarded(session) {
                    return self.forward(session, holder).await;
                }
            }
            return Err(self.refused(
                "unknown-call",
                "its call is no longer parked here (answered, expired, or held by another replica)",
            ));
        };
        self.answer_parked(session, parked, answer).await
    }

    /// The retry's `requestState` opened: sealed by this gateway's key, unexpired, for this
    /// caller and this request; else refused.
    fn open_state(&self, sealed: &str) -> Result<mrtr::State, Fail> {
        let digest = mrtr::request_digest(self.msg);
        let sealer = self.bridge.parking.sealer(self.to.config.request_state_key);
        mrtr::open(sealer, sealed, self.principal(), unix_ms(), &digest).map_err(|r| {
            let detail = match r {
                mrtr::Refusal::Forged => "it was not issued by this gateway, or was changed",
                mrtr::Refusal::Expired => "it expired",
                mrtr::Refusal::OtherPrincipal => "it was issued to another principal",
                mrtr::Refusal::OtherRequest => {
                    "it was issued for another request (method, name or arguments)"
                }
            };
            self.refused(r.as_str(), detail)
        })
    }

    /// A retry refused (-32602 with `data.reason`), counted.
    fn refused(&self, reason: &str, detail: &str) -> Fail {
        self.bridge.parking.refused_state(&self.to.pool.name);
        Fail::from(GatewayError::bad_request_state(reason, detail))
    }

    /// The client's `answer` given to the parked call's backend as the response to its
    /// request, and the call's answer read on; a backend lost on the way is -32013.
    async fn answer_parked(
        &self,
        session: &mut impl Client,
        parked: Parked,
        answer: &Value,
    ) -> Result<Served, Fail> {
        let entry = parked.used.0.clone();
        let message = mrtr::answer_backend(&parked.server_id, answer);
        let mut cancel = self.cancel_on_drop(&entry, &parked.up_id);
        let sent = self
            .engine()
            .post_in_session(
                &entry.pool,
                &entry.backend,
                &entry.session,
                message,
                self.to.caller,
            )
            .await;
        if sent.is_err() {
            cancel.disarm();
            self.bridge.pooled.drop_entry(&entry);
            return Err(GatewayError::backend_lost(&entry.pool.name, &entry.backend.label).into());
        }
        let mut streaming = false;
        let read = self
            .read(
                session,
                parked.used,
                parked.messages,
                (parked.up_id, cancel),
                parked.status,
                &mut streaming,
                parked.strays,
            )
            .await?;
        match read {
            Attempt::Done(served) => Ok(served),
            Attempt::Lost | Attempt::Forgotten | Attempt::Unreachable => {
                // one attempt, outside the engine's loop: its backend is marked here
                entry.pool.mark_failed(&entry.backend);
                Err(GatewayError::backend_lost(&entry.pool.name, &entry.backend.label).into())
            }
        }
    }
}
