//! Any path name works, including words `ip` reads as keywords (`a`, `dev`,
//! `up`) and names the kernel keeps for itself (`lo`, `all`, `default`,
//! whose interfaces are called `NAME.path`): the lab comes up and carries
//! traffic on every path.

mod common;

use braid_lab::Side;
use common::{have_root, Lab};

#[test]
fn keyword_and_reserved_path_names_come_up_and_carry_traffic() {
    if !have_root() {
        return;
    }
    let names = ["a", "dev", "up", "lo", "all", "default"];
    let specs: Vec<String> = names
        .iter()
        .map(|n| format!("50mbit,1ms,name={n}"))
        .collect();
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let lab = Lab::up("t-names", &specs);
    let server = lab.server_addr();
    for (path, name) in lab.status.paths.iter().zip(names) {
        assert_eq!(path.layout.name, name);
        let iface = path.layout.client_iface.as_str();
        let out = lab.run(
            Side::Client,
            &[
                "ping", "-n", "-c", "2", "-i", "0.2", "-W", "2", "-I", iface, &server,
            ],
        );
        assert!(
            out.status.success(),
            "path {name} (interface {iface}): {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    // Each path's own emulated link carried its pings, both ways.
    let status = braid_lab::status(&lab.name).unwrap();
    for p in &status.paths {
        for dir in [&p.up, &p.down] {
            let forwarded = dir.as_ref().unwrap().counters.forwarded_packets;
            assert!(
                forwarded >= 2,
                "path {}: {forwarded} forwarded",
                p.layout.name
            );
        }
    }
}
