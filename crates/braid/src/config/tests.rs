use std::path::{Path, PathBuf};

use super::client::ClientConfig;
use super::server::ServerConfig;
use super::values::{DataCap, Period, Rate};
use super::*;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn client_err(text: &str) -> String {
    parse::<ClientConfig>(Path::new("c.toml"), text)
        .expect_err("config must be refused")
        .to_string()
}

fn server_err(text: &str) -> String {
    parse::<ServerConfig>(Path::new("s.toml"), text)
        .expect_err("config must be refused")
        .to_string()
}

const CLIENT: &str = r#"private_key = "AlysX+WJqMQ8zAiklyPA2EhTBP+wt+Y7nxUuA1mb7Gs="
[server]
public_key = "Y6DiCd5dVCDaRa7uH3KNOuEpi3ODFUpij6Kbrlhstew="
endpoint = "192.0.2.1:51820"
[tunnel]
ipv4 = "10.77.0.2/24"
[[path]]
interface = "eth0"
"#;

#[test]
fn the_examples_parse() {
    let client: ClientConfig = load(&example("client.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(client.paths.len(), 2);
    let lte = client.paths[1].get_ref();
    assert_eq!(lte.display_name(), "lte");
    assert_eq!(lte.role, Role::Overflow);
    assert_eq!(lte.cost_weight.as_ref().map(|w| *w.get_ref()), Some(0.5));
    assert_eq!(
        *client.server.endpoint.get_ref(),
        ServerAddr::Addr("203.0.113.1:51820".parse().unwrap())
    );

    let server: ServerConfig = load(&example("server.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.listen.get_ref().len(), 2);
    assert_eq!(server.peers.len(), 2);

    // The two examples are a working pair: each names the other's key, and
    // the server lets the client send from its tunnel addresses.
    assert_eq!(
        client.server.public_key.get_ref().0,
        server.private_key.0.public_key()
    );
    let home = server
        .peers
        .iter()
        .map(|p| p.get_ref())
        .find(|p| p.public_key.0 == client.private_key.0.public_key())
        .expect("the server lists the example client");
    for address in [&client.tunnel.get_ref().ipv4, &client.tunnel.get_ref().ipv6] {
        let address = address.as_ref().expect("both families").get_ref().0.addr();
        assert!(
            home.allowed.iter().any(|net| net.contains(&address)),
            "{address}"
        );
    }
}

#[test]
fn routing_rate_limits_caps_and_nat_are_read() {
    let text = CLIENT.replace(
        "interface = \"eth0\"",
        "interface = \"eth0\"\nrate_limit = \"20mbit\"\ndata_cap = \"1.5GiB/day\"",
    ) + "[routing]\nroute_all = true\n";
    let c: ClientConfig = parse(Path::new("c.toml"), &text).unwrap();
    let p = c.paths[0].get_ref();
    assert_eq!(p.rate_limit, Some(Rate { bps: 20_000_000 }));
    assert_eq!(
        p.data_cap,
        Some(DataCap {
            bytes: 1_610_612_736,
            period: Period::Day
        })
    );
    assert!(c.routing.route_all());

    let text = format!("{SERVER}[nat]\nuplink = \"eth0\"\n");
    let s: ServerConfig = parse(Path::new("s.toml"), &text).unwrap();
    assert_eq!(
        s.nat.map(|n| n.uplink.into_inner()),
        Some("eth0".to_owned())
    );
}

/// `[tunnel]`'s switches: each can be turned off on either end, and a
/// value that is not a boolean is named with its line.
#[test]
fn tunnel_switches_can_be_turned_off_and_a_bad_value_is_named() {
    type Switch = fn(&tunnel::TunnelConfig) -> bool;
    let switches: [(&str, &str, Switch); 3] = [
        ("resend_losses", "\"no\"", |t| t.resend_losses),
        ("offload", "1", |t| t.offload),
        ("path_trains", "\"off\"", |t| t.path_trains),
    ];
    for (key, bad, value) in switches {
        let off = format!("[tunnel]\n{key} = false\n");
        let c: ClientConfig =
            parse(Path::new("c.toml"), &CLIENT.replace("[tunnel]\n", &off)).unwrap();
        assert!(!value(c.tunnel.get_ref()), "{key}");
        let s: ServerConfig =
            parse(Path::new("s.toml"), &SERVER.replace("[tunnel]\n", &off)).unwrap();
        assert!(!value(s.tunnel.get_ref()), "{key}");
        let s: ServerConfig = parse(Path::new("s.toml"), SERVER).unwrap();
        assert!(value(s.tunnel.get_ref()), "{key} is on by default");

        let err = client_err(&CLIENT.replace("[tunnel]\n", &format!("[tunnel]\n{key} = {bad}\n")));
        assert!(err.starts_with("c.toml:6: "), "{err}");
        assert!(err.contains(key), "{err}");
    }
}

#[test]
fn a_minimal_client_gets_defaults() {
    let c: ClientConfig = parse(Path::new("c.toml"), CLIENT).unwrap();
    assert_eq!(c.tunnel.get_ref().name.get_ref(), "braid0");
    assert!(c.tunnel.get_ref().resend_losses);
    assert!(c.tunnel.get_ref().offload);
    assert_eq!(c.paths[0].get_ref().role, Role::Primary);
    assert_eq!(c.routing.table, client::DEFAULT_TABLE);
    assert!(!c.routing.route_all());
    assert_eq!(
        c.control_socket(),
        Path::new(client::DEFAULT_CONTROL_SOCKET)
    );
}

#[test]
fn an_unknown_field_is_named_with_its_line() {
    let text = CLIENT.replace(
        "interface = \"eth0\"",
        "interface = \"eth0\"\nrol = \"backup\"",
    );
    let err = client_err(&text);
    assert!(err.starts_with("c.toml:9: "), "{err}");
    assert!(err.contains("unknown field `rol`"), "{err}");
}

#[test]
fn a_bad_value_names_its_field_and_line() {
    let text = CLIENT.replace(
        "interface = \"eth0\"",
        "interface = \"eth0\"\nrole = \"primry\"",
    );
    let err = client_err(&text);
    assert!(err.starts_with("c.toml:9: field `role`: "), "{err}");
    assert!(err.contains("primry"), "{err}");

    let text = CLIENT.replace(
        "interface = \"eth0\"",
        "interface = \"eth0\"\nrate_limit = \"20mbps\"",
    );
    let err = client_err(&text);
    assert!(err.starts_with("c.toml:9: field `rate_limit`: "), "{err}");

    let text = CLIENT.replace(
        "interface = \"eth0\"",
        "interface = \"eth0\"\ndata_cap = \"5GB/week\"",
    );
    let err = client_err(&text);
    assert!(
        err.starts_with("c.toml:9: field `data_cap`: invalid data cap"),
        "{err}"
    );
    // One byte is the smallest cap.
    assert_eq!(
        DataCap::try_from("1B/day".to_owned()),
        Ok(DataCap {
            bytes: 1,
            period: Period::Day
        })
    );
    for (cap, says) in [
        ("0GB/day", "at least one byte"),
        ("0.5B/month", "at least one byte"),
        ("99999999999TiB/month", "more than any path carries"),
    ] {
        let text = CLIENT.replace(
            "interface = \"eth0\"",
            &format!("interface = \"eth0\"\ndata_cap = \"{cap}\""),
        );
        let err = client_err(&text);
        assert!(err.starts_with("c.toml:9: field `data_cap`: "), "{err}");
        assert!(err.contains(says), "{cap}: {err}");
    }

    let text = CLIENT.replace("192.0.2.1:51820", "192.0.2.1");
    let err = client_err(&text);
    assert!(err.starts_with("c.toml:4: field `endpoint`: "), "{err}");

    let text = CLIENT.replace("10.77.0.2/24", "10.77.0.0/24");
    let err = client_err(&text);
    assert!(
        err.starts_with("c.toml:6: field `ipv4`: 10.77.0.0/24 is a network, not a host address"),
        "{err}"
    );
}

#[test]
fn a_missing_field_is_named() {
    let text = CLIENT.replace("endpoint = \"192.0.2.1:51820\"\n", "");
    let err = client_err(&text);
    assert!(err.contains("missing field `endpoint`"), "{err}");
    assert!(err.starts_with("c.toml:"), "{err}");
}

#[test]
fn rules_across_fields_name_their_line() {
    let text = CLIENT.replace(
        "interface = \"eth0\"",
        "interface = \"eth0\"\nsource = \"192.0.2.7\"",
    );
    let err = client_err(&text);
    assert!(err.starts_with("c.toml:7: field `source`: "), "{err}");

    let text = CLIENT.replace("interface = \"eth0\"", "source = \"2001:db8::7\"");
    let err = client_err(&text);
    assert!(err.contains("different IP families"), "{err}");

    // A server named, not addressed: the paths' sources fix its family,
    // so they must agree with each other.
    let named = CLIENT.replace("192.0.2.1:51820", "vpn.example.net:51820");
    let text = named.replace(
        "interface = \"eth0\"",
        "source = \"192.0.2.7\"\n[[path]]\nsource = \"2001:db8::7\"",
    );
    let err = client_err(&text);
    assert!(err.starts_with("c.toml:9: field `source`: "), "{err}");
    assert!(err.contains("different IP families"), "{err}");
    let text = named.replace("interface = \"eth0\"", "source = \"2001:db8::7\"");
    let client: ClientConfig = parse(Path::new("c.toml"), &text).unwrap();
    assert_eq!(client.server_family(), Some(true));
    let client: ClientConfig = parse(Path::new("c.toml"), &named).unwrap();
    assert_eq!(client.server_family(), None, "a name and interfaces only");

    let text = format!("{CLIENT}[[path]]\ninterface = \"eth0\"\n");
    let err = client_err(&text);
    assert!(
        err.starts_with("c.toml:9: field `name`: two paths are called \"eth0\""),
        "{err}"
    );

    let text = CLIENT.replace(
        "interface = \"eth0\"",
        "interface = \"eth0\"\ncost_weight = 1.5",
    );
    let err = client_err(&text);
    assert_eq!(err, "c.toml:9: field `cost_weight`: 1.5 is outside [0, 1]");

    let text = CLIENT.replace("[tunnel]\n", "[tunnel]\nmtu = 1000\n");
    let err = client_err(&text);
    assert!(
        err.starts_with("c.toml:6: field `mtu`: 1000 is below 1280"),
        "{err}"
    );

    let text = CLIENT.replace("ipv4 = \"10.77.0.2/24\"", "ipv4 = \"fd77::2/64\"");
    assert!(client_err(&text).starts_with("c.toml:6: field `ipv4`: not an ipv4 address"));
}

/// Values toml reads without complaint but the daemon could not use: it
/// would start and never work, or work somewhere unexpected.
#[test]
fn values_a_daemon_cannot_use_are_refused_with_their_line() {
    for (from, to, says) in [
        (
            "192.0.2.1:51820",
            "192.0.2.1:0",
            "c.toml:4: field `endpoint`: 192.0.2.1:0: port 0",
        ),
        (
            "192.0.2.1:51820",
            "0.0.0.0:51820",
            "c.toml:4: field `endpoint`: 0.0.0.0:51820: an unspecified address",
        ),
        (
            "192.0.2.1:51820",
            "[::]:51820",
            "c.toml:4: field `endpoint`: [::]:51820: an unspecified address",
        ),
        (
            "192.0.2.1:51820",
            "vpn.example.net:0",
            "c.toml:4: field `endpoint`: vpn.example.net:0: port 0",
        ),
        (
            "192.0.2.1:51820",
            "vpn!example.net:51820",
            "c.toml:4: field `endpoint`: \"vpn!example.net:51820\": \"vpn!example.net\" is neither an IP address nor a DNS name",
        ),
        (
            "[tunnel]\n",
            "[tunnel]\nmtu = 9000\n",
            "c.toml:6: field `mtu`: 9000 is above 1454",
        ),
        (
            "[tunnel]\n",
            "[tunnel]\nname = \"a/b\"\n",
            "c.toml:6: field `name`: \"a/b\" is not an interface name",
        ),
        (
            "[tunnel]\n",
            "[tunnel]\nname = \"a-name-of-16-chr\"\n",
            "c.toml:6: field `name`: \"a-name-of-16-chr\" is not 1 to 15 bytes long",
        ),
        (
            "[server]",
            "control_socket = \"\"\n[server]",
            "c.toml:2: field `control_socket`: \"\" names no file",
        ),
        (
            "[server]",
            "control_socket = \"/run/braid/\"\n[server]",
            "c.toml:2: field `control_socket`: \"/run/braid/\" names no file",
        ),
    ] {
        let text = CLIENT.replace(from, to);
        let err = client_err(&text);
        assert!(err.starts_with(says), "{to}: {err}");
    }
    let ok = CLIENT.replace(
        "[tunnel]\n",
        "[tunnel]\nname = \"bond-15-chars00\"\nmtu = 1450\n",
    );
    assert!(parse::<ClientConfig>(Path::new("c.toml"), &ok).is_ok());
    let text = SERVER.replace("[tunnel]", "control_socket = \"\"\n[tunnel]");
    let err = server_err(&text);
    assert!(
        err.starts_with("s.toml:3: field `control_socket`: \"\" names no file"),
        "{err}"
    );
}

const SERVER: &str = r#"private_key = "OvrnGSIVl2rdwtyoSSp8GyveXsq33GAVbFdk/UfjaCI="
listen = ["0.0.0.0:51820"]
[tunnel]
ipv4 = "10.77.0.1/24"
[[peer]]
public_key = "cD+3h/LfNRMz1ev65aN3biwobLWdo+N1ERuiq1ckGSk="
allowed = ["10.77.0.2/32"]
"#;

#[test]
fn the_tunnel_device_is_named_exactly_and_is_no_paths_interface() {
    let text = CLIENT.replace("[tunnel]\n", "[tunnel]\nname = \"eth0\"\n");
    let err = client_err(&text);
    assert!(
        err.starts_with("c.toml:8: field `interface`: \"eth0\" is the tunnel's own device"),
        "{err}"
    );
    let text = CLIENT.replace("[tunnel]\n", "[tunnel]\nname = \"braid%d\"\n");
    let err = client_err(&text);
    assert!(
        err.starts_with("c.toml:6: field `name`: \"braid%d\": '%' would let the kernel choose"),
        "{err}"
    );
}

#[test]
fn more_paths_than_a_session_carries_are_refused_at_the_first_too_many() {
    let mut text = CLIENT.to_owned();
    for i in 1..17 {
        text.push_str(&format!("[[path]]\ninterface = \"eth{i}\"\n"));
    }
    let err = client_err(&text);
    // The 17th [[path]] starts on line 39 (7 + 2 * 16).
    assert!(
        err.starts_with("c.toml:39: field `path`: 17 paths: a session carries at most 16"),
        "{err}"
    );
}

#[test]
fn a_listen_address_twice_or_on_port_0_or_an_empty_usage_file_is_refused_by_name() {
    let text = SERVER.replace(
        "listen = [\"0.0.0.0:51820\"]",
        "listen = [\"0.0.0.0:51820\", \"0.0.0.0:51820\"]",
    );
    let err = server_err(&text);
    assert!(
        err.starts_with("s.toml:2: field `listen`: 0.0.0.0:51820 is listed twice"),
        "{err}"
    );
    let text = SERVER.replace("0.0.0.0:51820", "0.0.0.0:0");
    let err = server_err(&text);
    assert!(
        err.starts_with("s.toml:2: field `listen`: 0.0.0.0:0: port 0"),
        "{err}"
    );
    // No port, or a name: the message shows what an address looks like.
    for addr in ["0.0.0.0", "localhost:51820"] {
        let err = server_err(&SERVER.replace("0.0.0.0:51820", addr));
        assert!(
            err.starts_with(&format!(
                "s.toml:2: field `listen`: invalid listen address \"{addr}\": expected IP:PORT"
            )),
            "{err}"
        );
    }
    let err = client_err(&format!("usage_file = \"\"\n{CLIENT}"));
    assert!(
        err.starts_with("c.toml:1: field `usage_file`: \"\" names no file"),
        "{err}"
    );
}

#[test]
fn a_tunnel_without_an_address_is_reported_at_its_table() {
    let text = CLIENT.replace("ipv4 = \"10.77.0.2/24\"\n", "");
    let err = client_err(&text);
    // [tunnel] is on line 5, not the file's first line.
    assert!(
        err.starts_with("c.toml:5: field `tunnel`: [tunnel] needs an ipv4 or an ipv6 address"),
        "{err}"
    );
}

#[test]
fn a_nat_uplink_that_is_no_interface_name_is_refused_at_its_line() {
    let text = SERVER.replace("[tunnel]", "[nat]\nuplink = \"\"\n[tunnel]");
    let err = server_err(&text);
    assert!(
        err.starts_with("s.toml:4: field `uplink`: \"\" is not 1 to 15 bytes long"),
        "{err}"
    );
    let text = SERVER.replace("[tunnel]", "[nat]\nuplink = \"a/b\"\n[tunnel]");
    let err = server_err(&text);
    assert!(
        err.starts_with("s.toml:4: field `uplink`: \"a/b\" is not an interface name"),
        "{err}"
    );
}

#[test]
fn a_server_without_a_peer_is_refused() {
    let text = SERVER[..SERVER.find("[[peer]]").unwrap()].to_owned();
    let err = server_err(&text);
    assert!(
        err.starts_with("s.toml:1: field `peer`: no [[peer]]: the server would accept no client"),
        "{err}"
    );
}

#[test]
fn peers_may_not_share_addresses_or_keys() {
    let ok: ServerConfig = parse(Path::new("s.toml"), SERVER).unwrap();
    assert_eq!(ok.peers.len(), 1);

    let text = format!(
        "{SERVER}[[peer]]\npublic_key = \"Y6DiCd5dVCDaRa7uH3KNOuEpi3ODFUpij6Kbrlhstew=\"\nallowed = [\"10.77.0.0/24\"]\n"
    );
    let err = server_err(&text);
    assert!(
        err.starts_with("s.toml:8: field `allowed`: 10.77.0.0/24 overlaps 10.77.0.2/32"),
        "{err}"
    );

    let text = format!(
        "{SERVER}[[peer]]\npublic_key = \"cD+3h/LfNRMz1ev65aN3biwobLWdo+N1ERuiq1ckGSk=\"\nallowed = [\"10.77.0.3/32\"]\n"
    );
    assert!(server_err(&text).contains("two peers have the same public key"));

    let text = SERVER.replace("listen = [\"0.0.0.0:51820\"]", "listen = []");
    assert_eq!(
        server_err(&text),
        "s.toml:2: field `listen`: at least one listen address is needed"
    );

    let text = SERVER.replace(
        "allowed = [\"10.77.0.2/32\"]",
        "allowed = [\"10.77.0.2/33\"]",
    );
    assert!(server_err(&text).starts_with("s.toml:7: field `allowed`: "));
}

#[test]
fn an_unreadable_file_is_named() {
    let err = load::<ServerConfig>(Path::new("/nonexistent/s.toml")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/s.toml: cannot read: "),
        "{err}"
    );
}

#[test]
fn a_bad_key_names_its_field() {
    let text = CLIENT.replace("Y6DiCd5dVCDaRa7uH3KNOuEpi3ODFUpij6Kbrlhstew=", "Y6DiCd5d");
    let err = client_err(&text);
    assert_eq!(
        err,
        "c.toml:3: field `public_key`: key has 6 bytes, expected 32 (a public key comes from `braid pubkey < KEYFILE`)"
    );
}

#[test]
fn the_usage_file_defaults_to_the_config_name_and_metrics_to_off() {
    let plain: ClientConfig = parse(Path::new("c.toml"), CLIENT).unwrap();
    assert_eq!(plain.metrics, None);
    assert_eq!(
        plain.usage_file(Path::new("/etc/braid/home.toml")),
        Path::new("/var/lib/braid/home.usage.json")
    );
    let text = format!("usage_file = \"/tmp/u.json\"\nmetrics = \"127.0.0.1:9851\"\n{CLIENT}");
    let set: ClientConfig = parse(Path::new("c.toml"), &text).unwrap();
    assert_eq!(
        set.usage_file(Path::new("c.toml")),
        Path::new("/tmp/u.json")
    );
    assert_eq!(set.metrics, Some("127.0.0.1:9851".parse().unwrap()));
    let err = client_err(&format!("metrics = \"localhost\"\n{CLIENT}"));
    assert!(err.starts_with("c.toml:1: field `metrics`"), "{err}");
}

/// Addresses no path can send from, and no server can be at.
#[test]
fn a_path_source_or_server_that_is_no_host_is_refused() {
    for (source, says) in [
        ("0.0.0.0", "0.0.0.0 is an unspecified address"),
        ("224.0.0.1", "224.0.0.1 is a multicast address"),
        (
            "255.255.255.255",
            "255.255.255.255 is the broadcast address",
        ),
        ("::", ":: is an unspecified address"),
        ("ff02::1", "ff02::1 is a multicast address"),
    ] {
        let text = CLIENT.replace("interface = \"eth0\"", &format!("source = \"{source}\""));
        let err = client_err(&text);
        let want = format!("c.toml:8: field `source`: {says}, not one a path can send from");
        assert_eq!(err, want);
    }
    let text = CLIENT.replace("192.0.2.1:51820", "255.255.255.255:51820");
    assert_eq!(
        client_err(&text),
        "c.toml:4: field `endpoint`: 255.255.255.255:51820: the broadcast address is no peer's address"
    );
    let text = CLIENT.replace("192.0.2.1:51820", "224.0.0.1:51820");
    assert_eq!(
        client_err(&text),
        "c.toml:4: field `endpoint`: 224.0.0.1:51820: a multicast address is no peer's address"
    );
}

#[test]
fn a_tunnel_address_must_be_a_host_address_of_its_own() {
    for (ipv4, says) in [
        ("127.0.0.2/8", "127.0.0.2/8: a loopback address cannot be a tunnel's address"),
        ("224.0.0.5/24", "224.0.0.5/24: a multicast address cannot be a tunnel's address"),
        ("255.255.255.255/32", "255.255.255.255/32: the broadcast address cannot be a tunnel's address"),
        ("169.254.0.2/16", "169.254.0.2/16: a link-local address cannot be a tunnel's address"),
        ("0.0.0.0/24", "0.0.0.0/24: an unspecified address cannot be a tunnel's address"),
        ("10.77.0.2/0", "10.77.0.2/0: a /0 prefix holds every address, not the tunnel's network (e.g. 10.77.0.2/24)"),
        ("0.0.0.0/0", "0.0.0.0/0: a /0 prefix holds every address, not the tunnel's network (e.g. 10.77.0.2/24)"),
        ("10.77.0.255/24", "10.77.0.255/24 is the broadcast address of 10.77.0.0/24, not a host address in it (e.g. 10.77.0.254/24)"),
        ("10.77.0.3/30", "10.77.0.3/30 is the broadcast address of 10.77.0.0/30, not a host address in it (e.g. 10.77.0.2/30)"),
        ("10.77.0.4/30", "10.77.0.4/30 is a network, not a host address in it (e.g. 10.77.0.5/30)"),
    ] {
        let err = client_err(&CLIENT.replace("10.77.0.2/24", ipv4));
        assert_eq!(err, format!("c.toml:6: field `ipv4`: {says}"));
    }
    for ipv6 in [
        "::1/128",
        "ff02::1/64",
        "::/64",
        "fe80::2/64",
        "febf::2/64",
        "fd77::2/0",
    ] {
        let text = CLIENT.replace("ipv4 = \"10.77.0.2/24\"", &format!("ipv6 = \"{ipv6}\""));
        let err = client_err(&text);
        assert!(
            err.starts_with(&format!("c.toml:6: field `ipv6`: {ipv6}: ")),
            "{err}"
        );
    }
    let text = CLIENT.replace("ipv4 = \"10.77.0.2/24\"", "ipv6 = \"fd77::/64\"");
    assert_eq!(
        client_err(&text),
        "c.toml:6: field `ipv6`: fd77::/64 is a network, not a host address in it (e.g. fd77::1/64)"
    );
    let err = server_err(&SERVER.replace("10.77.0.1/24", "127.0.0.1/8"));
    assert!(
        err.starts_with("s.toml:4: field `ipv4`: 127.0.0.1/8: a loopback"),
        "{err}"
    );
    // Point-to-point prefixes have no network or broadcast address
    // (RFC 3021, RFC 6164); a host next to the special ones is fine.
    for ipv4 in [
        "10.77.0.0/31",
        "10.77.0.1/31",
        "10.77.0.9/32",
        "10.77.0.254/24",
        "10.77.0.1/30",
    ] {
        let text = CLIENT.replace("10.77.0.2/24", ipv4);
        let got = parse::<ClientConfig>(Path::new("c.toml"), &text);
        assert!(got.is_ok(), "{ipv4}: {got:?}");
    }
    for ipv6 in ["fd77::/127", "fd77::ffff:ffff:ffff:ffff/64", "fec0::2/64"] {
        let text = CLIENT.replace("ipv4 = \"10.77.0.2/24\"", &format!("ipv6 = \"{ipv6}\""));
        let got = parse::<ClientConfig>(Path::new("c.toml"), &text);
        assert!(got.is_ok(), "{ipv6}: {got:?}");
    }
}

#[test]
fn names_are_refused_empty_long_or_with_control_characters() {
    let long = "a".repeat(65);
    for (name, says) in [
        (
            "",
            "an empty name: give one of 1 to 64 bytes, or leave name out",
        ),
        (
            "a\\nb",
            "\"a\\nb\" holds a control character (a newline, a tab, an escape)",
        ),
        (
            "\\u001b[31mred",
            "\"\\u{1b}[31mred\" holds a control character",
        ),
        ("del\\u007f", "\"del\\u{7f}\" holds a control character"),
        ("c1\\u0085", "\"c1\\u{85}\" holds a control character"),
        (long.as_str(), "is longer than 64 bytes"),
    ] {
        let path = CLIENT.replace(
            "interface = \"eth0\"",
            &format!("name = \"{name}\"\ninterface = \"eth0\""),
        );
        let err = client_err(&path);
        assert!(err.starts_with("c.toml:8: field `name`: "), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
        let peer = SERVER.replace("[[peer]]\n", &format!("[[peer]]\nname = \"{name}\"\n"));
        let err = server_err(&peer);
        assert!(err.starts_with("s.toml:6: field `name`: "), "{name}: {err}");
        assert!(err.contains(says), "{name}: {err}");
    }
    let longest = "a".repeat(64);
    for name in [longest.as_str(), "DSL line 2", "eth0.100", "Glasfaser-Büro"] {
        let text = CLIENT.replace(
            "interface = \"eth0\"",
            &format!("name = \"{name}\"\ninterface = \"eth0\""),
        );
        let client: ClientConfig = parse(Path::new("c.toml"), &text).unwrap();
        assert_eq!(client.paths[0].get_ref().display_name(), name);
    }
}

#[test]
fn peers_have_distinct_names_and_allowed_prefixes_without_the_server() {
    let named = SERVER.replace("[[peer]]\n", "[[peer]]\nname = \"home\"\n");
    let text = format!(
        "{named}[[peer]]\nname = \"home\"\npublic_key = \"Y6DiCd5dVCDaRa7uH3KNOuEpi3ODFUpij6Kbrlhstew=\"\nallowed = [\"10.77.0.3/32\"]\n"
    );
    assert_eq!(
        server_err(&text),
        "s.toml:9: field `name`: two peers are called \"home\": give each a distinct name"
    );

    let text = SERVER.replace("10.77.0.2/32", "10.77.0.1/32");
    assert_eq!(
        server_err(&text),
        "s.toml:5: field `allowed`: 10.77.0.1/32 holds the server's own tunnel address 10.77.0.1"
    );
    let text = SERVER
        .replace(
            "ipv4 = \"10.77.0.1/24\"",
            "ipv4 = \"10.77.0.1/24\"\nipv6 = \"fd77::1/64\"",
        )
        .replace("\"10.77.0.2/32\"", "\"10.77.0.2/32\", \"fd77::/64\"");
    assert_eq!(
        server_err(&text),
        "s.toml:6: field `allowed`: fd77::/64 holds the server's own tunnel address fd77::1"
    );

    let text = SERVER.replace("\"10.77.0.2/32\"", "\"10.77.0.2/32\", \"10.77.0.2/32\"");
    assert_eq!(
        server_err(&text),
        "s.toml:5: field `allowed`: 10.77.0.2/32 is listed twice"
    );

    let text = SERVER.replace("\"10.77.0.2/32\"", "\"10.77.0.2/32\", \"10.77.1.2/24\"");
    assert_eq!(
        server_err(&text),
        "s.toml:5: field `allowed`: 10.77.1.2/24 has bits set after the prefix: write \
         10.77.1.0/24 for the whole network or 10.77.1.2/32 for one address"
    );
}

#[test]
fn an_end_refuses_its_own_public_key_as_the_other_ends() {
    // The public keys of CLIENT's and SERVER's private keys.
    let text = CLIENT.replace(
        "Y6DiCd5dVCDaRa7uH3KNOuEpi3ODFUpij6Kbrlhstew=",
        "XahM6Ob4DUGQHJErWVjgqZgUpMg1/K9/rYdHCLWh2xw=",
    );
    assert_eq!(
        client_err(&text),
        "c.toml:3: field `public_key`: this is the client's own public key (of its private_key), not the server's"
    );
    let text = SERVER.replace(
        "cD+3h/LfNRMz1ev65aN3biwobLWdo+N1ERuiq1ckGSk=",
        "d/0SoKgLq9gO7m9r91UjVpHcwDCpzrFh6JNWyt0Y3ho=",
    );
    assert_eq!(
        server_err(&text),
        "s.toml:5: field `public_key`: this is the server's own public key (of its private_key), not a client's"
    );
}

#[test]
fn routed_prefixes_are_networks_listed_once_and_not_loopback() {
    for (prefixes, says) in [
        (
            "\"127.0.0.0/8\"",
            "127.0.0.0/8 is loopback: it never leaves the host",
        ),
        (
            "\"127.1.0.0/16\"",
            "127.1.0.0/16 is loopback: it never leaves the host",
        ),
        (
            "\"::1/128\"",
            "::1/128 is loopback: it never leaves the host",
        ),
        (
            "\"10.0.0.1/8\"",
            "10.0.0.1/8 has bits set after the prefix: did you mean 10.0.0.0/8?",
        ),
        (
            "\"2001:db8::1/32\"",
            "2001:db8::1/32 has bits set after the prefix: did you mean 2001:db8::/32?",
        ),
        (
            "\"10.0.0.0/8\", \"192.168.0.0/16\", \"10.0.0.0/8\"",
            "10.0.0.0/8 is listed twice",
        ),
    ] {
        let text = format!("{CLIENT}[routing]\nprefixes = [{prefixes}]\n");
        assert_eq!(
            client_err(&text),
            format!("c.toml:10: field `prefixes`: {says}")
        );
    }
    let text =
        format!("{CLIENT}[routing]\nprefixes = [\"0.0.0.0/1\", \"128.0.0.0/1\", \"::/0\"]\n");
    let client: ClientConfig = parse(Path::new("c.toml"), &text).unwrap();
    assert_eq!(client.routing.prefixes.len(), 3);
}

#[test]
fn an_all_zero_key_says_once_where_a_real_one_comes_from() {
    let zeros = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let text = CLIENT.replace("Y6DiCd5dVCDaRa7uH3KNOuEpi3ODFUpij6Kbrlhstew=", zeros);
    assert_eq!(
        client_err(&text),
        "c.toml:3: field `public_key`: key is all zeros: a placeholder, not a key (a public key comes from `braid pubkey < KEYFILE`)"
    );
    let text = CLIENT.replace("AlysX+WJqMQ8zAiklyPA2EhTBP+wt+Y7nxUuA1mb7Gs=", zeros);
    assert_eq!(
        client_err(&text),
        "c.toml:1: field `private_key`: key is all zeros: a placeholder, not a key (make one with `braid genkey`)"
    );
    let text = CLIENT.replace(
        "[tunnel]",
        &format!("preshared_key = \"{zeros}\"\n[tunnel]"),
    );
    assert_eq!(
        client_err(&text),
        "c.toml:5: field `preshared_key`: key is all zeros: a placeholder, not a key (make one with `braid genkey`)"
    );
}

#[test]
fn a_single_table_for_an_array_of_tables_is_named() {
    let text = CLIENT.replace("[[path]]", "[path]");
    let err = client_err(&text);
    assert!(err.starts_with("c.toml:7: field `path`: "), "{err}");
    assert!(err.contains("write [[path]] (an array of tables)"), "{err}");
    let text = SERVER.replace("[[peer]]", "[peer]");
    let err = server_err(&text);
    assert!(err.starts_with("s.toml:5: field `peer`: "), "{err}");
    assert!(err.contains("write [[peer]] (an array of tables)"), "{err}");
}

#[test]
fn a_file_too_large_or_not_utf8_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.toml");
    std::fs::write(&huge, vec![b'#'; (MAX_CONFIG_BYTES + 1) as usize]).unwrap();
    let err = load::<ClientConfig>(&huge).unwrap_err().to_string();
    assert!(
        err.ends_with("huge.toml: cannot read: larger than 1 MiB"),
        "{err}"
    );
    let latin1 = dir.path().join("latin1.toml");
    std::fs::write(&latin1, b"private_key = \"x\"\n# caf\xe9\n").unwrap();
    let err = load::<ClientConfig>(&latin1).unwrap_err().to_string();
    assert!(
        err.ends_with("latin1.toml: cannot read: line 2 is not valid UTF-8"),
        "{err}"
    );
    // /dev/zero never ends: only the bound stops the read.
    let err = load::<ClientConfig>(Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("larger than 1 MiB"), "{err}");
}
