//! The Helm chart `deploy/helm/mcp-gateway`, rendered and linted by a real Helm (v4, as a
//! library: PyPI `helm-python-sdk` in `.venv-helm`, installed by `scripts/setup-peers`).
//! Golden renders for the default values and each `ci/*-values.yaml` set; every rendered gateway
//! config passes `mcp-gateway validate` and the config schema; every value is documented; invalid value combinations fail rendering with a reason;
//! config changes reach pods by the gateway's file reload, not by a restart (unless asked).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

const CHART: &str = "deploy/helm/mcp-gateway";

/// The value sets with a golden render: (name, values file or none).
fn value_sets() -> Vec<(String, Option<PathBuf>)> {
    let mut sets = vec![("default".to_string(), None)];
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo(&format!("{CHART}/ci")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let name = name.trim_end_matches("-values.yaml").to_string();
        sets.push((name, Some(f)));
    }
    assert!(
        sets.len() >= 4,
        "expected the default and three ci value sets"
    );
    sets
}

/// Runs deploy/helm/render.py with the real Helm: (success, stdout, stderr).
fn helm(verb: &str, values: Option<&Path>) -> (bool, String, String) {
    let python = repo(".venv-helm/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-peers (it installs helm-python-sdk, Helm as a library)",
        python.display()
    );
    let mut cmd = Command::new(python);
    cmd.arg(repo("deploy/helm/render.py"))
        .arg(verb)
        .arg(repo(CHART));
    if let Some(v) = values {
        cmd.arg(v);
    }
    let out = cmd.output().expect("run deploy/helm/render.py");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn render(values: Option<&Path>) -> String {
    let (ok, stdout, stderr) = helm("render", values);
    assert!(ok, "helm render failed for {values:?}: {stderr}");
    stdout
}

fn golden_path(name: &str) -> PathBuf {
    repo(&format!("deploy/helm/golden/{name}.yaml"))
}

/// Every document of a golden render.
fn documents(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(golden_path(name)).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn find<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn deployment(docs: &[Value]) -> &Value {
    let found = find(docs, "Deployment");
    assert_eq!(found.len(), 1);
    found[0]
}

#[test]
fn golden_renders_match_the_chart() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut stale = vec![];
    for (name, values) in value_sets() {
        let rendered = render(values.as_deref());
        let path = golden_path(&name);
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &rendered).unwrap();
        } else if std::fs::read_to_string(&path).unwrap_or_default() != rendered {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "golden renders out of date: {stale:?}; check the change and run \
         `UPDATE_GOLDEN=1 cargo test -p mcp-gateway --test it helm::golden`"
    );
}

#[test]
fn the_chart_lints_clean_with_every_value_set() {
    for (name, values) in value_sets() {
        let (ok, stdout, stderr) = helm("lint", values.as_deref());
        assert!(ok, "helm lint ({name}) found problems:\n{stdout}{stderr}");
    }
}

#[test]
fn every_rendered_gateway_config_passes_mcp_gateway_validate() {
    for (name, _) in value_sets() {
        let docs = documents(&name);
        let configmaps: Vec<&Value> = find(&docs, "ConfigMap")
            .into_iter()
            .filter(|c| c["data"]["gateway.yaml"].is_string())
            .collect();
        assert_eq!(configmaps.len(), 1, "{name}: one gateway ConfigMap");
        let yaml = configmaps[0]["data"]["gateway.yaml"].as_str().unwrap();
        let file =
            std::env::temp_dir().join(format!("mcpgw-helm-{name}-{}.yaml", std::process::id()));
        std::fs::write(&file, yaml).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
            .arg("validate")
            .arg(&file)
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&file);
        assert!(
            out.status.success(),
            "{name}: the rendered config does not validate:\n{}\n{yaml}",
            String::from_utf8_lossy(&out.stderr)
        );
        let schema = mcp_gateway::config::schema::schema();
        let as_json: Value = serde_saphyr::from_str(yaml).unwrap();
        let problems: Vec<String> = jsonschema::validator_for(&schema)
            .unwrap()
            .iter_errors(&as_json)
            .map(|e| e.to_string())
            .collect();
        assert!(
            problems.is_empty(),
            "{name}: against the config schema: {problems:?}"
        );
    }
}

#[test]
fn invalid_value_combinations_fail_rendering_with_a_reason() {
    let cases = [
        (
            "replicaCount: 3\nsessions: { store: memory }\n",
            "need sessions.store: redis",
        ),
        (
            "sessions: { store: memory }\nreplicaCount: 1\nautoscaling: { enabled: true }\n",
            "autoscaling.enabled needs",
        ),
        ("sessions: { store: etcd }\n", "neither memory nor redis"),
        (
            "sessions: { redis: { bundled: false } }\n",
            "no externalUrls",
        ),
        (
            "sessions: { redis: { externalUrls: [\"redis://r:6379\"] } }\n",
            "not both",
        ),
        (
            "sessions: { redis: { bundled: false, externalUrls: [\"http://r\"] } }\n",
            "not a redis://",
        ),
        (
            "config: { listen: 0.0.0.0:1 }\n",
            "config.listen is set by the chart",
        ),
        (
            "config: { sessions: { store: redis } }\n",
            "config.sessions.store is set by the chart",
        ),
        ("configReload: sometimes\n", "neither watch nor restart"),
        (
            "autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 2 }\n",
            "minReplicas is above",
        ),
        (
            "podDisruptionBudget: { maxUnavailable: 3 }\n",
            "every replica at once",
        ),
    ];
    let dir = std::env::temp_dir().join(format!("mcpgw-helm-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (values, reason)) in cases.iter().enumerate() {
        let file = dir.join(format!("{i}.yaml"));
        std::fs::write(&file, values).unwrap();
        let (ok, _, stderr) = helm("render", Some(&file));
        assert!(!ok, "rendering should fail for:\n{values}");
        assert!(
            stderr.contains(reason),
            "for\n{values}the failure should say `{reason}`, said: {stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn config_changes_reach_pods_by_file_reload_not_by_restart() {
    for (name, _) in value_sets() {
        let docs = documents(&name);
        let pod = &deployment(&docs)["spec"]["template"];
        let checksum = &pod["metadata"]["annotations"]["checksum/config"];
        // the ConfigMap is mounted as a directory: a subPath mount never sees an update
        let mounts = pod["spec"]["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap();
        let config = mounts.iter().find(|m| m["name"] == "config").unwrap();
        assert_eq!(config["mountPath"], "/etc/mcp-gateway", "{name}");
        assert!(config.get("subPath").is_none(), "{name}: no subPath");
        if name == "restart-on-change" {
            assert!(
                checksum.is_string(),
                "{name}: configReload: restart rolls pods"
            );
        } else {
            assert!(
                checksum.is_null(),
                "{name}: a config change must not restart pods"
            );
        }
    }
}

#[test]
fn pods_are_hardened_and_probed_on_healthz_and_readyz() {
    for (name, _) in value_sets() {
        let docs = documents(&name);
        let spec = &deployment(&docs)["spec"]["template"]["spec"];
        assert_eq!(spec["securityContext"]["runAsNonRoot"], true, "{name}");
        assert_eq!(spec["automountServiceAccountToken"], false, "{name}");
        let c = &spec["containers"][0];
        assert_eq!(
            c["securityContext"]["readOnlyRootFilesystem"], true,
            "{name}"
        );
        assert_eq!(
            c["securityContext"]["allowPrivilegeEscalation"], false,
            "{name}"
        );
        assert_eq!(
            c["securityContext"]["capabilities"]["drop"],
            serde_json::json!(["ALL"]),
            "{name}"
        );
        assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz", "{name}");
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz", "{name}");
    }
}

#[test]
fn value_sets_render_the_store_replicas_and_monitoring_they_ask_for() {
    let default = documents("default");
    assert_eq!(deployment(&default)["spec"]["replicas"], 3);
    assert_eq!(find(&default, "StatefulSet").len(), 1, "bundled Redis");
    assert_eq!(
        find(&default, "PodDisruptionBudget")[0]["spec"]["maxUnavailable"],
        1
    );
    assert!(find(&default, "HorizontalPodAutoscaler").is_empty());
    assert!(find(&default, "ServiceMonitor").is_empty());

    let memory = documents("single-replica-memory");
    assert_eq!(deployment(&memory)["spec"]["replicas"], 1);
    assert!(
        find(&memory, "StatefulSet").is_empty(),
        "no Redis with memory"
    );
    assert_eq!(
        find(&memory, "PodDisruptionBudget")[0]["spec"]["maxUnavailable"],
        0
    );

    let external = documents("external-redis-autoscaled");
    assert!(find(&external, "StatefulSet").is_empty(), "external Redis");
    assert!(
        deployment(&external)["spec"]["replicas"].is_null(),
        "the HPA owns replicas"
    );
    assert_eq!(
        find(&external, "HorizontalPodAutoscaler")[0]["spec"]["maxReplicas"],
        12
    );
    assert_eq!(find(&external, "ServiceMonitor").len(), 1);
    // the PrometheusRule carries the alert rules of deploy/prometheus/alerts.yaml, unchanged
    let alerts: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(repo("deploy/prometheus/alerts.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(find(&external, "PrometheusRule")[0]["spec"], alerts);
    // and the dashboard ConfigMap the Grafana dashboard of deploy/grafana/
    let dashboard = find(&external, "ConfigMap")
        .into_iter()
        .find(|c| c["metadata"]["labels"]["grafana_dashboard"] == "1")
        .expect("dashboard ConfigMap");
    let shipped: Value = serde_json::from_str(
        &std::fs::read_to_string(repo("deploy/grafana/mcp-gateway-rollouts.json")).unwrap(),
    )
    .unwrap();
    let inside: Value = serde_json::from_str(
        dashboard["data"]["mcp-gateway-rollouts.json"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(inside, shipped);
}

#[test]
fn every_value_of_the_chart_is_documented() {
    // a leaf key (a value on its line) outside the free-form `config:` block needs a `# --`
    // comment (helm-docs) right above it, or above a map key that holds it
    let text = std::fs::read_to_string(repo(&format!("{CHART}/values.yaml"))).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut in_config = false;
    // (indent, documented) of the map keys enclosing the current line
    let mut parents: Vec<(usize, bool)> = vec![];
    let mut undocumented = vec![];
    for (i, line) in lines.iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('-') {
            continue;
        }
        if indent == 0 {
            in_config = trimmed.starts_with("config:");
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        let value = value.split(" #").next().unwrap_or("").trim();
        parents.retain(|(at, _)| *at < indent);
        let documented = parents.iter().any(|(_, d)| *d)
            || lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.trim_start().starts_with('#'))
                .any(|l| l.trim_start().starts_with("# --"));
        if value.is_empty() {
            parents.push((indent, documented));
        } else if !in_config && !documented {
            undocumented.push(format!("values.yaml:{}: {key}", i + 1));
        }
    }
    assert!(
        undocumented.is_empty(),
        "no `# --` comment: {undocumented:#?}"
    );
}
