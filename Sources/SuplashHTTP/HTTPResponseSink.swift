import SuplashLogging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a responder sends the one response to one request.
///
/// `send(_:)` may be called from any thread, exactly once; later calls are ignored. The
/// response is written on the connection's loop, after the responses to earlier requests
/// on the same connection (pipelining order). If the client has gone meanwhile, the
/// response is dropped quietly.
public final class HTTPResponseSink: @unchecked Sendable {
    // Thread-safety: `storage` is guarded by the `busy` spin lock (see `withState`);
    // `connection` is only dereferenced on `eventLoop`'s thread (directly when `send` runs
    // there, otherwise via `execute`).

    /// The loop that owns the connection; use it for timers (long-poll deadlines).
    public let eventLoop: EventLoop
    private let connection: Connection
    let sequence: UInt64

    private struct State {
        var sent = false
        var closed = false
        /// The client half-closed (sent FIN) while this request was in flight.
        var peerFinished = false
        var closeHandlers: [@Sendable () -> Void] = []
    }

    private let busy = Atomic<Bool>(false)
    private var storage = State()

    /// Runs `body` with exclusive access to `storage`. A spin lock: critical sections are
    /// a few loads and stores, contention is rare (send vs. onClose vs. close), and it
    /// needs no allocation per request. Atomics are visible to ThreadSanitizer.
    private func withState<R>(_ body: (inout State) -> R) -> R {
        var spins = 0
        while !busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            spins += 1
            if spins > 64 { sched_yield() }
        }
        defer { busy.store(false, ordering: .releasing) }
        return body(&storage)
    }

    init(eventLoop: EventLoop, connection: Connection, sequence: UInt64) {
        self.eventLoop = eventLoop
        self.connection = connection
        self.sequence = sequence
    }

    /// Sends `response` (see `HTTPResponse` for the headers the engine sets). Only the
    /// first call counts.
    public func send(_ response: HTTPResponse) {
        send(response, log: nil)
    }

    /// Sends `response` and emits `record` (the request's access line, already formatted)
    /// on the connection's loop, once the requests before it on the connection are answered:
    /// the line goes to that loop's log buffer, so one connection's lines keep the order of
    /// its responses. Only the first call sends; a later call's line is emitted on the
    /// caller's thread.
    public func send(_ response: HTTPResponse, log record: LogRecord?) {
        let first = withState { state -> Bool in
            if state.sent { return false }
            state.sent = true
            state.closeHandlers = []
            return true
        }
        guard first else {
            record?.emit()
            return
        }
        if eventLoop.inEventLoop {
            connection.deliver(sequence: sequence, response: response, log: record)
        } else {
            // The loop has stopped (past the shutdown grace period), or stops before it runs the
            // delivery: the response is lost, its line is not.
            let queued = eventLoop.submit(
                { self.connection.deliver(sequence: self.sequence, response: response, log: record) },
                ifDiscarded: { record?.emit() })
            if !queued { record?.emit() }
        }
    }

    /// True once `send(_:)` has been called.
    public var isSent: Bool { withState { $0.sent } }

    /// True when the connection closed before a response was sent (the client is gone).
    public var isClosed: Bool { withState { $0.closed } }

    /// Registers `body` to run (on the loop thread) if the connection closes before the
    /// response is sent. Runs at once (on the caller's thread) if that already happened;
    /// never runs once `send(_:)` was called.
    ///
    /// Registering a handler marks the request as parked (a long poll): if the client has
    /// already half-closed its socket, the connection is then closed (soon, on the loop)
    /// and `body` runs, instead of the connection waiting for an answer nobody may read.
    public func onClose(_ body: @escaping @Sendable () -> Void) {
        enum Action { case none, runNow, abandonConnection }
        let action = withState { state -> Action in
            if state.sent { return .none }
            if state.closed { return .runNow }
            state.closeHandlers.append(body)
            return state.peerFinished ? .abandonConnection : .none
        }
        switch action {
        case .none:
            break
        case .runNow:
            body()
        case .abandonConnection:
            // Always deferred: the caller may be inside the connection's own call stack.
            eventLoop.execute { self.connection.parkedAfterEndOfInput(sequence: self.sequence) }
        }
    }

    /// Called on the loop when the client half-closed while this request was in flight.
    /// - Returns: true if an `onClose` handler is registered (the request is parked and
    ///   the connection should be closed rather than kept open for its answer).
    func peerFinishedSending() -> Bool {
        withState { state -> Bool in
            state.peerFinished = true
            return !state.sent && !state.closed && !state.closeHandlers.isEmpty
        }
    }

    /// Called on the loop when the connection closes or abandons this request.
    func connectionClosed() {
        let handlers = withState { state -> [@Sendable () -> Void] in
            if state.sent || state.closed { return [] }
            state.closed = true
            let handlers = state.closeHandlers
            state.closeHandlers = []
            return handlers
        }
        for handler in handlers { handler() }
    }
}
