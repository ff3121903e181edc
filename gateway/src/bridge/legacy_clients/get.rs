//! A bridged session's GET stream, served by the gateway (a 2026-07-28 backend has none):
//! keep-alives, and the notifications of the session's `subscriptions/listen` stream
//! (`super::listen`), held while the GET is open.

use super::listen;
use crate::bridge::{Bridge, Served};
use crate::config::DualBackends;
use crate::downstream::answer;
use crate::downstream::client::Client;
use crate::error::Fail;
use crate::session::{Lookup, SessionManager, SessionRecord};
use crate::stream::KEEP_ALIVE;
use crate::upstream::Pool;
use bytes::Bytes;
use mcp_wire::translate::ClientInit;
use pingora::prelude::*;
use std::sync::Arc;
use tokio::sync::broadcast;

/// GET: the session's server→client stream, served by the gateway: keep-alives and whatever
/// the bridge has for the client, until the session ends or the client goes.
pub(super) async fn get(
    bridge: &Bridge,
    sessions: &SessionManager,
    session: &mut impl Client,
    (pool, dual): (&Arc<Pool>, DualBackends),
    rec: SessionRecord,
) -> Result<Served, Fail> {
    let keep_alive = bridge.keep_alive();
    let mut events = bridge.live.stream(&rec.id);
    let uris = rec.settings.subscriptions.iter().map(|u| u.to_string());
    // the stored initialize parsed when the session opened
    let _listen = ClientInit::parse(&rec.init_params).ok().map(|init| {
        let source = || listen::Source {
            engine: bridge.engine.clone(),
            pool: pool.clone(),
            dual,
            client: {
                // sent as the listen POST: the GET's end-to-end headers and caller
                let mut head = session.req_header().clone();
                head.set_method(http::Method::POST);
                head
            },
            path: rec.path.to_string(),
            init,
            to_client: bridge.live.sender(&rec.id),
        };
        bridge.listens.hold(&rec.id, uris.collect(), source)
    });
    answer::open_stream(session, None).await?;
    let result = loop {
        let next = tokio::select! {
            e = events.recv() => match e {
                Ok(event) => Some(event),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => break Ok(()),
            },
            _ = tokio::time::sleep(keep_alive) => None,
            _ = session.gone() => break Ok(()),
        };
        let chunk = match next {
            Some(event) => event,
            None => {
                if !matches!(sessions.inspect(&rec.id).await, Ok(Lookup::Live(_))) {
                    break answer::end(session).await;
                }
                Bytes::from_static(KEEP_ALIVE)
            }
        };
        if let Err(e) = answer::event(session, chunk).await {
            break Err(e);
        }
    };
    drop(events);
    bridge.live.stream_closed(&rec.id);
    result?;
    Ok(Served::default())
}
