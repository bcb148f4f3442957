import SuplashHTTP
import Synchronization

/// A response a route answers later (spec §5 long poll): the parked request keeps no
/// thread, only this object, its sink and a timer on the sink's event loop.
///
/// `send` may be called from any thread; only the first call counts, and that one is
/// logged (access log) and written. Errors go through the one mapping (`APIError`).
public final class DeferredResponse: Sendable {
    private let sink: HTTPResponseSink
    private let pool: BlockingPool
    private let complete: @Sendable (HTTPResponse) -> Void
    private let done = Atomic<Bool>(false)

    init(sink: HTTPResponseSink, pool: BlockingPool, complete: @escaping @Sendable (HTTPResponse) -> Void) {
        self.sink = sink
        self.pool = pool
        self.complete = complete
    }

    /// The loop owning the connection: use it for deadlines (`schedule(after:)`, `cancel`).
    public var eventLoop: EventLoop { sink.eventLoop }

    /// Runs `body` (on the loop thread) if the client disconnects before the answer.
    public func onClose(_ body: @escaping @Sendable () -> Void) { sink.onClose(body) }

    /// True once answered.
    public var isDone: Bool { done.load(ordering: .acquiring) }

    /// Answers; later calls are ignored. Returns whether this call answered.
    @discardableResult
    public func send(_ response: HTTPResponse) -> Bool {
        guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        complete(response)
        return true
    }

    /// Answers with the problem for `error`.
    @discardableResult
    public func fail(_ error: any Error) -> Bool {
        send(APIError(error).response())
    }

    /// Runs `body` on the worker pool (storage reads); a full pool answers 503.
    public func onWorker(_ body: @escaping @Sendable () -> Void) {
        if !pool.submit(body) { fail(APIError.unavailable("The server is overloaded; retry later.")) }
    }
}
