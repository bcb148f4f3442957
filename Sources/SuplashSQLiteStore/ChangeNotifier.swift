import Foundation
import SuplashStorage

/// Tells listeners which users a committed write touched (long-poll wake-ups, spec §5).
///
/// Every write path of the store takes its change position through
/// `SQLiteStore.takeChangePosition(_:userID:)`, which registers a `WriteContext.afterCommit`
/// callback; after the durable commit the writer thread calls `notify(userID:)`.
///
/// `@unchecked Sendable`: `listeners` is guarded by `lock`.
public final class ChangeNotifier: @unchecked Sendable {
    private let lock = NSLock()
    private var listeners: [@Sendable (String) -> Void] = []

    public init() {}

    /// Adds `listener`; it runs on the writer thread after each commit touching a user, so it
    /// must be quick and must not block (post to event loops or a worker pool).
    public func subscribe(_ listener: @escaping @Sendable (String) -> Void) {
        lock.withLock { listeners.append(listener) }
    }

    /// Reports that a commit touched `userID`.
    public func notify(userID: String) {
        let current = lock.withLock { listeners }
        for listener in current { listener(userID) }
    }
}

extension SQLiteStore {
    /// Takes the next change position (see `nextChangePosition`) and arranges for the users'
    /// long polls to be woken after the commit. Every write path uses this.
    func takeChangePosition(_ ctx: WriteContext, userID: String) throws -> Int64 {
        let position = try SQLiteStore.nextChangePosition(ctx.connection)
        let notifier = changeNotifier
        ctx.afterCommit { notifier.notify(userID: userID) }
        return position
    }
}
