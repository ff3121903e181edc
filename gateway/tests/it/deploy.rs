//! `deploy/` stays true to the gateway: the Kubernetes ConfigMaps' configs validate through the
//! gateway's own validation, the manifests run three replicas sharing their sessions through a
//! persistent Redis (and the single-replica overlay one with the memory store), and every metric
//! the Grafana dashboard and the alert rules query is one the gateway exports.

use mcp_gateway::config::{Config, StoreConfig};
use mcp_gateway::server::Families;
use pingora_prometheus::prometheus::Registry;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(deploy(path)).unwrap_or_else(|e| panic!("deploy/{path}: {e}"))
}

/// Every document of a manifest file.
fn manifests(path: &str) -> Vec<Value> {
    let text = read(path);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("deploy/{path} is not YAML: {e}"));
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    assert!(!docs.is_empty(), "deploy/{path} holds no object");
    docs
}

/// The object of `kind` named `name`.
fn object<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// The only object of `kind`.
fn only<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(found.len(), 1, "one {kind} expected: {found:#?}");
    found[0]
}

/// The gateway config in a ConfigMap, validated by the gateway's own validation.
fn configmap_config(configmap: &Value) -> Config {
    let yaml = configmap["data"]["gateway.yaml"]
        .as_str()
        .expect("a gateway.yaml key in the ConfigMap");
    assert!(yaml.contains("pools:"), "{yaml}");
    mcp_gateway::config::parse(yaml)
        .unwrap_or_else(|errors| panic!("the ConfigMap's config does not validate: {errors:#?}"))
}

/// A YAML 1.1 reader (Kubernetes' own) takes an unquoted yes/no/on/off for a boolean, where an
/// argument (`--appendonly "yes"`) must stay a string.
fn assert_no_bare_yaml11_booleans(path: &str) {
    for (i, line) in read(path).lines().enumerate() {
        let code = line.split(" #").next().unwrap_or("").trim_end();
        let value = code
            .trim_start()
            .strip_prefix("- ")
            .or_else(|| code.split_once(": ").map(|(_, v)| v))
            .unwrap_or("")
            .trim();
        assert!(
            !["yes", "no", "on", "off", "y", "n"].contains(&value.to_ascii_lowercase().as_str()),
            "deploy/{path}:{}: quote `{value}`, or Kubernetes reads a boolean",
            i + 1
        );
    }
}

fn pod_spec(workload: &Value) -> &Value {
    &workload["spec"]["template"]["spec"]
}

fn container<'a>(workload: &'a Value, name: &str) -> &'a Value {
    pod_spec(workload)["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

/// Every label of `selector` (a `matchLabels` or a Service selector) is on the pod template.
fn selects(selector: &Value, workload: &Value) -> bool {
    let labels = &workload["spec"]["template"]["metadata"]["labels"];
    let selector = selector.as_object().expect("a selector");
    !selector.is_empty() && selector.iter().all(|(k, v)| &labels[k] == v)
}

/// Runs as a non-root user, no privilege escalation, a read-only root, no capabilities.
fn assert_hardened(workload: &Value, name: &str) {
    let pod = &pod_spec(workload)["securityContext"];
    let c = &container(workload, name)["securityContext"];
    assert_eq!(pod["runAsNonRoot"], true, "{name}: {pod}");
    assert!(
        pod["runAsUser"].as_u64().is_some_and(|u| u > 0),
        "{name}: {pod}"
    );
    assert_eq!(pod["seccompProfile"]["type"], "RuntimeDefault", "{name}");
    assert_eq!(c["allowPrivilegeEscalation"], false, "{name}: {c}");
    assert_eq!(c["readOnlyRootFilesystem"], true, "{name}: {c}");
    assert_eq!(
        c["capabilities"]["drop"],
        serde_json::json!(["ALL"]),
        "{name}"
    );
    assert_eq!(
        pod_spec(workload)["automountServiceAccountToken"],
        false,
        "{name}"
    );
}

fn assert_exec_redis_cli_ping(probe: &Value, which: &str) {
    let command: Vec<&str> = probe["exec"]["command"]
        .as_array()
        .unwrap_or_else(|| panic!("the Redis {which} probe runs a command: {probe}"))
        .iter()
        .map(|a| a.as_str().expect("a string argument"))
        .collect();
    assert!(
        command.join(" ").contains("redis-cli ping"),
        "the Redis {which} probe: {command:?}"
    );
}

/// `redis://[user:pass@]host[:port][/db]` → (host, port).
fn redis_host_port(url: &str) -> (String, u16) {
    let rest = url
        .strip_prefix("redis://")
        .or_else(|| url.strip_prefix("rediss://"))
        .unwrap_or_else(|| panic!("not a redis:// URL: {url}"));
    let authority = rest.split('/').next().unwrap();
    let hostport = authority.rsplit('@').next().unwrap();
    match hostport.rsplit_once(':') {
        Some((host, port)) => (host.to_owned(), port.parse().expect("a port")),
        None => (hostport.to_owned(), 6379),
    }
}

#[test]
fn the_configmap_config_validates_with_the_redis_store() {
    let docs = manifests("kubernetes/gateway.yaml");
    let config = configmap_config(object(&docs, "ConfigMap", "mcp-gateway"));
    assert!(!config.pools.is_empty());
    let StoreConfig::Redis(redis) = &config.sessions.store else {
        panic!(
            "the ConfigMap's store is not redis: {:?}",
            config.sessions.store
        );
    };
    assert!(!redis.cluster, "one Redis instance, not a cluster");
    assert!(!redis.urls.is_empty());
    // Several replicas: one holds each session's stream, the others read it through Redis.
    assert!(
        config.sessions.hold_streams,
        "hold-streams is on with the shared store too"
    );
    // /readyz is on the admin listener, reachable from the kubelet.
    let admin = config.admin.expect("an admin listener for /readyz");
    assert!(admin.ip().is_unspecified(), "admin on {admin}");
}

#[test]
fn the_redis_url_names_the_redis_service() {
    let gateway = manifests("kubernetes/gateway.yaml");
    let redis_docs = manifests("kubernetes/redis.yaml");
    let config = configmap_config(object(&gateway, "ConfigMap", "mcp-gateway"));
    let StoreConfig::Redis(redis) = &config.sessions.store else {
        panic!("the ConfigMap's store is not redis");
    };
    let statefulset = only(&redis_docs, "StatefulSet");
    let sts_name = statefulset["metadata"]["name"].as_str().unwrap();
    let service_name = statefulset["spec"]["serviceName"]
        .as_str()
        .expect("the StatefulSet's serviceName");
    let service = object(&redis_docs, "Service", service_name);
    assert_eq!(
        service["spec"]["clusterIP"], "None",
        "the StatefulSet's Service is headless"
    );
    assert!(
        selects(&service["spec"]["selector"], statefulset),
        "the Service {service_name} selects the Redis pods"
    );
    let replicas = statefulset["spec"]["replicas"].as_u64().unwrap_or(1);
    for url in &redis.urls {
        let (host, port) = redis_host_port(url);
        // `redis`, `redis-0.redis`, or either followed by `.NAMESPACE[.svc[.cluster.local]]`
        let labels: Vec<&str> = host.split('.').collect();
        let names_service = labels[0] == service_name
            || (labels.len() > 1
                && labels[1] == service_name
                && labels[0]
                    .strip_prefix(&format!("{sts_name}-"))
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| n < replicas));
        assert!(
            names_service,
            "{url}: the host names neither the Service {service_name} nor one of its pods"
        );
        assert!(
            service["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["port"] == port),
            "{url}: port {port} is not a port of the Service {service_name}"
        );
    }
}

#[test]
fn three_gateway_replicas_ready_only_with_redis_and_a_pdb() {
    let docs = manifests("kubernetes/gateway.yaml");
    let deployment = object(&docs, "Deployment", "mcp-gateway");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let config = configmap_config(object(&docs, "ConfigMap", "mcp-gateway"));
    let gateway = container(deployment, "gateway");

    // Readiness on /readyz (not ready while a pool has no backend) on the admin port;
    // liveness on /healthz, so a Redis outage never restarts the replicas.
    let admin_port = config.admin.unwrap().port();
    let port_named = |name: &Value| -> u64 {
        match name {
            Value::Number(n) => n.as_u64().unwrap(),
            Value::String(s) => gateway["ports"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == s.as_str())
                .and_then(|p| p["containerPort"].as_u64())
                .unwrap_or_else(|| panic!("no container port {s}")),
            other => panic!("a probe port: {other}"),
        }
    };
    let readiness = &gateway["readinessProbe"]["httpGet"];
    assert_eq!(readiness["path"], "/readyz", "{gateway}");
    assert_eq!(port_named(&readiness["port"]), u64::from(admin_port));
    let liveness = &gateway["livenessProbe"]["httpGet"];
    assert_eq!(liveness["path"], "/healthz", "{gateway}");
    assert_eq!(port_named(&liveness["port"]), u64::from(admin_port));
    assert!(gateway["resources"]["requests"].is_object());
    assert_hardened(deployment, "gateway");

    // A voluntary disruption takes at most one replica: two keep serving.
    let pdb = object(&docs, "PodDisruptionBudget", "mcp-gateway");
    assert!(selects(&pdb["spec"]["selector"]["matchLabels"], deployment));
    let spec = &pdb["spec"];
    assert!(
        spec["maxUnavailable"] == 1 || spec["minAvailable"] == 2,
        "the gateway's PDB: {spec}"
    );
    let service = object(&docs, "Service", "mcp-gateway");
    assert!(selects(&service["spec"]["selector"], deployment));

    // Prometheus scrapes every replica, the ones /readyz took out of the client Service too.
    let monitor = only(&docs, "ServiceMonitor");
    let wanted = &monitor["spec"]["selector"]["matchLabels"];
    let scraped: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"] == "Service")
        .filter(|s| {
            let labels = s["metadata"]["labels"].as_object().unwrap();
            wanted
                .as_object()
                .unwrap()
                .iter()
                .all(|(k, v)| labels.get(k) == Some(v))
        })
        .collect();
    assert_eq!(scraped.len(), 1, "the ServiceMonitor selects one Service");
    let scraped = scraped[0];
    assert!(selects(&scraped["spec"]["selector"], deployment));
    assert_eq!(scraped["spec"]["publishNotReadyAddresses"], true);
    let endpoint_port = &monitor["spec"]["endpoints"][0]["port"];
    let port = scraped["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| &p["name"] == endpoint_port)
        .expect("the ServiceMonitor's port is the Service's");
    assert_eq!(port_named(&port["targetPort"]), u64::from(admin_port));
}

#[test]
fn redis_persists_to_a_volume_claim() {
    for file in ["kubernetes/redis.yaml", "kubernetes/gateway.yaml"] {
        assert_no_bare_yaml11_booleans(file);
    }
    let docs = manifests("kubernetes/redis.yaml");
    let statefulset = only(&docs, "StatefulSet");
    assert_eq!(
        statefulset["spec"]["replicas"].as_u64().unwrap_or(1),
        1,
        "one Redis primary: the gateway follows no failover"
    );
    let redis = container(statefulset, "redis");
    let image = redis["image"].as_str().unwrap();
    assert!(
        image.starts_with("redis:7"),
        "the official redis 7 image: {image}"
    );

    // appendonly on: `--appendonly yes` as arguments, or `appendonly yes` in a config file.
    let args: Vec<&str> = redis["command"]
        .as_array()
        .into_iter()
        .chain(redis["args"].as_array())
        .flatten()
        .map(|a| a.as_str().expect("string arguments"))
        .collect();
    let appendonly = args
        .windows(2)
        .any(|w| w[0] == "--appendonly" && w[1] == "yes")
        || args.iter().any(|a| a.contains("appendonly yes"));
    assert!(appendonly, "Redis runs without appendonly: {args:?}");
    let policy = args.iter().position(|a| *a == "--maxmemory-policy");
    if let Some(i) = policy {
        assert_eq!(
            args.get(i + 1),
            Some(&"noeviction"),
            "sessions are never evicted"
        );
    }

    // The data directory (the image's /data) is a volume from a claim template.
    let claims = statefulset["spec"]["volumeClaimTemplates"]
        .as_array()
        .expect("volumeClaimTemplates");
    let mount = redis["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .find(|m| m["mountPath"] == "/data")
        .expect("/data is mounted");
    let claim = claims
        .iter()
        .find(|c| c["metadata"]["name"] == mount["name"])
        .expect("/data comes from a volume claim template");
    assert!(claim["spec"]["resources"]["requests"]["storage"].is_string());

    assert_exec_redis_cli_ping(&redis["readinessProbe"], "readiness");
    assert_exec_redis_cli_ping(&redis["livenessProbe"], "liveness");
    assert!(redis["resources"]["requests"]["memory"].is_string());
    assert!(redis["resources"]["limits"]["memory"].is_string());
    assert_hardened(statefulset, "redis");
    assert!(pod_spec(statefulset)["securityContext"]["fsGroup"].is_u64());

    // Without a password, only the gateway's pods reach it.
    let gateway = manifests("kubernetes/gateway.yaml");
    let deployment = object(&gateway, "Deployment", "mcp-gateway");
    let policy = only(&docs, "NetworkPolicy");
    assert!(selects(
        &policy["spec"]["podSelector"]["matchLabels"],
        statefulset
    ));
    let from = &policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"];
    assert!(
        selects(from, deployment),
        "the gateway may connect: {policy}"
    );
}

#[test]
fn the_kustomizations_list_the_manifests() {
    let base: Value = serde_saphyr::from_str(&read("kubernetes/kustomization.yaml")).unwrap();
    let resources = base["resources"].as_array().expect("resources");
    for file in ["gateway.yaml", "redis.yaml"] {
        assert!(
            resources.iter().any(|r| r == file),
            "{file} in {resources:?}"
        );
    }
    let overlay: Value =
        serde_saphyr::from_str(&read("kubernetes-single-replica/kustomization.yaml")).unwrap();
    assert_eq!(overlay["resources"], serde_json::json!(["../kubernetes"]));
}

#[test]
fn the_single_replica_overlay_uses_the_memory_store() {
    let dir = "kubernetes-single-replica";
    let kustomization: Value =
        serde_saphyr::from_str(&read(&format!("{dir}/kustomization.yaml"))).unwrap();
    let patches = kustomization["patches"].as_array().expect("patches");

    // The ConfigMap patch: the same config, with the memory store.
    let file = patches
        .iter()
        .find_map(|p| p["path"].as_str())
        .expect("a patch file");
    let docs = manifests(&format!("{dir}/{file}"));
    let config = configmap_config(object(&docs, "ConfigMap", "mcp-gateway"));
    assert_eq!(config.sessions.store, StoreConfig::Memory);
    assert!(config.sessions.hold_streams);
    let base = manifests("kubernetes/gateway.yaml");
    let base = configmap_config(object(&base, "ConfigMap", "mcp-gateway"));
    assert_eq!(
        (&config.pools, &config.routes, &config.limits),
        (&base.pools, &base.routes, &base.limits),
        "the overlay's config differs from the base's beyond the store"
    );

    // One replica, a PDB that allows no eviction (a restart loses every session), no Redis.
    let patch_of = |kind: &str, name: &str| -> String {
        patches
            .iter()
            .find(|p| p["target"]["kind"] == kind && p["target"]["name"] == name)
            .and_then(|p| p["patch"].as_str())
            .unwrap_or_else(|| panic!("no patch for the {kind} {name}"))
            .to_owned()
    };
    let ops: Vec<Value> = serde_saphyr::from_str(&patch_of("Deployment", "mcp-gateway")).unwrap();
    assert!(ops
        .iter()
        .any(|op| op["path"] == "/spec/replicas" && op["value"] == 1));
    let ops: Vec<Value> =
        serde_saphyr::from_str(&patch_of("PodDisruptionBudget", "mcp-gateway")).unwrap();
    assert!(ops
        .iter()
        .any(|op| op["path"] == "/spec/maxUnavailable" && op["value"] == 0));
    let deleted: Vec<(String, String)> = patches
        .iter()
        .filter_map(|p| p["patch"].as_str())
        .filter_map(|p| serde_saphyr::from_str::<Value>(p).ok())
        .filter(|p| p["$patch"] == "delete")
        .map(|p| {
            let kind = p["kind"].as_str().unwrap().to_owned();
            (kind, p["metadata"]["name"].as_str().unwrap().to_owned())
        })
        .collect();
    for doc in manifests("kubernetes/redis.yaml") {
        let key = (
            doc["kind"].as_str().unwrap().to_owned(),
            doc["metadata"]["name"].as_str().unwrap().to_owned(),
        );
        assert!(deleted.contains(&key), "the overlay keeps {key:?}");
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
    let metrics = Families::register(&Registry::new());
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
        let text = read(file);
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

#[test]
fn the_dashboard_does_not_add_up_the_replicas_shared_session_counts() {
    // With the Redis store every replica reports the store's count of sessions per backend:
    // a sum over the replicas would count each session once per replica.
    let text = read("grafana/mcp-gateway-rollouts.json");
    assert!(text.contains("mcpgw_sessions_active"));
    assert!(
        !text.contains("sum by (backend) (mcpgw_sessions_active)")
            && !text.contains("sum(mcpgw_sessions_active)"),
        "the dashboard sums mcpgw_sessions_active over the replicas"
    );
}
