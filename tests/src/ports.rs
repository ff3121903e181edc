//! Ports that cannot collide. A process the harness starts on a port it picked must prove the
//! port is its own before a test talks to it: every listening socket that would take a
//! connection to 127.0.0.1:PORT (bound to 127.0.0.1, 0.0.0.0, `::` or a v4-mapped form of
//! them) must be an open file of that process (or of its descendants), found through
//! `/proc/net/tcp{,6}` (socket inode) and `/proc/<pid>/fd` (`socket:[inode]` links). Anything
//! else on the port (a stranger's listener, or any socket holding it while the child is not
//! listening yet) is [`Listening::Contended`], and the harness starts over on a new port.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::process::Child;

/// A port that was free a moment ago (bound to 127.0.0.1:0, read and released). Racy by
/// nature: use it only where the ownership proof ([`check`]) follows, or as a unique number.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// What is on a port, seen from a process that should be listening there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listening {
    /// Every listener reaching 127.0.0.1:PORT is the process's own (and there is at least one).
    Ours,
    /// Nothing holds the port yet.
    NotYet,
    /// Someone else holds the port: what was found.
    Contended(String),
}

/// One row of `/proc/net/tcp` or `/proc/net/tcp6`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    local: SocketAddr,
    listen: bool,
    inode: u64,
}

/// Whether a socket bound to `ip` takes connections to 127.0.0.1.
fn reaches_loopback(ip: IpAddr) -> bool {
    let v4 = match ip {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(v6) if v6.is_unspecified() => return true,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4,
            None => return false,
        },
    };
    v4 == Ipv4Addr::LOCALHOST || v4.is_unspecified()
}

/// `0100007F:1F90` (the kernel prints each 32-bit word of the address in host order).
fn parse_addr(text: &str) -> Option<SocketAddr> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        Some(
            u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16)
                .ok()?
                .to_ne_bytes(),
        )
    };
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

fn parse_table(text: &str) -> Vec<Row> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some(Row {
                local: parse_addr(f.get(1)?)?,
                listen: *f.get(3)? == "0A",
                inode: f.get(9)?.parse().ok()?,
            })
        })
        .collect()
}

fn sockets() -> Vec<Row> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| parse_table(&t))
        .collect()
}

/// `pid` and its descendants (a wrapper's child holds the socket then).
fn family(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            // `pid (comm) state ppid ...`: comm may hold spaces and parentheses
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|s| s.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                parents.push((p, ppid));
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    out
}

/// Socket inodes open in `pid` or its descendants.
pub fn socket_inodes(pid: u32) -> HashSet<u64> {
    let mut out = HashSet::new();
    for p in family(pid) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{p}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let link = link.to_string_lossy();
            if let Some(inode) = link
                .strip_prefix("socket:[")
                .and_then(|s| s.strip_suffix(']'))
                .and_then(|s| s.parse().ok())
            {
                out.insert(inode);
            }
        }
    }
    out
}

/// Whether `pid` (with its descendants) owns 127.0.0.1:`port`.
pub fn check(pid: u32, port: u16) -> Listening {
    // TIME_WAIT rows have no inode and do not stop a bind with SO_REUSEADDR.
    let rows: Vec<Row> = sockets()
        .into_iter()
        .filter(|r| r.local.port() == port && reaches_loopback(r.local.ip()) && r.inode != 0)
        .collect();
    if rows.is_empty() {
        return Listening::NotYet;
    }
    let mine = socket_inodes(pid);
    verdict(&rows, &mine)
}

fn verdict(rows: &[Row], mine: &HashSet<u64>) -> Listening {
    let foreign: Vec<&Row> = rows.iter().filter(|r| !mine.contains(&r.inode)).collect();
    let listening = rows.iter().any(|r| r.listen && mine.contains(&r.inode));
    match foreign.iter().find(|r| r.listen) {
        Some(r) => Listening::Contended(format!(
            "{} is listened on by socket inode {}, not an open file of the process",
            r.local, r.inode
        )),
        // the accepted connections of our own listener are ours; anything else that holds
        // the port before the process listens keeps it from binding
        None if !listening && !foreign.is_empty() => Listening::Contended(format!(
            "port {} is held by socket inode {} of another process",
            foreign[0].local.port(),
            foreign[0].inode
        )),
        None if listening => Listening::Ours,
        None => Listening::NotYet,
    }
}

/// How many connections to `port` the process `pid` (or a descendant) has accepted and still
/// holds: sockets on that local port, not listening, that are open files of the process. A
/// connection the kernel completed but the process has not accepted yet sits in the listen
/// queue with no file (inode 0), so this is the "connection accepted" event as the process
/// itself saw it.
pub fn accepted(pid: u32, port: u16) -> usize {
    let mine = socket_inodes(pid);
    sockets()
        .into_iter()
        .filter(|r| r.local.port() == port && !r.listen && r.inode != 0)
        .filter(|r| mine.contains(&r.inode))
        .count()
}

/// A 127.0.0.1 address that refuses connections for as long as it lives: a socket bound there
/// and never listening (no SO_REUSEADDR, so no one else can bind or listen on the port, and
/// the kernel hands it to no one), for tests that need a dead backend.
pub struct DeadAddr {
    /// The address.
    pub addr: SocketAddr,
    _socket: tokio::net::TcpSocket,
}

impl DeadAddr {
    /// Binds a fresh one.
    pub fn new() -> DeadAddr {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind((Ipv4Addr::LOCALHOST, 0).into())
            .expect("bind a dead port");
        DeadAddr {
            addr: socket.local_addr().expect("addr"),
            _socket: socket,
        }
    }
}

impl Default for DeadAddr {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for DeadAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.addr.fmt(f)
    }
}

/// Waits until `child` owns (listens on, alone) every port of `ports` on 127.0.0.1 (see
/// [`crate::ports`]); panics if that takes longer than `limit`. `Err` says why it cannot: the
/// process exited (its port was taken, most likely), or someone else holds one of the ports.
pub(crate) async fn prove_ownership(
    child: &mut Child,
    ports: &[u16],
    what: &str,
    limit: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    let pid = child.id().ok_or("exited (reaped)")?;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited: {status}"));
        }
        let mut owned = 0;
        for &port in ports {
            match check(pid, port) {
                Listening::Ours => owned += 1,
                Listening::NotYet => {}
                Listening::Contended(why) => return Err(format!("contended: {why}")),
            }
        }
        if owned == ports.len() {
            return Ok(());
        }
        assert!(
            Instant::now() < deadline,
            "{what} (pid {pid}) did not listen on 127.0.0.1 port(s) {ports:?} within {limit:?}"
        );
        // the poll interval of this bounded wait for the ports
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_v4_and_v6_rows() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n";
        let rows = parse_table(v4);
        assert_eq!(
            rows,
            vec![Row {
                local: "127.0.0.1:8080".parse().unwrap(),
                listen: true,
                inode: 4242
            }]
        );
        let v6 = "  sl  local_address remote_address st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7 1 0 100 0 0 10 0\n";
        let row = &parse_table(v6)[0];
        assert_eq!(row.local, "[::]:8080".parse().unwrap());
        assert!(reaches_loopback(row.local.ip()));
        assert!(!reaches_loopback("127.0.0.11".parse().unwrap()));
        assert!(reaches_loopback("::ffff:127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn only_a_listener_of_ours_with_no_stranger_is_ours() {
        let row = |inode, listen| Row {
            local: "127.0.0.1:9".parse().unwrap(),
            listen,
            inode,
        };
        let mine: HashSet<u64> = [1, 2].into();
        assert_eq!(
            verdict(&[row(1, true), row(2, false)], &mine),
            Listening::Ours
        );
        // a client's connection to our listener is not ours, and does not matter then
        assert_eq!(
            verdict(&[row(1, true), row(9, false)], &mine),
            Listening::Ours
        );
        assert!(matches!(
            verdict(&[row(1, true), row(9, true)], &mine),
            Listening::Contended(_)
        ));
        assert!(matches!(
            verdict(&[row(9, false)], &mine),
            Listening::Contended(_)
        ));
        assert_eq!(verdict(&[row(2, false)], &mine), Listening::NotYet);
    }

    #[tokio::test]
    async fn this_process_owns_its_listener_and_not_a_strangers() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(check(std::process::id(), port), Listening::Ours);
        // to a child of ours, our listener is a stranger's
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(matches!(check(child.id(), port), Listening::Contended(_)));
        let _ = child.kill();
        let _ = child.wait();
        drop(listener);
        let dead = DeadAddr::new();
        assert!(std::net::TcpStream::connect(dead.addr).is_err(), "refused");
        assert!(
            std::net::TcpListener::bind(dead.addr).is_err(),
            "no one else can take it"
        );
    }
}
