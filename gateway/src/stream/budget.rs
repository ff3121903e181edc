//! The gateway-wide bound on buffered resume bytes (`sessions.resume.max-buffered-bytes`,
//! 64 MiB by default): each stream keeps at most `max-bytes`, and this bounds their sum, so
//! clients that open answers and leave cannot make the process hold `streams × max-bytes`.
//!
//! The rule, applied after every event a stream keeps: while the process holds more than the
//! bound, the buffer of the stream nobody has read for longest (its client gone) is dropped,
//! then the next one's. A stream a client is reading is never touched (its own bounds hold
//! it, and `max-streams` / `max-connections` bound how many there are). A dropped stream goes
//! on (later events are kept again); a client resuming from before the drop gets 410 -32030
//! `evicted`, never a replay with a hole. Each drop is counted in
//! `mcpgw_resume_evictions_total`.

use super::{Resume, StreamLog};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::time::Instant;

impl Resume {
    /// Drops the buffers of the streams unread longest until the process is within
    /// `max-buffered-bytes`; returns how many were dropped. One caller works at a time (a
    /// concurrent one leaves it to it).
    pub(super) fn keep_within_budget(&self) -> usize {
        let cap = self.max_buffered.load(Ordering::Relaxed);
        if self.buffered_bytes() <= cap {
            return 0;
        }
        let Ok(_one_at_a_time) = self.evicting.try_lock() else {
            return 0;
        };
        let mut unread: Vec<(Instant, Arc<StreamLog>)> = self
            .streams
            .iter()
            .filter_map(|e| {
                e.value()
                    .unread_with_events()
                    .map(|t| (t, e.value().clone()))
            })
            .collect();
        unread.sort_by_key(|(since, _)| *since);
        let mut dropped = 0;
        for (_, log) in unread {
            if self.buffered_bytes() <= cap {
                break;
            }
            let freed = log.drop_unread();
            if freed > 0 {
                dropped += 1;
                tracing::debug!(
                    session = crate::session::short(&log.session),
                    freed,
                    "an unread stream's buffer was dropped (sessions.resume.max-buffered-bytes)"
                );
            }
        }
        self.metrics
            .resume_evictions
            .with_label_values::<&str>(&[])
            .inc_by(dropped as u64);
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::super::{event_id, message_event, Refusal};
    use super::*;
    use crate::config::ResumeConfig;
    use crate::stream::StreamMetrics as Metrics;

    fn resume(max_bytes: usize, max_buffered_bytes: usize) -> (Resume, Metrics) {
        let metrics = crate::metrics::scratch(Metrics::register);
        let resume = Resume::new(metrics.clone(), None);
        resume.configure(&ResumeConfig {
            max_bytes,
            max_buffered_bytes,
            ..ResumeConfig::default()
        });
        (resume, metrics)
    }

    /// Pushes one 100-byte event the way the ingest loop does (push, then mirror).
    fn push(resume: &Resume, log: &StreamLog) {
        log.push(|seq| message_event(&event_id(log.token, seq), &[b'x'; 64]));
        resume.mirror_last(log);
    }

    fn evictions(metrics: &Metrics) -> u64 {
        metrics
            .resume_evictions
            .with_label_values::<&str>(&[])
            .get()
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_bound_the_stream_unread_longest_is_dropped_first_and_a_read_one_never() {
        let (resume, metrics) = resume(1000, 1000);
        let session: Arc<str> = "s".into();
        let live = resume.start(&session, None, false);
        let reader = live.reader(0);
        let oldest = resume.start(&session, None, false);
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        let newer = resume.start(&session, None, false);
        for _ in 0..3 {
            push(&resume, &live);
            push(&resume, &oldest);
            push(&resume, &newer);
        }
        let event = live.last().unwrap().1.len();
        assert_eq!(resume.buffered_bytes(), 9 * event);
        assert_eq!(evictions(&metrics), 0, "within the bound");
        // one more event on each goes over: the oldest unread stream's buffer goes
        push(&resume, &live);
        push(&resume, &newer);
        assert!(
            resume.buffered_bytes() <= 1000,
            "{}",
            resume.buffered_bytes()
        );
        assert_eq!(evictions(&metrics), 1);
        assert_eq!(oldest.read(0), super::super::Read::Evicted);
        assert!(matches!(newer.read(0), super::super::Read::Event(0, _)));
        // a resume into the dropped stream is refused as evicted; the live one is whole
        let id = event_id(oldest.token, 0);
        assert_eq!(resume.find_local("s", &id).err(), Some(Refusal::Evicted));
        assert!(matches!(live.read(0), super::super::Read::Event(0, _)));
        drop(reader);
    }

    #[tokio::test]
    async fn streams_being_read_are_never_dropped_even_past_the_bound() {
        let (resume, metrics) = resume(1000, 1000);
        let session: Arc<str> = "s".into();
        let logs: Vec<_> = (0..3)
            .map(|_| resume.start(&session, None, false))
            .collect();
        let _readers: Vec<_> = logs.iter().map(|l| l.reader(0)).collect();
        for _ in 0..5 {
            for log in &logs {
                push(&resume, log);
            }
        }
        assert!(resume.buffered_bytes() > 1000);
        assert_eq!(evictions(&metrics), 0);
        assert!(logs
            .iter()
            .all(|l| l.read(0) != super::super::Read::Evicted));
    }
}
