//! `deploy/` stays true to the gateway: the Kubernetes ConfigMap's config validates, and every
//! metric the Grafana dashboard and the alert rules query is one the gateway exports.

use mcp_gateway::metrics::Metrics;
use pingora_prometheus::prometheus::Registry;
use std::path::{Path, PathBuf};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(path)
}

/// The indented block under `gateway.yaml: |` in the ConfigMap.
fn configmap_config(manifest: &str) -> String {
    let mut lines = manifest
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("gateway.yaml: |"));
    let header = lines.next().expect("a gateway.yaml key in the ConfigMap");
    let key_indent = header.len() - header.trim_start().len();
    lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > key_indent)
        .map(|l| l.get(key_indent + 2..).unwrap_or("").to_owned() + "\n")
        .collect()
}

#[test]
fn the_configmap_config_validates() {
    let manifest = std::fs::read_to_string(deploy("kubernetes/gateway.yaml")).unwrap();
    let config = configmap_config(&manifest);
    assert!(config.contains("pools:"), "{config}");
    if let Err(errors) = mcp_gateway::config::parse(&config) {
        panic!("the ConfigMap's config does not validate: {errors:#?}");
    }
}

fn queried_metrics(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(pos) = text[i..].find("mcpgw_") {
        let start = i + pos;
        let end = start
            + text[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(text.len() - start);
        names.push(text[start..end].to_owned());
        i = end.max(start + 1);
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn every_metric_the_dashboard_and_alerts_query_is_exported() {
    let metrics = Metrics::new(&Registry::new());
    let exported = |name: &str| {
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        metrics.names.iter().any(|n| n == name || n == base)
    };
    for file in [
        "grafana/mcp-gateway-rollouts.json",
        "prometheus/alerts.yaml",
    ] {
        let text = std::fs::read_to_string(deploy(file)).unwrap();
        let queried = queried_metrics(&text);
        assert!(queried.len() >= 3, "{file} queries {queried:?}");
        for name in queried {
            assert!(
                exported(&name),
                "{file} queries {name}, which the gateway does not export"
            );
        }
    }
}
