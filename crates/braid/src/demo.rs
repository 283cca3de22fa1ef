//! `braid demo`: braid's main job on an embedded example, no network needed.
//! A DSL line and a lossy, jittery LTE link are bonded in the simulator and
//! compared with each line used alone.

use braid_sim::sim::Scenario;
use braid_sim::spec::PathSpec;

use crate::bench::simulate;
use crate::table::mbit;
use crate::Failure;

const DSL: &str = "20mbit,8ms,name=dsl";
const LTE: &str = "30mbit,25ms,jitter=4ms,loss=0.5%,name=lte";

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Simulated seconds per run
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Also draw the bonded run to a PNG
    #[arg(long, value_name = "FILE.png")]
    pub plot: Option<std::path::PathBuf>,
}

pub fn run(args: &DemoArgs) -> Result<(), Failure> {
    if args.seconds == 0 {
        return Err(Failure::Usage("--seconds must be positive".into()));
    }
    let parse = |s: &str| PathSpec::parse(s).map_err(|e| Failure::Runtime(e.to_string()));
    let (dsl, lte) = (parse(DSL)?, parse(LTE)?);
    println!("braid demo: an upload over {DSL} and {LTE}, offered more than both can carry.\n");
    println!(
        "{:<22} {:>14} {:>14} {:>9} {:>12}",
        "run", "goodput", "in order", "loss", "reorder p99"
    );
    let mut bonded = None;
    for (label, paths) in [
        ("dsl alone", vec![dsl.clone()]),
        ("lte alone", vec![lte.clone()]),
        ("braid: dsl + lte", vec![dsl, lte]),
    ] {
        let mut s = Scenario::new(paths);
        s.duration = std::time::Duration::from_secs(args.seconds);
        let r = simulate(&s)?;
        println!(
            "{:<22} {:>14} {:>14} {:>8.2}% {:>9.1} ms",
            label,
            mbit(r.goodput_bps),
            mbit(r.in_order_goodput_bps),
            r.loss_rate * 100.0,
            r.reorder_delay_ms.p99
        );
        bonded = Some(r);
    }
    let bonded = bonded.expect("three runs");
    println!("\nThe bonded run in detail:");
    print!("{}", crate::table::render(&bonded, "cbr:110%"));
    if let Some(file) = &args.plot {
        crate::plot::draw(&bonded, file).map_err(Failure::Runtime)?;
        println!("plot written to {}", file.display());
    }
    println!("\nTry your own paths: braid bench --help");
    Ok(())
}
