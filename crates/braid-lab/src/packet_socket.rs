//! A raw AF_PACKET socket bound to one interface, reading and writing whole
//! Ethernet frames in batches (`recvmmsg`/`sendmmsg`).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Socket buffers large enough to hold a burst at 1 Gbit/s for ~50 ms, so
/// that a late wake-up of the emulator does not drop frames in the kernel.
const SOCKET_BUFFER_BYTES: libc::c_int = 8 << 20;
/// Room for one SCM_TIMESTAMPNS control message, in u64 words.
const CONTROL_WORDS: usize = 8;

pub struct PacketSocket {
    fd: OwnedFd,
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn set_option(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` outlives the call and its size is passed along.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

impl PacketSocket {
    /// Opens a non-blocking socket that receives the frames arriving on
    /// `iface` (not the ones sent from it) and sends frames out of it.
    pub fn open(iface: &str) -> io::Result<PacketSocket> {
        let cname =
            CString::new(iface).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: plain FFI calls on owned values; the fd is wrapped at once.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::last_os_error());
        }
        // Protocol 0 receives nothing until `bind` names the interface, so no
        // frame of another interface slips in between.
        let raw = check(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        })?;
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let raw = fd.as_raw_fd();
        set_option(raw, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1)?;
        set_option(raw, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1)?;
        set_option(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            SOCKET_BUFFER_BYTES,
        )?;
        set_option(
            raw,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            SOCKET_BUFFER_BYTES,
        )?;
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = ifindex as i32;
        check(unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        Ok(PacketSocket { fd })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receives up to `bufs.len()` frames, frame `i` into `bufs[i]`, its
    /// length (untruncated: larger than the buffer if it did not fit) into
    /// `lens[i]` and the kernel's receive time (wall clock, since the Unix
    /// epoch) into `stamps[i]`. Returns how many arrived; 0 when none is
    /// waiting.
    pub fn recv_batch(
        &self,
        bufs: &mut [Vec<u8>],
        lens: &mut [usize],
        stamps: &mut [Option<Duration>],
    ) -> io::Result<usize> {
        let n = bufs
            .len()
            .min(lens.len())
            .min(stamps.len())
            .min(crate::emulator::BATCH);
        let mut iovs: [libc::iovec; crate::emulator::BATCH] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; crate::emulator::BATCH] = unsafe { std::mem::zeroed() };
        // u64 elements keep the control buffers aligned for cmsghdr.
        let mut controls = [[0u64; CONTROL_WORDS]; crate::emulator::BATCH];
        for i in 0..n {
            iovs[i] = libc::iovec {
                iov_base: bufs[i].as_mut_ptr().cast(),
                iov_len: bufs[i].len(),
            };
            msgs[i].msg_hdr.msg_iov = &mut iovs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = controls[i].as_mut_ptr().cast();
            msgs[i].msg_hdr.msg_controllen = std::mem::size_of_val(&controls[i]);
        }
        // SAFETY: every iovec points into a live buffer of the given length.
        let got = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock => Ok(0),
                _ => Err(err),
            };
        }
        let got = got as usize;
        for i in 0..got {
            lens[i] = msgs[i].msg_len as usize;
            stamps[i] = receive_time(&msgs[i].msg_hdr);
        }
        Ok(got)
    }

    /// Sends the frames; returns how many went out (0 when the socket buffer
    /// is full and the caller should retry later).
    pub fn send_batch(&self, frames: &[&[u8]]) -> io::Result<usize> {
        let n = frames.len().min(crate::emulator::BATCH);
        let mut iovs: [libc::iovec; crate::emulator::BATCH] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; crate::emulator::BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..n {
            iovs[i] = libc::iovec {
                iov_base: frames[i].as_ptr() as *mut libc::c_void,
                iov_len: frames[i].len(),
            };
            msgs[i].msg_hdr.msg_iov = &mut iovs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: the kernel only reads from the iovecs, which point into
        // frames borrowed for the duration of the call.
        let sent =
            unsafe { libc::sendmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr(), n as libc::c_uint, 0) };
        if sent < 0 {
            let err = io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => Ok(0),
                _ => Err(err),
            };
        }
        Ok(sent as usize)
    }
}

/// The SCM_TIMESTAMPNS time in a received message's control data.
fn receive_time(msg: &libc::msghdr) -> Option<Duration> {
    // SAFETY: the kernel filled msg_control with well-formed cmsghdrs of
    // msg_controllen bytes; CMSG_* walk them without leaving that range.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
                return Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    None
}
