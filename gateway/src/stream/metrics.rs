//! The metric families of streams: held standalone streams, resumes served and refused,
//! events replayed, takeovers, and what is buffered for replay. Registered by
//! [`StreamMetrics::register`], held by `Resume` (the gauges set at scrape time by
//! `Streams::publish_gauges`).

use crate::metrics::Registrar;
use pingora_prometheus::prometheus::{IntCounterVec, IntGaugeVec};

/// The stream families.
#[derive(Clone)]
pub struct StreamMetrics {
    /// `mcpgw_held_streams`: sessions' standalone streams the gateway holds open upstream (one
    /// upstream connection each).
    pub held_streams: IntGaugeVec,
    /// `mcpgw_streams_resumed_total`: client GETs with `Last-Event-ID` that were served.
    pub streams_resumed: IntCounterVec,
    /// `mcpgw_events_replayed_total`: events written again to a client that resumed.
    pub events_replayed: IntCounterVec,
    /// `mcpgw_held_stream_takeovers_total`: held streams this replica took over after
    /// nobody held them (their holder died, or their stream ended), by `resumed`: whether the
    /// backend was asked for what it sent since (its own event id).
    pub held_stream_takeovers: IntCounterVec,
    /// `mcpgw_resumes_refused_total{reason}`: resumes answered -32030 (`unknown`, `evicted`).
    pub resumes_refused: IntCounterVec,
    /// `mcpgw_resume_buffered_bytes`: bytes of stream events kept in this process for replay.
    pub resume_buffered_bytes: IntGaugeVec,
    /// `mcpgw_resume_streams`: streams kept in this process for replay (live or in their
    /// window).
    pub resume_streams: IntGaugeVec,
    /// `mcpgw_resume_evictions_total`: buffers of unread streams dropped to keep the process
    /// within `sessions.resume.max-buffered-bytes`.
    pub resume_evictions: IntCounterVec,
}

impl StreamMetrics {
    /// Creates the families and registers them.
    pub fn register(families: &Registrar) -> StreamMetrics {
        StreamMetrics {
            held_streams: families.gauge(
                "mcpgw_held_streams",
                "Sessions' standalone streams held open upstream by the gateway",
                &[],
            ),
            streams_resumed: families.counter(
                "mcpgw_streams_resumed_total",
                "Client GETs with Last-Event-ID that were served",
                &[],
            ),
            events_replayed: families.counter(
                "mcpgw_events_replayed_total",
                "Events written again to clients that resumed a stream",
                &[],
            ),
            held_stream_takeovers: families.counter(
                "mcpgw_held_stream_takeovers_total",
                "Held streams this replica took over when nobody held them, by whether the backend resumed them from its own event id",
                &["resumed"],
            ),
            resumes_refused: families.counter(
                "mcpgw_resumes_refused_total",
                "Resumes refused (-32030), by reason",
                &["reason"],
            ),
            resume_buffered_bytes: families.gauge(
                "mcpgw_resume_buffered_bytes",
                "Bytes of stream events kept in this process for replay",
                &[],
            ),
            resume_streams: families.gauge(
                "mcpgw_resume_streams",
                "Streams kept in this process for replay (live or within their window)",
                &[],
            ),
            resume_evictions: families.counter(
                "mcpgw_resume_evictions_total",
                "Buffers of unread streams dropped to stay within sessions.resume.max-buffered-bytes",
                &[],
            ),
        }
    }
}
