//! Sending and receiving on an AF_INET/AF_INET6 socket: TCP's byte stream and UDP's
//! datagrams with Linux's blocking rules, flags, pending errors and SIGPIPE, over the smoltcp
//! sockets `stack` holds. The rest of the socket's life (binding, listening, connecting,
//! readiness) is in the parent module.

#![forbid(unsafe_code)]

use super::*;

impl InetSocket {
    /// send/sendto/sendmsg/write by `cur`. `dest` is the address given, if any.
    pub fn send(
        &self,
        cur: &dyn Caller,
        data: &mut IovCursor,
        dest: Option<&[u8]>,
        nonblock: bool,
        nosignal: bool,
    ) -> SysResult<usize> {
        let r = if self.ty == SOCK_DGRAM {
            self.send_udp(data, dest, nonblock)
        } else {
            self.send_tcp(data, nonblock)
        };
        if r == Err(Errno::EPIPE) && !nosignal {
            cur.broken_pipe();
        }
        r
    }

    fn send_tcp(&self, data: &mut IovCursor, nonblock: bool) -> SysResult<usize> {
        let total = data.len();
        let mut sent = 0;
        loop {
            let room = stack::wait(|s| {
                let mut st = self.st.lock();
                self.settle(s, &mut st);
                if st.shutdown & SEND_SHUTDOWN != 0 {
                    return Some(Err(Errno::EPIPE));
                }
                let h = match st.kind {
                    Kind::Conn(h) if st.connected => h,
                    Kind::Conn(_) if st.connecting && !nonblock => return None,
                    Kind::Conn(_) if st.connecting => return Some(Err(Errno::EAGAIN)),
                    // sk_stream_wait_connect: never connected is EPIPE (and SIGPIPE).
                    _ => return Some(Err(Errno::EPIPE)),
                };
                if let Some(e) = st.err.take() {
                    return Some(Err(e));
                }
                let t = s.tcp(h);
                if !t.may_send() {
                    return Some(Err(Errno::EPIPE));
                }
                let room = t.send_capacity() - t.send_queue();
                if room > 0 {
                    Some(Ok((h, room)))
                } else if nonblock {
                    Some(Err(Errno::EAGAIN))
                } else {
                    None
                }
            });
            let (h, room) = match room.and_then(|r| r) {
                Ok(x) => x,
                Err(e) if sent > 0 && e != Errno::ERESTARTSYS => return Ok(sent),
                Err(Errno::ERESTARTSYS) if sent > 0 => return Ok(sent),
                Err(e) => return Err(e),
            };
            let n = room.min(total - sent);
            if n == 0 {
                return Ok(sent);
            }
            let mut buf = vec![0u8; n];
            if let Err(p) = data.copy_in(&mut buf) {
                return if sent > 0 { Ok(sent) } else { Err(p.err) };
            }
            sent += stack::with(|s| s.tcp(h).send_slice(&buf).unwrap_or(0));
            if sent >= total {
                return Ok(sent);
            }
        }
    }

    fn send_udp(
        &self,
        data: &mut IovCursor,
        dest: Option<&[u8]>,
        nonblock: bool,
    ) -> SysResult<usize> {
        let to = match dest {
            Some(a) => Some(loopback_for(self.parse(a)?)),
            None => None,
        };
        let len = data.len();
        if len > UDP_MAX {
            return Err(Errno::EMSGSIZE);
        }
        let mut buf = vec![0u8; len];
        data.copy_in(&mut buf).map_err(|p| p.err)?;
        let r = stack::wait(|s| {
            let mut st = self.st.lock();
            let Kind::Udp(h) = st.kind else {
                return Some(Err(Errno::EINVAL));
            };
            if st.shutdown & SEND_SHUTDOWN != 0 {
                return Some(Err(Errno::EPIPE));
            }
            // A port unreachable reported earlier fails this send (sock_alloc_send_pskb).
            if let Some(e) = st.err.take() {
                return Some(Err(e));
            }
            let Some(to) = to.or(st.peer) else {
                return Some(Err(Errno::EDESTADDRREQ));
            };
            if let Err(e) = self.autobind(s, &mut st) {
                return Some(Err(e));
            }
            match s.udp(h).send_slice(&buf, endpoint(&to)) {
                Ok(()) => {
                    // Nobody on lo takes it: lo answers with an ICMP port unreachable, which
                    // a connected socket takes as ECONNREFUSED (__udp4_lib_err).
                    if st.peer.is_some() && !s.udp_bound(&to) {
                        st.err = Some(Errno::ECONNREFUSED);
                    }
                    Some(Ok(len))
                }
                Err(udp::SendError::BufferFull) if nonblock => Some(Err(Errno::EAGAIN)),
                Err(udp::SendError::BufferFull) => None,
                Err(udp::SendError::Unaddressable) => Some(Err(Errno::EINVAL)),
            }
        })?;
        // Deliver it now.
        stack::with(|_| ());
        r
    }

    /// recv/recvfrom/recvmsg/read.
    pub fn recv(&self, data: &mut IovCursor, flags: u32, nonblock: bool) -> SysResult<Recv> {
        let peek = flags & MSG_PEEK != 0;
        let want = data.len();
        let data_len = want;
        if self.ty == SOCK_DGRAM {
            let (buf, full, from) = stack::wait(|s| {
                let mut st = self.st.lock();
                let Kind::Udp(h) = st.kind else {
                    return Some(Err(Errno::EINVAL));
                };
                if let Some(e) = st.err.take() {
                    return Some(Err(e));
                }
                let peer = st.peer.map(|p| endpoint(&p));
                let u = s.udp(h);
                loop {
                    let r = if peek {
                        u.peek().map(|(d, m)| (d, *m))
                    } else {
                        u.recv()
                    };
                    match r {
                        Ok((d, m)) => {
                            // A connected socket takes datagrams from its peer only.
                            if peer.is_some_and(|p| p != m.endpoint) {
                                if peek {
                                    let _ = u.recv();
                                }
                                continue;
                            }
                            let n = d.len().min(want);
                            return Some(Ok((d[..n].to_vec(), d.len(), m.endpoint)));
                        }
                        Err(_) if st.shutdown & RCV_SHUTDOWN != 0 => {
                            return Some(Ok((
                                Vec::new(),
                                0,
                                smoltcp::wire::IpEndpoint::new(
                                    smoltcp::wire::IpAddress::v4(0, 0, 0, 0),
                                    0,
                                ),
                            )));
                        }
                        Err(_) if nonblock => return Some(Err(Errno::EAGAIN)),
                        Err(_) => return None,
                    }
                }
            })??;
            data.copy_out(&buf).map_err(|p| p.err)?;
            return Ok(Recv {
                n: buf.len(),
                full,
                from: Some(inet_addr(&from, self.family)),
            });
        }
        // MSG_WAITALL: a blocking read goes on until it has all it asked for, the end of the
        // stream, an error or a signal.
        let waitall = flags & MSG_WAITALL != 0 && !peek && !nonblock;
        let mut total = 0;
        loop {
            let want = want - total;
            let r = stack::wait(|s| {
                let mut st = self.st.lock();
                self.settle(s, &mut st);
                let h = match st.kind {
                    Kind::Conn(h) if st.connected => h,
                    Kind::Conn(_) if st.connecting && !nonblock => return None,
                    Kind::Conn(_) if st.connecting => return Some(Err(Errno::EAGAIN)),
                    _ => return Some(Err(Errno::ENOTCONN)),
                };
                if st.shutdown & RCV_SHUTDOWN != 0 {
                    return Some(Ok(Vec::new()));
                }
                let t = s.tcp(h);
                if t.can_recv() {
                    let n = t.recv_queue().min(want);
                    let mut b = vec![0u8; n];
                    let got = if peek {
                        t.peek_slice(&mut b)
                    } else {
                        t.recv_slice(&mut b)
                    };
                    b.truncate(got.unwrap_or(0));
                    return Some(Ok(b));
                }
                if !t.may_recv() {
                    // After the peer's FIN a read ends there, leaving a later RST's error
                    // for the next send (tcp_recvmsg checks SOCK_DONE first).
                    if !st.peer_fin {
                        if let Some(e) = st.err.take() {
                            return Some(Err(e));
                        }
                    }
                    return Some(Ok(Vec::new()));
                }
                if want == 0 {
                    return Some(Ok(Vec::new()));
                }
                if nonblock {
                    Some(Err(Errno::EAGAIN))
                } else {
                    None
                }
            });
            let buf = match r.and_then(|r| r) {
                Ok(b) => b,
                Err(_) if total > 0 => break,
                Err(e) => return Err(e),
            };
            // The window reopens: let the sender know.
            stack::with(|_| ());
            if let Err(p) = data.copy_out(&buf) {
                if total + p.done > 0 {
                    total += p.done;
                    break;
                }
                return Err(p.err);
            }
            total += buf.len();
            if !waitall || buf.is_empty() || total >= data_len {
                break;
            }
        }
        Ok(Recv {
            n: total,
            full: total,
            from: None,
        })
    }

    /// Bytes ready to read (FIONREAD).
    pub fn inq(&self) -> usize {
        stack::peek(|s| match self.st.lock().kind {
            Kind::Conn(h) => s.tcp(h).recv_queue(),
            Kind::Udp(h) => s.udp(h).peek().map_or(0, |(d, _)| d.len()),
            _ => 0,
        })
    }
}
