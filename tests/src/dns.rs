//! A tiny authoritative DNS server on 127.0.0.1 for discovery tests: it answers A queries for
//! any name with the current list of IPv4 addresses (TTL 0), like a Kubernetes headless
//! Service answers with its ready pods; the test changes the list as pods come and go.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use tokio::net::UdpSocket;

/// A running test DNS server.
pub struct DnsServer {
    /// Where it listens (UDP).
    pub addr: SocketAddr,
    answers: Arc<Mutex<Vec<Ipv4Addr>>>,
    task: tokio::task::JoinHandle<()>,
}

impl DnsServer {
    /// Starts answering with `ips`.
    pub async fn start(ips: &[Ipv4Addr]) -> DnsServer {
        let socket = UdpSocket::bind("127.0.0.1:0").await.expect("bind dns");
        let addr = socket.local_addr().expect("addr");
        let answers = Arc::new(Mutex::new(ips.to_vec()));
        let current = answers.clone();
        let task = tokio::spawn(async move {
            let mut buf = [0u8; 512];
            loop {
                let Ok((n, from)) = socket.recv_from(&mut buf).await else {
                    return;
                };
                let ips = current.lock().expect("lock").clone();
                if let Some(reply) = answer(&buf[..n], &ips) {
                    let _ = socket.send_to(&reply, from).await;
                }
            }
        });
        DnsServer {
            addr,
            answers,
            task,
        }
    }

    /// Replaces the addresses it answers with.
    pub fn set(&self, ips: &[Ipv4Addr]) {
        *self.answers.lock().expect("lock") = ips.to_vec();
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The reply to one query: the question echoed, one A record per address for A queries, none
/// for other types.
fn answer(query: &[u8], ips: &[Ipv4Addr]) -> Option<Vec<u8>> {
    if query.len() < 12 {
        return None;
    }
    // the question: labels up to the zero byte, then type and class
    let mut end = 12;
    while *query.get(end)? != 0 {
        end += 1 + *query.get(end)? as usize;
    }
    let qtype = u16::from_be_bytes([*query.get(end + 1)?, *query.get(end + 2)?]);
    let question = &query[12..end + 5];
    let records: &[Ipv4Addr] = if qtype == 1 { ips } else { &[] };
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&query[..2]); // id
    out.extend_from_slice(&[0x84, 0x00]); // response, authoritative, no error
    out.extend_from_slice(&[0, 1]); // one question
    out.extend_from_slice(&(records.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]); // no authority, no additional
    out.extend_from_slice(question);
    for ip in records {
        out.extend_from_slice(&[0xC0, 0x0C]); // the name in the question
        out.extend_from_slice(&[0, 1, 0, 1]); // A, IN
        out.extend_from_slice(&[0, 0, 0, 0]); // TTL 0: always ask again
        out.extend_from_slice(&[0, 4]);
        out.extend_from_slice(&ip.octets());
    }
    Some(out)
}
