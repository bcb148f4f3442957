/// What a write job sees: the writer connection and a way to act after the commit.
///
/// Valid only during the job's body, on the writer thread. Do not keep it.
public final class WriteContext {
    /// The writer connection. Inside `SQLiteDatabase.write` a transaction and the job's
    /// `SAVEPOINT` are already open: `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT` and `RELEASE`
    /// are refused there (`StorageError` kind `.misuse`, code `SQLITE_AUTH`).
    /// Inside `writeExclusive` no transaction is open and the job manages its own.
    public let connection: SQLiteConnection
    private(set) var callbacks: [@Sendable () -> Void] = []

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    /// Registers `body` to run on the writer thread after this job's work is durably
    /// committed (and after every job of the batch has been completed). Not run if the job
    /// throws or the commit fails. Callbacks run in registration order.
    ///
    /// Keep them quick and non-blocking — they delay the next batch. They are meant to post
    /// long-poll wake-ups to event loops. Calling `SQLiteDatabase.write` from one is refused
    /// (it would deadlock); `writeAsync` is allowed.
    public func afterCommit(_ body: @escaping @Sendable () -> Void) {
        callbacks.append(body)
    }
}
