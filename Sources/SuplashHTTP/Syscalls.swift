import CEpoll

#if canImport(Glibc)
    import Glibc
#endif

/// A failed system call: the call's name and the `errno` it reported.
///
/// Produced by the engine's syscall wrappers, which retry `EINTR` themselves and report
/// `EAGAIN`/`EWOULDBLOCK` as "not now" rather than as an error. Log it with
/// `.errorType(...)` and `.number("errno", ...)`, never with a description.
public struct SyscallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C function that failed, e.g. `"epoll_ctl"`.
    public let call: String
    /// The `errno` value (for `getaddrinfo`, its `EAI_*` code).
    public let errno: Int32

    /// Creates an error for `call` with `errno`.
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// `"<call> failed: errno <n>"`.
    public var description: String { "\(call) failed: errno \(errno)" }
}

/// The outcome of a non-blocking I/O call.
enum IOResult: Equatable {
    /// The call moved this many bytes (0 on read = end of stream).
    case done(Int)
    /// `EAGAIN`: nothing now, wait for readiness.
    case wouldBlock
}

@inline(__always)
private func currentErrno() -> Int32 { Glibc.errno }

/// Thin, typed wrappers over the calls the engine makes. Each retries `EINTR`.
enum Sys {
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) throws(SyscallError) -> IOResult {
        while true {
            let n = Glibc.read(fd, buffer, count)
            if n >= 0 { return .done(n) }
            let e = currentErrno()
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
            throw SyscallError(call: "read", errno: e)
        }
    }

    static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SyscallError) -> IOResult {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .done(0) }
        while true {
            let n = cepoll_send(fd, base, buffer.count)
            if n >= 0 { return .done(n) }
            let e = currentErrno()
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
            throw SyscallError(call: "send", errno: e)
        }
    }

    static func send2(_ fd: Int32, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) throws(SyscallError) -> IOResult {
        while true {
            let n = cepoll_send2(fd, a.baseAddress, a.count, b.baseAddress, b.count)
            if n >= 0 { return .done(n) }
            let e = currentErrno()
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
            throw SyscallError(call: "sendmsg", errno: e)
        }
    }

    /// Sends up to `count` bytes of file `source` from `offset` to socket `fd` (`sendfile(2)`).
    static func sendFile(_ fd: Int32, from source: Int32, offset: Int, count: Int) throws(SyscallError) -> IOResult {
        var position = off_t(offset)
        while true {
            let n = Glibc.sendfile(fd, source, &position, count)
            if n >= 0 { return .done(n) }
            let e = currentErrno()
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
            throw SyscallError(call: "sendfile", errno: e)
        }
    }

    /// Accepts one connection; `nil` when none is waiting.
    static func accept(_ fd: Int32) throws(SyscallError) -> (fd: Int32, address: String)? {
        var text = [CChar](repeating: 0, count: 64)
        while true {
            let c = text.withUnsafeMutableBufferPointer { cepoll_accept4(fd, $0.baseAddress, $0.count) }
            if c >= 0 {
                let address = text.withUnsafeBufferPointer { buf -> String in
                    let bytes = UnsafeRawBufferPointer(buf)
                    let length = bytes.firstIndex(of: 0) ?? bytes.count
                    return String(decoding: bytes.prefix(length), as: UTF8.self)
                }
                return (c, address)
            }
            let e = currentErrno()
            if e == EINTR || e == ECONNABORTED { continue }
            if e == EAGAIN || e == EWOULDBLOCK { return nil }
            throw SyscallError(call: "accept4", errno: e)
        }
    }

    static func epollCreate() throws(SyscallError) -> Int32 {
        let fd = cepoll_create()
        if fd < 0 { throw SyscallError(call: "epoll_create1", errno: currentErrno()) }
        return fd
    }

    static func epollControl(_ epfd: Int32, _ op: Int32, _ fd: Int32, _ events: UInt32, _ token: UInt64) throws(SyscallError) {
        while true {
            if cepoll_ctl(epfd, op, fd, events, token) == 0 { return }
            let e = currentErrno()
            if e == EINTR { continue }
            throw SyscallError(call: "epoll_ctl", errno: e)
        }
    }

    /// Waits for events; an interrupted wait reports 0 events.
    static func epollWait(_ epfd: Int32, _ events: UnsafeMutablePointer<cepoll_event>, _ max: Int32, _ timeoutMs: Int32) throws(SyscallError) -> Int {
        let n = cepoll_wait(epfd, events, max, timeoutMs)
        if n >= 0 { return Int(n) }
        let e = currentErrno()
        if e == EINTR { return 0 }
        throw SyscallError(call: "epoll_wait", errno: e)
    }

    static func eventfd() throws(SyscallError) -> Int32 {
        let fd = cepoll_eventfd()
        if fd < 0 { throw SyscallError(call: "eventfd", errno: currentErrno()) }
        return fd
    }

    static func listener(host: String, port: Int, backlog: Int) throws(SyscallError) -> (fd: Int32, port: Int) {
        var bound: Int32 = 0
        var failed: Int32 = 0
        var gai: Int32 = 0
        let fd = cepoll_tcp_listener(host, Int32(truncatingIfNeeded: port), Int32(truncatingIfNeeded: backlog), &bound, &failed, &gai)
        if fd >= 0 { return (fd, Int(bound)) }
        let e = currentErrno()
        switch failed {
        case CEPOLL_FAILED_GETADDRINFO: throw SyscallError(call: "getaddrinfo", errno: gai)
        case CEPOLL_FAILED_SOCKET: throw SyscallError(call: "socket", errno: e)
        case CEPOLL_FAILED_SETSOCKOPT: throw SyscallError(call: "setsockopt", errno: e)
        case CEPOLL_FAILED_BIND: throw SyscallError(call: "bind", errno: e)
        case CEPOLL_FAILED_LISTEN: throw SyscallError(call: "listen", errno: e)
        default: throw SyscallError(call: "getsockname", errno: e)
        }
    }

    /// Closes `fd`. EINTR is not retried: on Linux the descriptor is released anyway.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}

/// A socket descriptor owned by exactly one value; `close()` releases it once.
struct SocketHandle {
    /// The descriptor, or -1 once closed.
    private(set) var fd: Int32

    init(_ fd: Int32) { self.fd = fd }

    var isOpen: Bool { fd >= 0 }

    /// Closes the descriptor; later calls do nothing.
    mutating func close() {
        guard fd >= 0 else { return }
        Sys.close(fd)
        fd = -1
    }
}

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC).
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Converts seconds to nanoseconds, clamping negatives to 0.
@inline(__always)
func nanoseconds(_ seconds: Double) -> UInt64 {
    seconds <= 0 ? 0 : UInt64(min(seconds, 1e9) * 1_000_000_000)
}
