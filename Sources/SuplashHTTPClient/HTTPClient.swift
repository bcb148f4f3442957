import CCurl
import Foundation
import Synchronization

/// An outbound HTTP/2-over-TLS client on libcurl's multi interface (libcurl-multi(3)).
///
/// - One thread of its own runs every transfer (`curl_multi_perform` + `curl_multi_poll`);
///   callers never block and no event loop is involved. Completion callbacks run on that
///   thread and must return quickly; `send(_:)` wraps them in a continuation.
/// - One connection per origin: `CURLMOPT_MAX_HOST_CONNECTIONS` = 1,
///   `CURLMOPT_PIPELINING` = `CURLPIPE_MULTIPLEX` and `CURLOPT_PIPEWAIT` make concurrent
///   requests wait for, and share, the one HTTP/2 connection as streams (RFC 9113 §5).
/// - HTTP/2 is required: only `https` URLs are accepted, ALPN offers `h2`
///   (`CURL_HTTP_VERSION_2TLS`), a connection whose server does not select `h2` is refused in
///   the TLS handshake (a certificate-verification hook installed through
///   `CURLOPT_SSL_CTX_FUNCTION`, so nothing is sent over HTTP/1.1), and a transfer whose
///   `CURLINFO_HTTP_VERSION` is still older than HTTP/2 fails with
///   `HTTPClientError.http2NotNegotiated` instead of returning its response.
/// - A lost connection fails the transfers in flight on it with `.connectionLost`; libcurl
///   opens a new connection for the next request. Retrying is the caller's decision.
///
/// Sendable: every mutable piece is either confined to the client thread (`CurlEngine`) or
/// held in a `Mutex` (the mailbox).
public final class HTTPClient: Sendable {
    private let shared: SharedState

    /// Starts the client thread.
    /// - Throws: `HTTPClientError.curl(code:)` when libcurl cannot be initialised or the
    ///   multi handle cannot be created.
    public init(configuration: HTTPClientConfiguration = HTTPClientConfiguration()) throws(HTTPClientError) {
        try CurlGlobal.ensureInitialised()
        guard let multi = curl_multi_init() else { throw .curl(code: Int(CURLE_OUT_OF_MEMORY.rawValue)) }
        _ = suplash_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        _ = suplash_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1)
        _ = suplash_curl_multi_setopt_long(
            multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
            max(1, configuration.maxConcurrentStreams))
        shared = SharedState(multi: MultiHandle(pointer: multi))
        let engine = CurlEngine(shared: shared, configuration: configuration)
        let thread = Thread { engine.run() }
        thread.name = "suplash-http-client"
        thread.start()
    }

    deinit {
        shared.requestShutdown(gracePeriod: .zero)
    }

    /// Sends `request` and calls `completion` once, on the client thread, with the response or
    /// the failure. Returns the request's id (for `cancel(_:)`).
    ///
    /// Failures: `HTTPClientError` (`.invalidRequest` before sending, `.shutDown` when the
    /// client is closing, transport errors, `.http2NotNegotiated`). A 4xx/5xx status is a
    /// response, not a failure.
    @discardableResult
    public func send(
        _ request: HTTPClientRequest,
        completion: @escaping @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void
    ) -> UInt64 {
        let id = shared.nextID()
        shared.submit(Submission(id: id, request: request, completion: completion), cancelled: false)
        return id
    }

    /// Sends `request` and waits for its response. Cancelling the calling task cancels the
    /// exchange (its stream is reset) and throws `.cancelled`.
    /// - Returns: the response over HTTP/2 (any status).
    /// - Throws: `HTTPClientError`.
    public func send(_ request: HTTPClientRequest) async throws(HTTPClientError) -> HTTPClientResponse {
        let id = shared.nextID()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>) in
                shared.submit(
                    Submission(id: id, request: request, completion: { continuation.resume(returning: $0) }),
                    cancelled: Task.isCancelled)
            }
        } onCancel: {
            shared.cancel(id)
        }
        return try result.get()
    }

    /// Cancels the request with `id` if it has not completed: its completion gets `.cancelled`.
    public func cancel(_ id: UInt64) {
        shared.cancel(id)
    }

    /// Stops accepting requests (new ones fail with `.shutDown`), lets transfers in flight run
    /// for up to `gracePeriod`, fails the rest with `.shutDown`, closes every connection and
    /// waits for the client thread to end. Safe to call more than once.
    public func shutdown(gracePeriod: Duration = .zero) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            shared.requestShutdown(gracePeriod: gracePeriod, whenStopped: { continuation.resume() })
        }
    }
}

/// libcurl's process-wide initialisation, done once (`curl_global_init`, before any handle).
enum CurlGlobal {
    private static let status: CURLcode = suplash_curl_global_init()

    static func ensureInitialised() throws(HTTPClientError) {
        guard status == CURLE_OK else { throw .curl(code: Int(status.rawValue)) }
    }
}

/// The multi handle, shared only so that other threads can call `curl_multi_wakeup`, which
/// libcurl documents as thread-safe; every other use is on the client thread. The pointer is
/// freed by the client thread only after `SharedState.markStopped` (under the mailbox lock),
/// and wake-ups check that flag under the same lock.
struct MultiHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}

/// A request handed to the client thread.
struct Submission: Sendable {
    let id: UInt64
    let request: HTTPClientRequest
    let completion: @Sendable (Result<HTTPClientResponse, HTTPClientError>) -> Void
}

/// What other threads hand to the client thread, guarded by one mutex.
struct Mailbox: ~Copyable {
    var nextID: UInt64 = 1
    /// Submitted, not yet taken by the client thread.
    var queued: [Submission] = []
    /// Taken by the client thread and not completed.
    var inFlight: Set<UInt64> = []
    /// Cancellations of in-flight ids for the client thread to apply.
    var cancellations: [UInt64] = []
    /// Set by `requestShutdown`: the deadline for transfers in flight.
    var shutdownDeadline: ContinuousClock.Instant?
    /// Called once the thread has stopped.
    var stopWaiters: [@Sendable () -> Void] = []
    /// The thread has released the multi handle.
    var stopped = false
    /// The client thread is in (or about to enter) `curl_multi_poll`.
    var polling = false
    /// A `curl_multi_wakeup` was sent since the thread started polling (one is enough).
    var wakeSent = false

    /// Wakes the client thread if it sleeps and nobody woke it yet (a wake-up is a syscall;
    /// under load most submissions find the thread awake and skip it).
    mutating func wake(_ multi: MultiHandle) {
        guard polling, !wakeSent, !stopped else { return }
        wakeSent = true
        curl_multi_wakeup(multi.pointer)
    }
}

/// The state both sides share: the mailbox and the multi handle for wake-ups.
final class SharedState: Sendable {
    let multi: MultiHandle
    let mailbox = Mutex(Mailbox())

    init(multi: MultiHandle) {
        self.multi = multi
    }

    func nextID() -> UInt64 {
        mailbox.withLock { box in
            defer { box.nextID += 1 }
            return box.nextID
        }
    }

    /// Queues `submission`, or completes it at once when the client is closing or the
    /// caller's task was already cancelled.
    func submit(_ submission: Submission, cancelled: Bool) {
        let refusal: HTTPClientError? = mailbox.withLock { box in
            if box.shutdownDeadline != nil || box.stopped { return .shutDown }
            if cancelled { return .cancelled }
            box.queued.append(submission)
            box.wake(multi)
            return nil
        }
        if let refusal { submission.completion(.failure(refusal)) }
    }

    /// Cancels `id`: a queued submission completes here; an in-flight one is handed to the
    /// client thread; an unknown or finished id is ignored.
    func cancel(_ id: UInt64) {
        let removed: Submission? = mailbox.withLock { box in
            if let index = box.queued.firstIndex(where: { $0.id == id }) {
                return box.queued.remove(at: index)
            }
            if box.inFlight.contains(id) {
                box.cancellations.append(id)
                box.wake(multi)
            }
            return nil
        }
        removed?.completion(.failure(.cancelled))
    }

    /// Starts the shutdown (the earliest deadline wins) and registers `whenStopped`.
    func requestShutdown(gracePeriod: Duration, whenStopped: (@Sendable () -> Void)? = nil) {
        let runNow: Bool = mailbox.withLock { box in
            let deadline = ContinuousClock.now.advanced(by: max(.zero, gracePeriod))
            if let current = box.shutdownDeadline {
                box.shutdownDeadline = min(current, deadline)
            } else {
                box.shutdownDeadline = deadline
            }
            if box.stopped { return true }
            if let whenStopped { box.stopWaiters.append(whenStopped) }
            box.wake(multi)
            return false
        }
        if runNow { whenStopped?() }
    }
}
