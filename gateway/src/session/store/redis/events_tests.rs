//! The Redis [`StreamStore`] against a real redis-server: what one replica writes through,
//! another reads back, follows live and finds in a session's list of held streams, under the
//! key layout of `events.rs` and `held.rs`.
use super::tests::RedisServer;
use super::*;
use crate::session::store::RedisEvents;
use crate::session::store::{StoredEvent, StreamStore};
use bytes::Bytes;
use std::sync::Arc;

fn event(seq: u64, text: &str) -> StoredEvent {
    StoredEvent {
        session: Arc::from("s1"),
        token: 0xab,
        seq,
        event: Bytes::from(text.to_owned()),
        request: Some(Arc::from("7")),
        backend: (seq == 2).then(|| Arc::from("b-2")),
    }
}

async fn store(server: &RedisServer) -> Arc<RedisStore> {
    let config = RedisConfig {
        urls: vec![server.url.clone()],
        cluster: false,
        sentinel: None,
        key_prefix: "ev:".into(),
    };
    let ttl = Ttl {
        idle: Duration::from_secs(60),
        tombstone: Duration::from_secs(60),
    };
    Arc::new(RedisStore::new(config, ttl))
}

#[tokio::test]
async fn events_written_through_are_read_back_in_order_with_their_end_and_writer() {
    let server = RedisServer::start().await;
    let writer = RedisEvents::new(store(&server).await);
    let reader = RedisEvents::new(store(&server).await);
    for seq in 1..=3 {
        writer.write(event(seq, &format!("e{seq}")));
    }
    writer.end(&Arc::from("s1"), 0xab, 4);
    let mut ends = None;
    for _ in 0..100 {
        ends = reader.first_and_last("s1", 0xab).await.unwrap();
        if ends.as_ref().is_some_and(|(_, last)| last.end) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (first, last) = ends.expect("the stream is in Redis");
    assert_eq!((first.seq, first.request.as_deref()), (1, Some("7")));
    assert_eq!((last.seq, last.end), (4, true));
    let after = reader.after("s1", 0xab, 1, 100).await.unwrap();
    let seqs: Vec<u64> = after.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [2, 3, 4]);
    assert_eq!(after[0].event.as_deref(), Some(&b"e2"[..]));
    let newest = reader.newest("s1", 0xab, 20).await.unwrap();
    assert_eq!(
        newest.iter().find_map(|e| e.backend.clone()).as_deref(),
        Some("b-2")
    );
    // the writer said it is alive (its first write started the liveness task)
    assert!(reader.writer_alive(&first.writer).await);
    assert!(!reader.writer_alive("someone-else").await);
    assert!(reader.first_and_last("s1", 0xcd).await.unwrap().is_none());
}

#[tokio::test]
async fn held_streams_are_listed_oldest_first_and_their_events_followed() {
    let server = RedisServer::start().await;
    let holder = RedisEvents::new(store(&server).await);
    let other = RedisEvents::new(store(&server).await);
    holder.register_held("s1", 0xab, false).await.unwrap();
    holder.register_held("s1", 0xcd, true).await.unwrap();
    let listed = other.held_streams("s1").await.unwrap();
    assert_eq!(listed, [(0xab, false), (0xcd, true)]);
    holder.write(event(1, "e1"));
    let mut follower = other.follower().await.unwrap();
    let mut seqs = Vec::new();
    for _ in 0..20 {
        let block = Duration::from_millis(500);
        let entries = follower.wait("s1", 0xab, None, 100, block).await.unwrap();
        seqs = entries.into_iter().map(|e| e.seq).collect();
        if !seqs.is_empty() {
            break;
        }
    }
    assert_eq!(seqs, [1]);
}
