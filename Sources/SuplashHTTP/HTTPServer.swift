import SuplashLogging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Settings of an `HTTPServer`. Limits follow spec §7 "Limits"; times are seconds.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind: an IPv4/IPv6 literal or a host name (`"0.0.0.0"`, `"127.0.0.1"`, `"::"`).
    public var host: String
    /// TCP port; 0 picks a free one (read it from `HTTPServer.start()`).
    public var port: Int
    /// Number of event-loop threads, each with its own `SO_REUSEPORT` listener. Default: online cores.
    public var loopCount: Int
    /// Most open connections across all loops. At the cap the oldest idle keep-alive
    /// connections are closed to make room; when there are none, the listeners stop
    /// accepting until a connection closes (new clients wait in the kernel backlog).
    public var connectionCap: Int
    /// Most open connections from one peer address; a connection past it is closed at once
    /// (so one client cannot fill `connectionCap`). Addresses in `unlimitedAddresses` are exempt.
    public var maxConnectionsPerAddress: Int
    /// Peer addresses (as text, e.g. `"10.0.0.5"`) the per-address limit does not apply to:
    /// reverse proxies, whose clients all arrive from one address.
    public var unlimitedAddresses: Set<String>
    /// Longest request line in bytes (without CRLF) → 414.
    public var maxRequestLine: Int
    /// Largest header section in bytes → 431.
    public var maxHeaderSection: Int
    /// The body limit responders are expected to use for ordinary routes (bytes). The
    /// engine itself asks `HTTPResponder.bodyLimit(for:)`; this is for the responder's use.
    public var defaultBodyLimit: Int
    /// Time allowed for a request head, from its first byte (or from accept) → 408 + close.
    /// A body that makes no progress for `keepAliveIdleTimeout` is also answered 408.
    public var headerReadTimeout: Double
    /// Time an idle keep-alive connection is kept → silent close.
    public var keepAliveIdleTimeout: Double
    /// Most requests in flight (read but not yet answered) per connection; past it the
    /// engine stops reading from that connection until responses drain (back-pressure).
    public var maxPipelined: Int
    /// Bytes one connection may hold — request bytes read, answers not yet taken by the
    /// client (file bodies excepted) — before the engine stops reading from it and starts
    /// none of its further requests until it drains (spec §7 "Memory per connection").
    public var connectionMemoryBudget: Int
    /// After an error or `Connection: close` answer, how long unread input is drained
    /// (lingering close, so the answer is not lost to a TCP reset).
    public var lingerTimeout: Double
    /// Most bytes discarded while lingering before the socket is closed anyway.
    public var lingerMaxBytes: Int
    /// `listen(2)` backlog per listening socket.
    public var listenBacklog: Int
    /// Builds the answers to errors the engine handles itself (400, 408, 413, 414, 431,
    /// 501, 503). Called on the loop thread with the request id the response will carry.
    /// Default: `HTTPServerConfiguration.defaultErrorResponse` (RFC 9457 problem+json).
    public var errorResponse: @Sendable (HTTPEngineError, _ requestID: String) -> HTTPResponse

    /// Creates a configuration; every parameter has the spec's default.
    public init(
        host: String = "0.0.0.0",
        port: Int = 8080,
        loopCount: Int = HTTPServerConfiguration.onlineCores,
        connectionCap: Int = 16_384,
        maxConnectionsPerAddress: Int = 4096,
        unlimitedAddresses: Set<String> = [],
        maxRequestLine: Int = 8 * 1024,
        maxHeaderSection: Int = 16 * 1024,
        defaultBodyLimit: Int = 1 << 20,
        headerReadTimeout: Double = 10,
        keepAliveIdleTimeout: Double = 60,
        maxPipelined: Int = 16,
        connectionMemoryBudget: Int = 256 * 1024,
        lingerTimeout: Double = 5,
        lingerMaxBytes: Int = 16 << 20,
        listenBacklog: Int = 1024,
        errorResponse: @escaping @Sendable (HTTPEngineError, _ requestID: String) -> HTTPResponse = HTTPServerConfiguration.defaultErrorResponse
    ) {
        self.host = host
        self.port = port
        self.loopCount = loopCount
        self.connectionCap = connectionCap
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.unlimitedAddresses = unlimitedAddresses
        self.maxRequestLine = maxRequestLine
        self.maxHeaderSection = maxHeaderSection
        self.defaultBodyLimit = defaultBodyLimit
        self.headerReadTimeout = headerReadTimeout
        self.keepAliveIdleTimeout = keepAliveIdleTimeout
        self.maxPipelined = maxPipelined
        self.connectionMemoryBudget = connectionMemoryBudget
        self.lingerTimeout = lingerTimeout
        self.lingerMaxBytes = lingerMaxBytes
        self.listenBacklog = listenBacklog
        self.errorResponse = errorResponse
    }

    /// Online processor count (at least 1).
    public static var onlineCores: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// The default error answer: `application/problem+json` (RFC 9457)
    /// `{"type":"about:blank","title":"...","status":413,"code":"payload_too_large"}`;
    /// a 503 also carries `Retry-After: 1`.
    @Sendable
    public static func defaultErrorResponse(_ error: HTTPEngineError, requestID: String) -> HTTPResponse {
        // Built by hand: the engine has no JSON dependency and every piece is a fixed ASCII literal.
        let json = "{\"type\":\"about:blank\",\"title\":\"\(error.title)\",\"status\":\(error.status),\"code\":\"\(error.code)\"}"
        var headers: HTTPHeaders = ["Content-Type": "application/problem+json"]
        if error == .shuttingDown { headers.add(name: "Retry-After", value: "1") }
        return HTTPResponse(status: error.status, headers: headers, body: Array(json.utf8))
    }

    var parserLimits: HTTPParserLimits {
        HTTPParserLimits(maxRequestLine: maxRequestLine, maxHeaderSection: maxHeaderSection)
    }
}

/// State shared by all loops of one server.
final class ServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let responder: any HTTPResponder
    let logger: Logger
    let connectionCap: Int
    /// Limits and timeouts every connection's state machine starts with.
    let machineConfiguration: ConnectionStateMachine.Configuration
    private let open = Atomic<Int>(0)
    /// Open connections per limited peer address.
    private let perAddress = Locked<AddressLimiter>(AddressLimiter(limit: 1, exempt: []))
    let loops = Locked<[EventLoop]>([])
    private let drainLock = ConditionLock()
    private let drainedCount = Atomic<Int>(0)

    init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger) {
        self.configuration = configuration
        self.responder = responder
        self.logger = logger
        self.connectionCap = max(1, configuration.connectionCap)
        self.machineConfiguration = ConnectionStateMachine.Configuration(configuration)
        perAddress.withLock { $0 = AddressLimiter(limit: configuration.maxConnectionsPerAddress, exempt: configuration.unlimitedAddresses) }
    }

    /// Open connections across all loops.
    var openConnections: Int { open.load(ordering: .relaxed) }

    /// Takes a connection slot; false at the cap.
    func reserveConnection() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < connectionCap {
            let (exchanged, original) = open.compareExchange(
                expected: current, desired: current + 1,
                ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Counts a new connection from `address`; false when that address is at its limit.
    func admit(address: String) -> Bool {
        perAddress.withLock { $0.admit(address) }
    }

    /// Uncounts a closed connection from `address` (admitted before).
    func release(address: String) {
        perAddress.withLock { $0.release(address) }
    }

    /// At the cap: asks every loop but `except` to close its oldest idle keep-alive connections.
    func shedIdleConnections(except: EventLoop) {
        for loop in loops.withLock({ $0 }) where loop !== except {
            loop.execute { _ = loop.closeOldestIdleConnections(upTo: EventLoop.shedBatch) }
        }
    }

    /// Returns a slot; when that takes the count below the cap, paused listeners resume.
    func releaseConnection() {
        let old = open.wrappingSubtract(1, ordering: .acquiringAndReleasing).oldValue
        if old >= connectionCap {
            for loop in loops.withLock({ $0 }) {
                loop.execute { loop.resumeListener() }
            }
        }
    }

    func loopDrained() {
        drainLock.withLock {
            _ = drainedCount.wrappingAdd(1, ordering: .relaxed)
            drainLock.broadcast()
        }
    }

    /// Waits until `count` loops have drained or `deadline` (monotonic ns) passed.
    func waitForDrain(loops count: Int, deadline: UInt64) {
        drainLock.lock()
        defer { drainLock.unlock() }
        while drainedCount.load(ordering: .relaxed) < count {
            if !drainLock.wait(untilMonotonic: deadline) && monotonicNanoseconds() >= deadline { return }
        }
    }
}

/// Open connections per peer address, against a limit; exempt addresses are not counted.
struct AddressLimiter {
    let limit: Int
    let exempt: Set<String>
    private(set) var counts: [String: Int] = [:]

    init(limit: Int, exempt: Set<String>) {
        self.limit = max(1, limit)
        self.exempt = exempt
    }

    /// Counts one more connection from `address`; false (nothing counted) at the limit.
    mutating func admit(_ address: String) -> Bool {
        if exempt.contains(address) { return true }
        let current = counts[address, default: 0]
        guard current < limit else { return false }
        counts[address] = current + 1
        return true
    }

    /// Uncounts one connection from `address`.
    mutating func release(_ address: String) {
        if exempt.contains(address) { return }
        guard let current = counts[address] else { return }
        counts[address] = current > 1 ? current - 1 : nil
    }
}

/// The HTTP/1.1 server: `loopCount` event loops sharing one port through `SO_REUSEPORT`.
///
/// ```swift
/// let server = HTTPServer(configuration: config, responder: api, logger: logger)
/// let port = try server.start()
/// ...
/// server.shutdown(gracePeriod: 10)   // from a signal-handling thread
/// ```
public final class HTTPServer: Sendable {
    private enum Phase: Sendable {
        case idle
        case running(loops: [EventLoop], threads: [pthread_t])
        case stopped
    }

    private let context: ServerContext
    private let phase = Locked<Phase>(.idle)

    /// Creates a server; nothing is bound until `start()`.
    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, logger: Logger) {
        context = ServerContext(configuration: configuration, responder: responder, logger: logger)
    }

    /// The server's loops (empty before `start()` and after `shutdown`), e.g. to keep
    /// long-poll timers on them.
    public var eventLoops: [EventLoop] {
        context.loops.withLock { $0 }
    }

    /// Open connections across all loops (for metrics).
    public var openConnections: Int { context.openConnections }

    /// Binds one listening socket per loop on `host:port` and starts the loop threads.
    /// With port 0 the first socket picks a port and the others bind to it.
    /// - Returns: the bound TCP port.
    /// - Throws: `SyscallError` (`getaddrinfo`, `socket`, `bind`, `listen`, `epoll_create1`,
    ///   `pthread_create`, ...); `HTTPServerError.alreadyStarted` on a second call.
    public func start() throws -> Int {
        let configuration = context.configuration
        let alreadyStarted = phase.withLock { phase -> Bool in
            if case .idle = phase { return false }
            return true
        }
        if alreadyStarted { throw HTTPServerError.alreadyStarted }
        let count = max(1, configuration.loopCount)
        var loops: [EventLoop] = []
        var port = configuration.port
        do {
            for i in 0..<count {
                let bound = try Sys.listener(host: configuration.host, port: port, backlog: configuration.listenBacklog)
                if i == 0 { port = bound.port }
                do {
                    loops.append(try EventLoop(index: i, context: context, listenerFD: bound.fd))
                } catch {
                    Sys.close(bound.fd)
                    throw error
                }
            }
        } catch {
            for loop in loops { loop.stopUnstarted() }
            throw error
        }
        context.loops.withLock { $0 = loops }
        var threads: [pthread_t] = []
        for loop in loops {
            do {
                threads.append(try startThread { loop.run() })
            } catch {
                for started in loops { started.execute { started.stop() } }
                for thread in threads { joinThread(thread) }
                for unstarted in loops[threads.count...] { unstarted.stopUnstarted() }
                context.loops.withLock { $0 = [] }
                phase.withLock { $0 = .stopped }
                throw error
            }
        }
        phase.withLock { $0 = .running(loops: loops, threads: threads) }
        context.logger.info("http.listening", .number("port", port), .count("loops", count))
        return port
    }

    /// Graceful stop: closes the listeners, closes idle keep-alive connections, lets
    /// in-flight requests finish (new requests on open connections get 503 and close) for
    /// up to `gracePeriod` seconds, then closes everything and joins the loop threads.
    ///
    /// Callable from any thread, once (later calls return at once). Blocks until done,
    /// except when called on one of this server's loop threads: then the work moves to a
    /// helper thread and the call returns immediately.
    public func shutdown(gracePeriod: Double) {
        let taken = phase.withLock { phase -> (loops: [EventLoop], threads: [pthread_t])? in
            guard case .running(let loops, let threads) = phase else { return nil }
            phase = .stopped
            return (loops, threads)
        }
        guard let (loops, threads) = taken else { return }
        if loops.contains(where: { $0.inEventLoop }) {
            let context = self.context
            do {
                _ = try startThread { HTTPServer.drainAndStop(context: context, loops: loops, threads: threads, gracePeriod: gracePeriod) }
            } catch {
                // Cannot wait anywhere else: stop the loops without waiting.
                for loop in loops { loop.execute { loop.stop() } }
            }
            return
        }
        HTTPServer.drainAndStop(context: context, loops: loops, threads: threads, gracePeriod: gracePeriod)
    }

    private static func drainAndStop(context: ServerContext, loops: [EventLoop], threads: [pthread_t], gracePeriod: Double) {
        for loop in loops {
            loop.execute { loop.beginDrain() }
        }
        context.waitForDrain(loops: loops.count, deadline: monotonicNanoseconds() &+ nanoseconds(gracePeriod))
        for loop in loops {
            loop.execute { loop.stop() }
        }
        for thread in threads {
            joinThread(thread)
        }
        // Loops reference the context; dropping the list breaks the cycle so they can be freed.
        context.loops.withLock { $0 = [] }
        context.logger.info("http.stopped", .count("loops", loops.count))
    }
}

/// Misuse of `HTTPServer`.
public enum HTTPServerError: Error, Sendable {
    /// `start()` was called more than once.
    case alreadyStarted
}
