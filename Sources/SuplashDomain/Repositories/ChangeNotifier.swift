import Foundation

/// Tells listeners which users a committed write touched (long-poll wake-ups, spec §5).
/// Both store adapters own one (`SQLiteStore.changeNotifier`, `PostgresStore.changeNotifier`)
/// and call `notify(userID:)` after each durable commit that changed a user's synced
/// documents; the API subscribes the long-poll registry.
///
/// `@unchecked Sendable`: `listeners` is guarded by `lock`.
public final class ChangeNotifier: @unchecked Sendable {
    private let lock = NSLock()
    private var listeners: [@Sendable (String) -> Void] = []

    /// An empty notifier.
    public init() {}

    /// Adds `listener`; it runs on the committing thread after each commit touching a user
    /// (its id), so it must be quick and must not block (post to event loops or a worker pool).
    public func subscribe(_ listener: @escaping @Sendable (String) -> Void) {
        lock.withLock { listeners.append(listener) }
    }

    /// Reports that a commit touched `userID`.
    public func notify(userID: String) {
        let current = lock.withLock { listeners }
        for listener in current { listener(userID) }
    }
}
