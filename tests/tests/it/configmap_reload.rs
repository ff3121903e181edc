//! The Helm chart's claim that a config change needs no pod restart: the kubelet updates a
//! mounted ConfigMap by writing a new timestamped directory and swapping the `..data` symlink
//! that `gateway.yaml` points through, and the gateway's own file watcher must pick that up
//! (every swap, not only the first) while the process, its connections and sessions stay.

use mcp_gateway_tests::{assert_eventually, Gateway, MockServer, Request};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

fn config(gw: &Gateway, mock: &MockServer, path: &str) -> String {
    format!(
        "listen: {}\nadmin: {}\nthreads: 2\npools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: {path}, pool: p }}\n",
        gw.addr, gw.admin, mock.addr
    )
}

/// What the kubelet's atomic writer does: the data in a new directory, `..data` swapped to it
/// by renaming a fresh symlink over it, `gateway.yaml` a symlink through `..data`.
fn kubelet_update(dir: &Path, version: u32, yaml: &str) {
    let data = dir.join(format!("..2026_11_30_v{version}"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("gateway.yaml"), yaml).unwrap();
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(data.file_name().unwrap(), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
    let link = dir.join("gateway.yaml.link");
    let _ = std::fs::remove_file(&link);
    symlink("..data/gateway.yaml", &link).unwrap();
    std::fs::rename(&link, dir.join("gateway.yaml")).unwrap();
}

async fn status(gw: &Gateway, path: &str) -> u16 {
    Request::tools_call(path, 1, "whoami")
        .send(gw.addr)
        .await
        .status()
}

#[tokio::test]
async fn a_configmap_update_is_reloaded_in_place_every_time_without_a_restart() {
    let mock = MockServer::start("m-0").await;
    let first = format!(
        "pools:\n  p: {{ backends: [{}] }}\nroutes:\n  - {{ path: /v1, pool: p }}\n",
        mock.addr
    );
    let gw = Gateway::start(&first).await;
    let pid = gw.pid();
    assert_eq!(status(&gw, "/v1").await, 200);
    let dir = gw.config_path.parent().unwrap().to_owned();
    assert_eq!(gw.config_path.file_name().unwrap(), "gateway.yaml");

    // first update turns the plain file into the ConfigMap layout
    kubelet_update(&dir, 2, &config(&gw, &mock, "/v2"));
    assert_eventually!(
        Duration::from_secs(10),
        status(&gw, "/v2").await == 200,
        "/v2 served after the first swap"
    );
    assert_eq!(status(&gw, "/v1").await, 404, "the old route is gone");
    // later updates only swap ..data: the path the gateway watches never changes
    kubelet_update(&dir, 3, &config(&gw, &mock, "/v3"));
    assert_eventually!(
        Duration::from_secs(10),
        status(&gw, "/v3").await == 200,
        "/v3 served after the second swap"
    );
    assert_eq!(gw.pid(), pid, "the same process");
    assert!(
        gw.metric("mcpgw_config_reloads_total{result=\"applied\"}")
            .await
            >= 2.0
    );
}
