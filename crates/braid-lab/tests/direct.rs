//! A `direct` path is one plain veth pair between client and server: it
//! carries traffic without passing the emulator (which keeps emulating the
//! lab's other paths), and `set` refuses to change it, as it refuses what
//! it cannot change on any path.

mod common;

use braid_lab::{LabError, Side};
use common::{have_root, ping_rtts, Lab};

#[test]
fn a_direct_path_bypasses_the_emulator_beside_an_emulated_one() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-direct", &["direct,name=veth", "10mbit,5ms"]);
    let server = lab.server_addr();
    let ping = |iface: &str| {
        let out = lab.run(
            Side::Client,
            &[
                "ping", "-n", "-c", "5", "-i", "0.2", "-W", "2", "-I", iface, &server,
            ],
        );
        assert!(
            out.status.success(),
            "ping over {iface}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        ping_rtts(&out)
    };
    let direct = ping("veth");
    let emulated = ping("p2");
    assert_eq!((direct.len(), emulated.len()), (5, 5));
    // The emulated path adds its 2 x 5 ms; the direct one nothing.
    assert!(emulated.iter().all(|rtt| *rtt >= 10.0), "{emulated:?}");
    assert!(direct.iter().all(|rtt| *rtt < 5.0), "{direct:?}");

    let status = braid_lab::status(&lab.name).unwrap();
    let (veth, p2) = (&status.paths[0], &status.paths[1]);
    assert!(status.emulator.is_some());
    assert!(veth.up.is_none() && veth.down.is_none());
    assert!(p2.up.as_ref().unwrap().counters.forwarded_packets >= 5);
    assert!(p2.down.as_ref().unwrap().counters.forwarded_packets >= 5);
    let text = braid_lab::render_status(&status);
    assert!(text.contains("a plain veth pair, no emulator"), "{text}");

    for (path, spec, says) in [
        ("veth", "10mbit,5ms", "no emulator settings"),
        ("p2", "direct", "cannot become direct"),
        ("p2", "10mbit,5ms,name=other", "cannot be renamed"),
        // The tunnel's settings, fixed at `up --tunnel`: never reported as
        // applied when nothing would change.
        ("p2", "10mbit,5ms,role=backup", "fixed when"),
        ("p2", "10mbit,5ms,rate_limit=5mbit", "fixed when"),
    ] {
        let err = braid_lab::set(&lab.name, path, spec).unwrap_err();
        assert!(matches!(err, LabError::SetRefused { .. }), "{path}: {err}");
        assert!(err.to_string().contains(says), "{path}: {err}");
        assert_eq!(err.exit_code(), 2);
    }
}
