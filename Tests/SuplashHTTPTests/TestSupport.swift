import Foundation
import SuplashHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking TCP client over raw POSIX sockets, for talking HTTP/1.1 byte by byte.
final class RawClient {
    let fd: Int32
    private var buffer: [UInt8] = []
    private(set) var sawEOF = false

    /// Connects to 127.0.0.1:`port`, from the loopback address `source` when given.
    init(port: Int, receiveTimeout: Double = 5, source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SyscallError(call: "socket", errno: errno) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let rc = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard rc == 0 else {
                let e = errno
                Glibc.close(fd)
                throw SyscallError(call: "bind", errno: e)
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw SyscallError(call: "connect", errno: e)
        }
        setReceiveTimeout(receiveTimeout)
    }

    deinit { Glibc.close(fd) }

    func setReceiveTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends everything (blocking); returns false if the peer reset the connection.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Reads once into the buffer; false on EOF, timeout or error.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 {
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
        if n == 0 { sawEOF = true }
        return false
    }

    /// Everything until the server closes (or the receive timeout passes).
    func readUntilClose() -> [UInt8] {
        while fill() {}
        let out = buffer
        buffer = []
        return out
    }

    /// True if the server closed the connection (EOF) before the timeout, with no data.
    func waitForClose() -> Bool {
        while fill() {}
        return sawEOF
    }

    /// Reads exactly `count` bytes, or nil.
    func readExactly(_ count: Int) -> [UInt8]? {
        while buffer.count < count {
            guard fill() else { return nil }
        }
        let out = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return out
    }

    /// Reads one response (Content-Length framed; HEAD answers pass `head: true`).
    func readResponse(head: Bool = false) -> TestResponse? {
        while true {
            if let end = headEnd() {
                let headText = String(decoding: buffer[0..<end], as: UTF8.self)
                var lines = headText.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst()
                let parts = statusLine.split(separator: " ", maxSplits: 2)
                guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
                var headers: [(String, String)] = []
                for line in lines where !line.isEmpty {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers.append(
                        (
                            String(line[..<colon]),
                            line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                        ))
                }
                var response = TestResponse(status: status, headers: headers, body: [])
                let length = (status == 100 || status == 204 || head) ? 0 : Int(response.header("content-length") ?? "0") ?? 0
                let total = end + 4 + length
                while buffer.count < total {
                    guard fill() else { return nil }
                }
                response.body = Array(buffer[(end + 4)..<total])
                buffer.removeFirst(total)
                return response
            }
            guard fill() else { return nil }
        }
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }
}

struct TestResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// A responder for the engine tests.
///
/// - `/hello` → 200 "hello" (answered on the loop thread)
/// - `/echo` → 200 with the request body, `X-Method`, `X-Remote`
/// - `/delay/<ms>` → 200 "<ms>" answered from a worker after `ms` milliseconds
/// - `/never` → never answered; the sink's `onClose` sets `closedNotified`
/// - `/park-later` → parked like `/never`, but `onClose` is registered from a worker
///   200 ms later (as the real long poll does)
/// - `/close` → 200 with `Connection: close` set by the responder
/// - `/big` (3 MiB, on the loop), `/big-later` (3 MiB, from a worker), `/export` (5 MiB file body)
/// - `/small` has a 10-byte body limit; everything else 1 MiB
final class TestResponder: HTTPResponder, @unchecked Sendable {
    // Sendable: `lock` guards `closedNotified` and `parked`; the pool is thread-safe.
    let pool = BlockingPool(threads: 4, queueCapacity: 64)
    private let lock = NSLock()
    private var closedNotifiedValue = 0
    private var bigAnsweredValue = 0
    private var parked: [HTTPResponseSink] = []

    var closedNotified: Int { lock.withLock { closedNotifiedValue } }
    /// How many `/big` requests reached the responder.
    var bigAnswered: Int { lock.withLock { bigAnsweredValue } }

    func bodyLimit(for head: HTTPRequestHead) -> Int {
        head.path == "/small" ? 10 : 1 << 20
    }

    func respond(to request: HTTPRequest, sink: HTTPResponseSink) {
        let path = request.path
        if path == "/hello" || path == "/small" {
            sink.send(HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: Array("hello".utf8)))
        } else if path == "/echo" {
            sink.send(
                HTTPResponse(
                    status: 200,
                    headers: HTTPHeaders([("X-Method", request.method), ("X-Remote", request.remoteAddress)]),
                    body: request.body))
        } else if path.hasPrefix("/delay/") {
            let ms = Int(path.dropFirst("/delay/".count)) ?? 0
            let accepted = pool.submit {
                usleep(UInt32(ms) * 1000)
                sink.send(HTTPResponse(status: 200, body: Array("\(ms)".utf8)))
            }
            if !accepted { sink.send(HTTPResponse(status: 503)) }
        } else if path == "/never" {
            sink.onClose { [self] in
                lock.withLock { closedNotifiedValue += 1 }
            }
            lock.withLock { parked.append(sink) }
        } else if path == "/park-later" {
            let accepted = pool.submit { [self] in
                usleep(200_000)
                sink.onClose { [self] in
                    lock.withLock { closedNotifiedValue += 1 }
                }
                lock.withLock { parked.append(sink) }
            }
            if !accepted { sink.send(HTTPResponse(status: 503)) }
        } else if path == "/big" {
            lock.withLock { bigAnsweredValue += 1 }
            // 3 MiB: more than the socket buffers take at once, so EPOLLOUT is exercised.
            var body = [UInt8](repeating: 0, count: 3 << 20)
            for i in body.indices { body[i] = UInt8(truncatingIfNeeded: i % 251) }
            sink.send(HTTPResponse(status: 200, body: body))
        } else if path == "/big-later" {
            // Like /big, answered from a worker (so all pipelined requests could start at once).
            let accepted = pool.submit { [self] in
                usleep(10_000)
                lock.withLock { bigAnsweredValue += 1 }
                sink.send(HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: 3 << 20)))
            }
            if !accepted { sink.send(HTTPResponse(status: 503)) }
        } else if path == "/export" {
            // A file-backed body (the engine streams it with sendfile).
            do {
                let content = [UInt8](repeating: 0x62, count: 5 << 20)
                let file = try HTTPFileBody.temporary(in: NSTemporaryDirectory()) { try $0.write(content) }
                sink.send(HTTPResponse(status: 200, bodyFile: file))
            } catch {
                sink.send(HTTPResponse(status: 500))
            }
        } else if path == "/twice" {
            sink.send(HTTPResponse(status: 200, body: Array("first".utf8)))
            sink.send(HTTPResponse(status: 500, body: Array("second".utf8)))
        } else if path == "/close" {
            sink.send(HTTPResponse(status: 200, headers: ["Connection": "close"], body: Array("bye".utf8)))
        } else {
            sink.send(HTTPResponse(status: 404, headers: ["Content-Type": "text/plain"], body: Array("nope".utf8)))
        }
    }

    deinit { pool.shutdown() }
}
