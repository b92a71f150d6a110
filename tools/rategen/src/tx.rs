//! Sending frames on an interface: an AF_PACKET socket per thread that
//! bypasses the qdisc, fed batches with `sendmmsg`. The unsafe calls of
//! the tool live here, each with the reason it is sound.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A raw socket bound to one interface, for sending only.
pub struct Tx {
    fd: OwnedFd,
}

fn check(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(r)
}

/// The index of interface `name`.
///
/// # Errors
/// When there is no such interface.
pub fn ifindex(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name"))?;
    // SAFETY: a valid NUL-terminated string that outlives the call.
    #[allow(unsafe_code)]
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {name}"),
        ));
    }
    Ok(i)
}

impl Tx {
    /// Opens the socket on interface `ifindex`: protocol 0 (it receives
    /// nothing), `PACKET_QDISC_BYPASS` (frames go straight to the driver),
    /// a 4 MiB send buffer.
    ///
    /// # Errors
    /// Without CAP_NET_RAW, or when the kernel refuses an option.
    pub fn open(ifindex: u32) -> io::Result<Tx> {
        // SAFETY: plain system calls on arguments we own; the descriptor is
        // owned by the OwnedFd from here on.
        #[allow(unsafe_code)]
        let fd = unsafe {
            let raw = check(
                libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0),
                "socket(AF_PACKET)",
            )?;
            OwnedFd::from_raw_fd(raw)
        };
        let tx = Tx { fd };
        tx.set(
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            1,
            "PACKET_QDISC_BYPASS",
        )?;
        tx.set(libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20, "SO_SNDBUF")?;
        // SAFETY: a zeroed sockaddr_ll with family and index set is a valid
        // address of the size we pass.
        #[allow(unsafe_code)]
        unsafe {
            let mut sa: libc::sockaddr_ll = std::mem::zeroed();
            sa.sll_family = libc::AF_PACKET as u16;
            sa.sll_ifindex = ifindex as i32;
            check(
                libc::bind(
                    tx.fd.as_raw_fd(),
                    std::ptr::from_ref(&sa).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                ),
                "bind",
            )?;
        }
        Ok(tx)
    }

    fn set(&self, level: i32, name: i32, value: i32, what: &str) -> io::Result<()> {
        // SAFETY: the option value is an int that lives across the call.
        #[allow(unsafe_code)]
        unsafe {
            check(
                libc::setsockopt(
                    self.fd.as_raw_fd(),
                    level,
                    name,
                    std::ptr::from_ref(&value).cast(),
                    std::mem::size_of::<i32>() as libc::socklen_t,
                ),
                what,
            )?;
        }
        Ok(())
    }

    /// Sends `frames` with one `sendmmsg` (again for what it did not take);
    /// returns how many were sent before an error, and the error.
    pub fn send(&self, frames: &[&[u8]]) -> (usize, Option<io::Error>) {
        let mut iov: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            })
            .collect();
        // SAFETY: a zeroed mmsghdr is valid (no name, no control data).
        #[allow(unsafe_code)]
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .map(|v| {
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        let mut done = 0;
        while done < msgs.len() {
            let rest = &mut msgs[done..];
            // SAFETY: `rest` and the iovecs and frames it points at live
            // across the call; the kernel only reads the frames.
            #[allow(unsafe_code)]
            let n = unsafe {
                libc::sendmmsg(self.fd.as_raw_fd(), rest.as_mut_ptr(), rest.len() as u32, 0)
            };
            if n < 0 {
                return (done, Some(io::Error::last_os_error()));
            }
            done += n as usize;
        }
        (done, None)
    }
}

/// Timer slack of this thread, ns: sleeps end this close to their deadline.
pub fn set_timer_slack(ns: u64) {
    // SAFETY: prctl with an integer argument.
    #[allow(unsafe_code)]
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0);
    }
}

/// One `getppid()`: the system call whose tracepoint the soak's probe watches.
pub fn getppid() {
    // SAFETY: no arguments, no memory.
    #[allow(unsafe_code)]
    unsafe {
        libc::getppid();
    }
}

/// CPU seconds this process used so far (user + system).
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    #[allow(unsafe_code)]
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
