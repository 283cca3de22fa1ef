//! `braid lab`: an emulated multi-path testbed in network namespaces.
//!
//! # Topology
//!
//! Three namespaces per lab `NAME`: `braid-NAME-client`, `braid-NAME-server`
//! and `braid-NAME-emu`. Path *i* is two veth pairs: the client's interface
//! (named after the path, or `NAME.path` for the names `lo`, `all` and
//! `default`, which the kernel keeps for itself) is paired with `c<i>` in the
//! emulator namespace, and
//! `s<i>` there with the server's interface of the same name. The emulator
//! relays Ethernet frames between `c<i>` and `s<i>`, so the two end stacks see
//! one plain link whose rate, delay and loss the emulator decides. The client
//! owns `198.18.<i>.2/24` on path *i* (RFC 2544 benchmarking range, never
//! routed anywhere), the server `198.18.<i>.1/24` on its side of each path and
//! its service address `198.19.0.1` on loopback, reachable over every path.
//! Neighbours are static so that no ARP crosses (or is lost on) a path.
//! A path with the SPEC `direct` ([`direct`]) is instead one plain veth pair
//! between the client's and the server's interface, with offloads on and no
//! emulator: the fastest link there is, to measure a data plane's own cost.
//! All of it is made with rtnetlink and ioctls (modules `rtnl`, `iface` and
//! `netns`), not by running `ip` or `ethtool`: no name a user gives is
//! ever parsed as a command's keyword, and no tool needs to be installed.
//!
//! With `up --nat`, each path ends at a NAT in the emulator namespace
//! instead of at the server: `s<i>` is paired with `n<i>` there, which
//! holds the client's gateway address `198.18.<i>.1` (and MAC), and a plain
//! veth pair `w<i>` (`198.18.<128+i>.2`) to the server's path interface
//! (`198.18.<128+i>.1`) carries the path on, unemulated. Traffic from the
//! path's client address is routed out of `w<i>` and masqueraded there
//! (nftables table `ip braid_lab_nat`, written with the `nft` program,
//! which `--nat` needs), so the server sees `198.18.<128+i>.2` and a port
//! of the NAT's choosing.
//!
//! # Why AF_PACKET on veth, not TUN
//!
//! A TUN relay puts a routing decision and a full IP receive/transmit in the
//! middle of every packet, and needs the emulator namespace to route; with
//! veth pairs the end stacks talk Ethernet to each other and the emulator only
//! moves frames. Each `c<i>`/`s<i>` gets a raw packet socket bound to it with
//! `PACKET_IGNORE_OUTGOING` (we never see our own injections) and
//! `PACKET_QDISC_BYPASS` (injection goes straight to the peer without a qdisc).
//! Frames are read with `recvmmsg` and written with `sendmmsg` in batches of
//! [`emulator::BATCH`], into buffers from a pool that is filled once, so the
//! steady state makes two system calls per batch and allocates nothing.
//! Segmentation and checksum offloads are switched off on the end interfaces
//! (the ethtool ioctl) so that every frame the emulator sees is one wire packet
//! with a complete checksum: rates then count real IP packets.
//!
//! # Timing
//!
//! One thread serves every path (two cores are shared with both TCP stacks
//! and the traffic generators; a second emulator thread would only compete).
//! Each direction's schedule is computed when a packet arrives ([`link`]), so
//! the loop only sleeps until the earliest delivery time with `ppoll`, which
//! takes a nanosecond timeout; timer slack is set to 1 ns and the thread runs
//! `SCHED_FIFO` so that a wake-up preempts the traffic generators instead of
//! waiting for a time slice. There is no busy polling: spinning would steal a
//! whole core from the stacks being measured. Arrivals are stamped with the
//! kernel's receive time (`SO_TIMESTAMPNS`), not the time the loop got to
//! them, so a late wake-up or a long batch does not add to the emulated
//! delay; only the lateness of sending remains, and the emulator counts it
//! (`late_over_500us`, `max_late_us` in `status`, and `behind_us`, the time
//! it ran more than 0.5 ms behind its schedule: on a virtual machine whose
//! host takes its CPUs away, a lab link may idle then, and for no longer).
//!
//! One cost stays with the emulator by design: injecting a frame into a veth
//! runs the receiving namespace's network stack for it in the emulator's
//! thread (softirq on the same CPU). That is what bounds lateness under heavy
//! load, and the benchmark reports it.

pub mod control;
mod daemon;
pub mod direct;
pub mod emulator;
pub mod error;
mod iface;
pub mod lab;
mod lateness;
pub mod layout;
pub mod link;
mod lock;
mod netns;
mod packet_socket;
pub mod root_guard;
pub mod rtnl;
pub mod state;
mod status_text;
mod topology;

pub use error::LabError;
pub use lab::{
    down, emulator_pid, exec_command, run_in, set, status, up, EmulatorProgram, LabStatus,
    PathReport, Side, UpOptions,
};
pub use status_text::render_status;
