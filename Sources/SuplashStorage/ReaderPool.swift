import Foundation

/// A fixed set of read-only connections handed out one caller at a time.
///
/// `@unchecked Sendable`: `available` and `isClosed` are guarded by `condition`; a checked-out
/// connection belongs to the thread that checked it out until it is checked back in.
final class ReaderPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var available: [SQLiteConnection]
    private let total: Int
    private var isClosed = false
    private var connectionsClosed = false

    init(_ connections: [SQLiteConnection]) {
        self.available = connections
        self.total = connections.count
    }

    var size: Int { total }

    /// Blocks while every reader is in use. - Throws: `.closed` once closed.
    func checkOut() throws -> SQLiteConnection {
        condition.lock()
        defer { condition.unlock() }
        while available.isEmpty && !isClosed { condition.wait() }
        guard !isClosed, let connection = available.popLast() else { throw StorageError.closed() }
        return connection
    }

    func checkIn(_ connection: SQLiteConnection) {
        if connection.isInTransaction {
            // The body left a read transaction open; end it so the snapshot does not pin the WAL.
            try? connection.execute("ROLLBACK")
        }
        condition.lock()
        available.append(connection)
        let closing = isClosed
        condition.unlock()
        // One connection came back: wake one waiter, after unlocking so that it does not
        // block on the mutex straight away. While closing, wake every `close()` caller.
        if closing { condition.broadcast() } else { condition.signal() }
    }

    /// Refuses new check-outs, waits for every reader to come back, closes them all.
    /// Idempotent; a concurrent second call returns once the connections are closed.
    func close() {
        condition.lock()
        isClosed = true
        condition.broadcast()
        while available.count < total && !connectionsClosed { condition.wait() }
        if connectionsClosed {
            condition.unlock()
            return
        }
        let connections = available
        available.removeAll()
        for connection in connections { connection.close() }
        connectionsClosed = true
        condition.broadcast()
        condition.unlock()
    }
}
