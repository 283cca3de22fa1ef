//! `braid bench`: one simulated scenario, reported as a table or as JSON.

// The clap doc comments here are `--help` text, where brackets are usage
// syntax (`bulk[:SIZE]`, `[tunnel]`), not links.
#![allow(rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;
use std::time::Duration;

use braid_core::cc::CcKind;
use braid_core::reseq::ReseqMode;
use braid_sim::clock::ClockSpec;
use braid_sim::metrics::Report;
use braid_sim::session_run::SessionSpec;
use braid_sim::sim::{self, Mode, Scenario};
use braid_sim::spec::{parse_duration, PathSpec};
use braid_sim::traffic::TrafficSpec;

use crate::Failure;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
SPEC := RATE,DELAY[,jitter=DUR][,loss=PCT][,ge=P_GB:P_BG[:LOSS_BAD]][,queue=DUR|PKTS]
        [,blackout=START+LEN]...[,cost=X][,weight_throughput=W][,weight_cost=W][,name=NAME]
        [,role=primary|overflow|backup][,rate_limit=RATE]
      | trace=FILE,DELAY[,...]
  DELAY is one-way; RATE counts IP packet bytes, in bits per second as tc writes
  them: bit, kbit, mbit, gbit (500kbit, 8mbit, 1gbit). tc's bytes-per-second
  units (8mbps) and bare prefixes (8m, 8mb) are refused.
  DUR: us, ms, s or min (250us, 20ms, 1.5s, 2min). queue=PKTS: 1 to 100000.
  PCT: a percentage with its sign (loss=1%, ge=0.1%:30%); a bare 0.05 is refused.
  RATE, DELAY, jitter, loss, ge and queue may be UP/DOWN (client-to-server first).
  FILE is a mahimahi trace; the repository ships some in traces/.
  cost: relative price of the path (positive). weight_throughput/weight_cost:
  BATCP's per-path weights (0 to 1, summing to 1). role: overflow carries only
  what the primary paths cannot, backup only while no other path is up (as the
  tunnel's [[path]] role). rate_limit: never send faster than RATE on the path.

Scheduler parameters (NAME:key=value,...; each key at most once):
  earliest-arrival: cost_first=1 (costlier paths only for what cheaper ones
    cannot carry)
  batcp: cost_weight=X (0 to 1, default 0.5)
  lawrr: k (0.5), t_dwd (250ms), t_report (20ms), w_fixed (50),
    w_mobile_max (45), fixed=NAME (the first path), delay (5ms, or off)
  wrr: weights=W1/W2/... (one per path, default equal)

Limits: a run is refused (exit 2) when it is estimated at more than 100 million
events (datagrams offered, plus an arrival and an acknowledgement for each
packet the paths can carry: about a minute of CPU time), at more than 1 GiB
of packets in flight and in queues (rate x (round trip + jitter) + queue), or
with more than 16 --traffic sources (tcp:N runs up to 64 connections in one).

Examples (from the repository's root):
  braid bench --path 8mbit,5ms --path 2mbit,5ms --traffic cbr:10mbit
  braid bench --path 64mbit,6500us,name=dsl --path 60mbit,17ms,jitter=5ms,name=lte \\
              --scheduler lawrr:k=0.5,t_dwd=250ms --traffic ramp:63mbit:105mbit:15s:10s --duration 40s
  braid bench --path 10mbit,10ms --path trace=traces/TMobile-LTE-short.down,20ms --json")]
pub struct BenchArgs {
    /// A path to bond (repeat for each path)
    #[arg(
        long = "path",
        value_name = "SPEC",
        required = true,
        allow_hyphen_values = true
    )]
    pub paths: Vec<String>,
    /// datagram (the bonding tunnel, default) or reliable (a pTCP-style stream, client to server; needs --traffic bulk[:SIZE]; with --session, as braid send runs it)
    #[arg(long, default_value = "datagram")]
    pub mode: String,
    /// Datagram mode's scheduler: earliest-arrival (default), min-rtt, most-free-cwnd, redundant, rr, wrr, batcp, lawrr
    #[arg(long, value_name = "NAME[:key=value,...]", default_value = braid_core::sched::DEFAULT)]
    pub scheduler: String,
    /// Per-path congestion control: bbr (default) or ccid2; in reliable mode also one per path (bbr,ccid2)
    #[arg(long, default_value = "bbr")]
    pub cc: String,
    /// Offered traffic: cbr:RATE, cbr:PCT% (of ideal goodput), ramp:FROM:TO:RISE:HOLD,
    /// tcp[:cubic|reno[+hystart]][:N][@START] (N closed-loop bulk TCP connections; +hystart: Linux's HyStart delay detection ends slow start;
    /// @START: they open START into the run, and their rates count from then). Repeat to run
    /// several sources at once, each its own flow (tcp:cubic and cbr:64kbit, say); reliable mode: bulk[:SIZE] (SIZE in B,
    /// kB, MB, GB, KiB, MiB, GiB)
    #[arg(long, default_value = "cbr:110%")]
    pub traffic: Vec<String>,
    /// Simulated time
    #[arg(long, default_value = "30s", allow_hyphen_values = true)]
    pub duration: String,
    /// Seed of the simulated links' loss and jitter (same seed, same result)
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub seed: u64,
    /// Application payload bytes per datagram (datagram mode; reliable mode fills each packet)
    #[arg(long, allow_negative_numbers = true)]
    pub payload: Option<usize>,
    /// Deliver as packets arrive (no resequencing)
    #[arg(long)]
    pub unordered: bool,
    /// Re-send datagrams a path loses; the receiver waits for them (or a
    /// skip notice) instead of giving the number up at once. The tunnel
    /// does this by default ([tunnel] resend_losses): add it with --session
    /// to model one
    #[arg(long)]
    pub resend_losses: bool,
    /// Print one JSON object instead of the table
    #[arg(long)]
    pub json: bool,
    /// Receiver's clock minus the sender's at the start (signed: -3s, 250ms)
    #[arg(
        long,
        value_name = "DUR",
        default_value = "0",
        allow_hyphen_values = true
    )]
    pub clock_offset: String,
    /// Receiver's clock rate error in ppm, positive = fast (signed: 100, -100)
    #[arg(
        long,
        value_name = "PPM",
        default_value = "0",
        allow_hyphen_values = true
    )]
    pub clock_skew: String,
    /// At simulated time AT the receiver's clock jumps by DUR (signed: 30s+1s, 30s+-1s)
    #[arg(long, value_name = "AT+DUR")]
    pub clock_step: Option<String>,
    /// Run through the encrypted tunnel session (Noise handshake, AES-GCM on
    /// every packet, path probes): its 25 extra bytes per packet (27 with
    /// --mode reliable) and its path handling count in the figures
    #[arg(long)]
    pub session: bool,
    /// With --session: the traffic flows server to client (the server's
    /// session sends it, as in a download); paths are still given client
    /// side (RATE up/down), and the figures are of the data's direction
    #[arg(long, requires = "session")]
    pub download: bool,
    /// Draw per-path throughput and in-order goodput over time to a PNG
    #[arg(long, value_name = "FILE.png")]
    pub plot: Option<PathBuf>,
}

pub fn scenario(args: &BenchArgs) -> Result<Scenario, Failure> {
    let usage = |e: &dyn std::fmt::Display| Failure::Usage(e.to_string());
    let paths = args
        .paths
        .iter()
        .map(|p| PathSpec::parse(p).map_err(|e| Failure::Usage(format!("--path {p}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut names: Vec<String> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| p.name_or_default(i))
        .collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Failure::Usage(format!("two paths are named {:?}", w[0])));
    }
    let mut s = Scenario::new(paths);
    s.scheduler = args.scheduler.clone();
    s.mode = match args.mode.as_str() {
        "datagram" => Mode::Datagram,
        "reliable" => Mode::Reliable,
        other => {
            return Err(Failure::Usage(format!(
                "unknown --mode {other:?} (known: datagram, reliable)"
            )))
        }
    };
    let ccs = args
        .cc
        .split(',')
        .map(|name| {
            CcKind::parse(name).ok_or_else(|| {
                Failure::Usage(format!(
                    "unknown --cc {name:?} (known: {})",
                    CcKind::NAMES.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    s.cc = ccs[0];
    if ccs.len() > 1 {
        if s.mode != Mode::Reliable {
            return Err(Failure::Usage(format!(
                "--cc {}: one controller per path is for --mode reliable only",
                args.cc
            )));
        }
        s.path_cc = ccs;
    }
    if s.mode == Mode::Reliable {
        // The stream binds data to paths itself, in order.
        if args.scheduler != braid_core::sched::DEFAULT {
            return Err(Failure::Usage(format!(
                "--scheduler {}: reliable mode schedules by late binding; --scheduler is for \
                 datagram mode",
                args.scheduler
            )));
        }
        if args.unordered {
            return Err(Failure::Usage(
                "--unordered is for datagram mode (a reliable stream is delivered in order)".into(),
            ));
        }
        if args.resend_losses {
            return Err(Failure::Usage(
                "--resend-losses is for datagram mode (a reliable stream re-sends what it loses \
                 anyway)"
                    .into(),
            ));
        }
    }
    let mut traffic = args
        .traffic
        .iter()
        .map(|t| TrafficSpec::parse(t).map_err(|e| usage(&e)));
    s.traffic = traffic.next().expect("clap gives a default")?;
    s.more_traffic = traffic.collect::<Result<_, _>>()?;
    s.duration = parse_duration(&args.duration).map_err(|e| usage(&e))?;
    if s.duration < Duration::from_millis(100) {
        return Err(Failure::Usage("--duration must be at least 100ms".into()));
    }
    s.seed = args.seed;
    let step = args
        .clock_step
        .as_deref()
        .map(ClockSpec::parse_step)
        .transpose()
        .map_err(|e| usage(&e))?;
    if let Some(late) = step.filter(|st| st.at_s >= s.duration.as_secs_f64()) {
        return Err(Failure::Usage(format!(
            "--clock-step at {} s is not within the run (--duration {})",
            late.at_s, args.duration
        )));
    }
    s.clock = ClockSpec {
        offset_s: ClockSpec::parse_offset(&args.clock_offset).map_err(|e| usage(&e))?,
        skew_ppm: ClockSpec::parse_skew(&args.clock_skew).map_err(|e| usage(&e))?,
        step,
    };
    match (s.mode, args.payload) {
        (Mode::Reliable, Some(_)) => {
            return Err(Failure::Usage(
                "--payload is for datagram mode (reliable mode fills each packet)".into(),
            ))
        }
        (_, payload) => s.payload_bytes = payload.unwrap_or(1400),
    }
    s.session = args.session.then(|| SessionSpec {
        download: args.download,
        ..SessionSpec::default()
    });
    s.resend_losses = args.resend_losses;
    s.reseq_mode = if args.unordered {
        ReseqMode::PassThrough
    } else {
        ReseqMode::Ordered
    };
    Ok(s)
}

/// Runs a scenario, mapping a bad scheduler spec to a usage error.
pub fn simulate(s: &Scenario) -> Result<Report, Failure> {
    sim::run(s).map_err(|e| match e {
        sim::SimError::Stuck(_) => Failure::Runtime(e.to_string()),
        _ => Failure::Usage(e.to_string()),
    })
}

pub fn run(args: &BenchArgs) -> Result<(), Failure> {
    let s = scenario(args)?;
    if let Some(file) = &args.plot {
        crate::plot::check(file).map_err(Failure::Usage)?;
    }
    let report = simulate(&s)?;
    // Figures of a run whose sources never started would read as a clean
    // run of no traffic.
    if report.session.as_ref().is_some_and(|sess| !sess.connected) {
        return Err(Failure::Runtime(format!(
            "the tunnel never came up: no handshake completed in the {} s run (no path carried \
             one both ways), so no traffic ran",
            s.duration.as_secs_f64()
        )));
    }
    let text = if args.json {
        let json =
            serde_json::to_string_pretty(&report).map_err(|e| Failure::Runtime(e.to_string()))?;
        json + "\n"
    } else {
        crate::table::render(&report, &args.traffic.join(" + "))
    };
    // The figures first: a plot that cannot be written loses nothing else.
    crate::write_stdout(&text)?;
    if let Some(file) = &args.plot {
        crate::plot::draw(&report, file).map_err(Failure::Runtime)?;
    }
    Ok(())
}
