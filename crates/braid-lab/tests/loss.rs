//! 10 % loss in each direction loses 1 - 0.9² = 19 % of pings, ± 2 %.

mod common;

use braid_lab::Side;
use common::{have_root, Lab};

#[test]
fn ten_percent_loss_each_way_loses_nineteen_percent_of_pings() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-loss", &["100mbit,1ms,loss=10%"]);
    let count = 5000;
    let out = lab.run(
        Side::Client,
        &[
            "ping",
            "-n",
            "-q",
            "-c",
            &count.to_string(),
            "-i",
            "0.002",
            "-W",
            "1",
            &lab.server_addr(),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let received: f64 = text
        .split(", ")
        .find_map(|part| part.strip_suffix(" received"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary in ping output: {text}"));
    let lost = 1.0 - received / f64::from(count);
    assert!(
        (lost - 0.19).abs() <= 0.02,
        "lost {:.2} % of {count} pings",
        lost * 100.0
    );
}
