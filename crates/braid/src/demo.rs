//! `braid demo`: braid's main job on an embedded example, no second line
//! needed. As root, the real tunnel in `braid lab` (see `demo_lab`);
//! otherwise, or with `--simulated`, a DSL line and a lossy, jittery LTE
//! link are bonded in the simulator and compared with each line used
//! alone, every figure explained below it.

use std::fmt::Write;

use braid_sim::metrics::Report;
use braid_sim::sim::Scenario;
use braid_sim::spec::{PathSpec, MAX_DURATION_S};

use crate::bench::simulate;
use crate::table::{loss_split, mbit, ms};
use crate::Failure;

const DSL: &str = "20mbit,8ms,name=dsl";
const LTE: &str = "30mbit,25ms,jitter=4ms,loss=0.5%,name=lte";

/// As root, braid's real tunnel in `braid lab`: a TCP upload over an
/// emulated DSL and LTE line, each alone and bonded, one cut midway.
/// Otherwise (or with --simulated) the same lines in the simulator.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Seconds per run: the bonded upload in the lab (default 12, from 6
    /// to 120), each simulated run otherwise (default 20)
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Run the simulated demo even as root
    #[arg(long)]
    pub simulated: bool,
    /// Also draw the bonded run to a PNG (simulated demo only)
    #[arg(long, value_name = "FILE.png")]
    pub plot: Option<std::path::PathBuf>,
}

const LEGEND: &str = "\
Each run offers 10 % more than its lines can carry, so some datagrams must go:
  ideal goodput      what the lines can carry of application data: their
                     capacity less 46 bytes of IP, UDP and braid headers per
                     1400-byte datagram
  goodput            application data delivered per second; in order: of it,
                     what was delivered in sequence
  dropped at sender  offered datagrams the sender discarded because the lines
                     were full (the overload, not a fault of a line)
  lost after sending datagrams sent on a line that never reached the
                     application: the LTE line's 0.5 % random loss, a line's
                     queue overflowing, or given up on by the receiver
  reorder p99        99th percentile of the time a datagram waited at the
                     receiver for earlier ones; a line alone reorders nothing,
                     so it waits only behind a lost datagram
  latency p50 / p99  from the application offering a datagram to its delivery,
                     including the wait in the sender's queue; the lines alone
                     are the baseline
";

pub fn run(args: &DemoArgs) -> Result<(), Failure> {
    let lab = if args.simulated || args.plot.is_some() {
        None
    } else {
        Some(crate::demo_lab::available())
    };
    let why_simulated = match lab {
        Some(Ok(())) => {
            let secs = args.seconds.unwrap_or(12);
            if !(6..=120).contains(&secs) {
                return Err(Failure::Usage(
                    "--seconds must be from 6 to 120 for the lab demo (or add --simulated)".into(),
                ));
            }
            return crate::demo_lab::run(secs);
        }
        Some(Err(why)) => format!(
            "({why}, so simulated lines; as root, braid demo runs braid's real tunnel in braid lab)\n"
        ),
        None => String::new(),
    };
    let seconds = args.seconds.unwrap_or(20);
    if seconds == 0 || seconds > MAX_DURATION_S {
        return Err(Failure::Usage(format!(
            "--seconds must be from 1 to {MAX_DURATION_S}"
        )));
    }
    if let Some(file) = &args.plot {
        crate::plot::check(file).map_err(Failure::Usage)?;
    }
    let parse = |s: &str| PathSpec::parse(s).map_err(|e| Failure::Runtime(e.to_string()));
    let (dsl, lte) = (parse(DSL)?, parse(LTE)?);
    // The bonded run is the largest: refuse before the table starts.
    let mut bonded_run = Scenario::new(vec![dsl.clone(), lte.clone()]);
    bonded_run.duration = std::time::Duration::from_secs(seconds);
    if braid_sim::budget::check(&bonded_run).is_err() {
        bonded_run.duration = std::time::Duration::from_secs(1);
        let per_second = braid_sim::budget::estimated_events(&bonded_run);
        return Err(Failure::Usage(format!(
            "--seconds {seconds} is more than the simulator's budget allows for these lines: \
             at most {}",
            (braid_sim::budget::MAX_EVENTS / per_second) as u64
        )));
    }
    crate::write_stdout(&format!(
        "braid demo: an upload over two simulated lines, {} s each run:\n{why_simulated}  \
         dsl  {DSL:<42} 20 Mbit/s, 8 ms one way, no loss\n  \
         lte  {LTE:<42} 30 Mbit/s, 25 ms one way + 0-4 ms jitter, 0.5 % random loss\n\n\
         {:<17} {:>13} {:>13} {:>13} {:>10} {:>10} {:>11} {:>17}\n",
        seconds,
        "run",
        "ideal goodput",
        "goodput",
        "in order",
        "dropped at",
        "lost after",
        "reorder p99",
        "latency p50 / p99",
    ))?;
    crate::write_stdout(&format!(
        "{:<17} {:>13} {:>13} {:>13} {:>10} {:>10}\n",
        "", "", "", "", "sender", "sending"
    ))?;
    let mut bonded = None;
    for (label, paths) in [
        ("dsl alone", vec![dsl.clone()]),
        ("lte alone", vec![lte.clone()]),
        ("braid: dsl + lte", vec![dsl, lte]),
    ] {
        let mut s = Scenario::new(paths);
        s.duration = std::time::Duration::from_secs(seconds);
        let r = simulate(&s)?;
        crate::write_stdout(&row(label, &r))?;
        bonded = Some(r);
    }
    let bonded = bonded.expect("three runs");
    let mut out = String::new();
    let _ = writeln!(out, "\n{LEGEND}\nThe bonded run in detail:");
    out += &crate::table::render(&bonded, "cbr:110%");
    crate::write_stdout(&out)?;
    if let Some(file) = &args.plot {
        crate::plot::draw(&bonded, file).map_err(Failure::Runtime)?;
        crate::write_stdout(&format!("plot written to {}\n", file.display()))?;
    }
    crate::write_stdout("\nTry your own paths: braid bench --help\n")
}

fn row(label: &str, r: &Report) -> String {
    let (at_sender, after_sending) = loss_split(r);
    let latency = r.latency_ms.as_ref();
    format!(
        "{:<17} {:>13} {:>13} {:>13} {:>9.2}% {:>9.2}% {:>11} {:>17}\n",
        label,
        mbit(r.ideal_goodput_bps),
        mbit(r.goodput_bps),
        mbit(r.in_order_goodput_bps),
        at_sender * 100.0,
        after_sending * 100.0,
        ms(r.reorder_delay_ms.as_ref(), |p| p.p99),
        format!(
            "{} / {}",
            ms(latency, |p| p.p50).trim_end_matches(" ms"),
            ms(latency, |p| p.p99)
        ),
    )
}
