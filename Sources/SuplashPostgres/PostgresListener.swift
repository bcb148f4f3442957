import CPostgreSQL
import Foundation

/// One dedicated libpq connection that `LISTEN`s on a fixed set of channels, served by ONE
/// thread that waits on the connection's socket (`PQsocket`) with `poll(2)` and hands each
/// notification to a callback (PostgreSQL docs §55 "Asynchronous Notification" of libpq,
/// and the `LISTEN`/`NOTIFY` reference pages).
///
/// - Notifications are delivered by PostgreSQL only after the notifying transaction
///   committed, in commit order per sender, and duplicates (same channel and payload) within
///   one transaction are folded into one.
/// - When the connection fails (server restart, `pg_terminate_backend`, network), the thread
///   reconnects with exponential backoff (`minBackoff` doubling up to `maxBackoff`, with
///   jitter) and calls `onConnected(reconnect: true)` once it listens again: notifications
///   sent while it was away are lost, so the caller must resynchronise from the database
///   (re-read state, wake every waiter).
/// - A silent connection is checked every `pingInterval` seconds with an empty query, so a
///   half-open TCP connection is noticed as well.
/// - `stop()` wakes the thread through a pipe and waits for it to close the connection.
///
/// The callbacks run on the listener thread: they must be quick and must not block.
/// `@unchecked Sendable`: the thread state (`started`, `finished`, `stopRequested`, `wakePipe`) is guarded by `lock`;
/// the connection is touched by the listener thread only.
public final class PostgresListener: @unchecked Sendable {
    /// What happened to the listening connection (for logs and metrics).
    public enum ConnectionEvent: Sendable, Equatable {
        /// `LISTEN` is in effect; `reconnect` is false for the first connection only.
        case listening(reconnect: Bool)
        /// The connection failed or could not be made; the next attempt comes after
        /// `retryInSeconds`. `kind` is a `PostgresError.Kind` raw value (never server text).
        case lost(kind: String, retryInSeconds: Double)
    }

    private let url: String
    private let channels: [String]
    private let onNotification: @Sendable (_ channel: String, _ payload: String) -> Void
    private let onConnection: @Sendable (ConnectionEvent) -> Void
    private let minBackoff: Double
    private let maxBackoff: Double
    private let pingInterval: Double
    private let lock = NSCondition()
    // Guarded by `lock`.
    private var started = false
    private var finished = false
    private var stopRequested = false
    // The self-pipe that interrupts `poll` on `stop()`: [read end, write end]; written under `lock`.
    private var wakePipe: [Int32] = [-1, -1]

    /// - Parameters:
    ///   - url: libpq connection string or URL (as for `PostgresDatabase`).
    ///   - channels: channel names to `LISTEN` on: lower-case ASCII letters, digits and `_`,
    ///     starting with a letter (they are identifiers, written into the `LISTEN` statement).
    ///   - minBackoff: first reconnect delay, seconds (default 0.1).
    ///   - maxBackoff: largest reconnect delay, seconds (default 5).
    ///   - pingInterval: seconds of silence after which the connection is probed (default 15).
    ///   - onNotification: called for each notification (`channel`, `payload`), on the listener thread.
    ///   - onConnection: called when `LISTEN` is (again) in effect and when the connection is lost.
    /// - Throws: `PostgresError` `.invalidParameter` for a channel name that is not a plain identifier.
    public init(
        url: String, channels: [String], minBackoff: Double = 0.1, maxBackoff: Double = 5, pingInterval: Double = 15,
        onNotification: @escaping @Sendable (_ channel: String, _ payload: String) -> Void,
        onConnection: @escaping @Sendable (ConnectionEvent) -> Void = { _ in }
    ) throws {
        for channel in channels {
            let bytes = Array(channel.utf8)
            guard let first = bytes.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first), bytes.count <= 63,
                bytes.allSatisfy({
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
                })
            else { throw PostgresError(kind: .invalidParameter, message: "channel names are lower-case identifiers") }
        }
        self.url = url
        self.channels = channels
        self.minBackoff = max(0.01, minBackoff)
        self.maxBackoff = max(self.minBackoff, maxBackoff)
        self.pingInterval = max(0.1, pingInterval)
        self.onNotification = onNotification
        self.onConnection = onConnection
    }

    /// Starts the listener thread (once). Returns at once; the first connection is made on
    /// that thread and reported through `onConnection(.listening(reconnect: false))`.
    /// - Throws: `PostgresError` `.connectionFailure` when the wake-up pipe cannot be made.
    public func start() throws {
        try lock.withLock {
            guard !started else { return }
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else {
                throw PostgresError(kind: .connectionFailure, message: "pipe failed")
            }
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            }
            wakePipe = fds
            started = true
        }
        let thread = Thread { [self] in
            run()
            lock.withLock {
                finished = true
                lock.broadcast()
            }
        }
        thread.name = "suplash-pg-listen"
        thread.start()
    }

    /// Stops the thread and closes the connection; waits up to `timeoutSeconds` for it.
    /// Idempotent; a listener cannot be restarted.
    public func stop(timeoutSeconds: Double = 5) {
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        lock.withLock {
            stopRequested = true
            lock.broadcast()
            guard started else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(wakePipe[1], &byte, 1)
            while !finished {
                if !lock.wait(until: deadline) { break }
            }
            if finished {
                Glibc.close(wakePipe[0])
                Glibc.close(wakePipe[1])
                wakePipe = [-1, -1]
            }
        }
    }

    private var isStopping: Bool { lock.withLock { stopRequested } }

    // MARK: - Listener thread

    private func run() {
        var connectedOnce = false
        var backoff = minBackoff
        while !isStopping {
            do {
                let conn = try connect()
                defer { PQfinish(conn) }
                onConnection(.listening(reconnect: connectedOnce))
                connectedOnce = true
                backoff = minBackoff
                try serve(conn)
                return  // stop requested
            } catch {
                let kind = (error as? PostgresError)?.kind.rawValue ?? "unknown"
                let delay = backoff * Double.random(in: 0.5...1.0)
                onConnection(.lost(kind: kind, retryInSeconds: delay))
                if waitForStop(seconds: delay) { return }
                backoff = min(maxBackoff, backoff * 2)
            }
        }
    }

    /// Opens the connection and sends `LISTEN` for every channel.
    private func connect() throws -> OpaquePointer {
        guard let conn = PQconnectdb(url) else {
            throw PostgresError(kind: .connectionFailure, message: "PQconnectdb returned NULL")
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            PQfinish(conn)
            throw PostgresError(kind: .connectionFailure, message: "connect failed")
        }
        // Channel names were checked to be plain identifiers in `init`.
        let sql = "SET client_encoding = 'UTF8'; " + channels.map { "LISTEN \($0)" }.joined(separator: "; ")
        do {
            try Self.exec(conn, sql)
        } catch {
            PQfinish(conn)
            throw error
        }
        return conn
    }

    private static func exec(_ conn: OpaquePointer, _ sql: String) throws {
        guard let result = PQexec(conn, sql) else {
            throw PostgresError(kind: .connectionFailure, message: "PQexec returned NULL")
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            throw PostgresError(kind: PQstatus(conn) == CONNECTION_OK ? .other : .connectionFailure, message: "statement failed")
        }
    }

    /// Waits for input or a stop; returns normally only on stop, throws when the connection fails.
    private func serve(_ conn: OpaquePointer) throws {
        // Notifications that arrived with the LISTEN answers.
        drain(conn)
        let readFD = lock.withLock { wakePipe[0] }
        while true {
            let socket = PQsocket(conn)
            guard socket >= 0 else { throw PostgresError(kind: .connectionFailure, message: "no socket") }
            var fds = [
                pollfd(fd: socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: readFD, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, Int32(pingInterval * 1000))
            if isStopping { return }
            if ready < 0 {
                if errno == EINTR { continue }
                throw PostgresError(kind: .connectionFailure, message: "poll failed")
            }
            if ready == 0 {
                // Silence: probe the connection (notifications that come with the answer are kept).
                try Self.exec(conn, "")
                drain(conn)
                continue
            }
            if fds[0].revents != 0 {
                guard PQconsumeInput(conn) == 1 else {
                    throw PostgresError(kind: .connectionFailure, message: "PQconsumeInput failed")
                }
                drain(conn)
                guard PQstatus(conn) == CONNECTION_OK else {
                    throw PostgresError(kind: .connectionFailure, message: "connection lost")
                }
            }
        }
    }

    /// Hands every buffered notification to `onNotification`.
    private func drain(_ conn: OpaquePointer) {
        while let notify = PQnotifies(conn) {
            let channel = String(cString: notify.pointee.relname)
            let payload = String(cString: notify.pointee.extra)
            PQfreemem(notify)
            onNotification(channel, payload)
        }
    }

    /// Sleeps up to `seconds` unless stopped; true when a stop was requested.
    private func waitForStop(seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        return lock.withLock {
            while !stopRequested {
                if !lock.wait(until: deadline) { break }
            }
            return stopRequested
        }
    }
}
