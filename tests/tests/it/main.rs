//! The integration tests, one module per concern, all in one test binary (`it`), the way
//! linkerd2-proxy's integration crate is laid out: the harness, tokio, h2, prost and the rest
//! are linked once instead of once per file, and the tests of every module share the test
//! threads (two at a time on a 2-core machine, across the whole suite instead of per file).
//!
//! Run them: `cargo test -p mcp-gateway-tests --test it`; one module:
//! `cargo test -p mcp-gateway-tests --test it stateful::`; one test: add its name.
//!
//! A new test file: put it beside this one (`tests/tests/it/NAME.rs`, with its `//!` header) and
//! add `mod NAME;` below, in alphabetical order. A file left directly in `tests/tests/` still
//! builds, as a binary of its own: move it here.
//!
//! Every test shares this process with the others: nothing process-wide may change under them
//! (no `std::env::set_var`, no `set_current_dir`): give a process the test starts its own
//! environment (`Gateway::start_with_env`, `Command::env`).
#![forbid(unsafe_code)]

mod admin_listener_bounds;
mod admission;
mod answer_outcomes;
mod audit;
mod auth;
mod auth_principals;
mod background_moves;
mod bridge_deadlines;
mod cache;
mod capture;
mod capture_redaction;
mod configmap_reload;
mod conformance;
mod connection_cap;
mod console;
mod console_ticket;
mod content_length_lists;
mod elicit;
mod era_bridge;
mod era_probe;
mod era_rollout;
mod era_routing;
mod era_subscribe;
mod every_head_judged;
mod framing_errors;
mod half_open_cap;
mod harness;
mod held_relay_latency;
mod held_replicas;
mod held_streams;
mod http_semantics;
mod identity_headers;
mod interceptor_paths;
mod interceptor_refusals;
mod interceptors;
mod interop_matrix;
mod listener;
mod load_tool;
mod lying_headers;
mod modern_bodies_on_auto_routes;
mod mrtr_forward;
mod name_match;
mod no_tunnel;
mod ordering;
mod orphaned_streams;
mod param_headers;
mod pinning;
mod pooled_bridge;
mod pooled_cache_hints;
mod pooled_cutoff;
mod pooled_listen;
mod pooled_shares;
mod pools;
mod quiet_logs;
mod real_peers_admission;
mod real_peers_auth;
mod real_peers_background_moves;
mod real_peers_client_credentials;
mod real_peers_expect_continue;
mod real_peers_leaked_session;
mod real_peers_listen;
mod real_peers_mrtr;
mod real_peers_mrtr_replicas;
mod real_peers_parked;
mod real_peers_pooled;
mod real_peers_resource_rules;
mod real_peers_rollout;
mod real_peers_stateful;
mod real_peers_stateless;
mod real_peers_tasks_v1;
mod real_peers_tls;
mod real_peers_token_exchange;
mod real_peers_upstream_auth;
mod replicas;
mod replicas_real;
mod resume;
mod resume_budget;
mod routing_uris;
mod safe_defaults;
mod slow_clients;
mod soak;
mod stateful;
mod stateless;
mod stateless_plain;
mod store_failover;
mod store_failover_real;
mod store_paused_delete;
mod subscription_bounds;
mod task_requests;
mod tasks;
mod tasks_peer;
mod tls_handshakes;
mod traces;
mod undecodable_answers;
mod virtual_servers;
mod virtual_servers_replicas;
