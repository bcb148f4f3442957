import Foundation

/// Something parked on a user's changes: woken (once) when a commit touches the user.
protocol LongPollParked: AnyObject, Sendable {
    /// Called (on the writer thread, after the registry removed it) for a commit that touched
    /// the user. Must not block: hand work to the worker pool.
    func wake()
}

/// The long-poll registry (spec §5, design notes "Long poll"): waiting requests by user id.
///
/// A waiting request holds no thread: its `HTTPResponseSink` is kept here and its deadline
/// is a timer on the sink's event loop. The store reports committed user ids
/// (`wake(userID:)`, called after the durable commit); only that user's waiters are woken,
/// and each re-reads its page on the worker pool.
///
/// `@unchecked Sendable`: `waiters` is guarded by `lock`.
public final class LongPollRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var waiters: [String: [ObjectIdentifier: any LongPollParked]] = [:]

    public init() {}

    /// Parks `waiter` for `userID` (idempotent).
    func add(_ waiter: any LongPollParked, userID: String) {
        lock.withLock { waiters[userID, default: [:]][ObjectIdentifier(waiter)] = waiter }
    }

    /// Removes `waiter` (timeout, disconnect, answered).
    func remove(_ waiter: any LongPollParked, userID: String) {
        lock.withLock {
            guard var forUser = waiters[userID] else { return }
            forUser[ObjectIdentifier(waiter)] = nil
            waiters[userID] = forUser.isEmpty ? nil : forUser
        }
    }

    /// Wakes every request waiting on `userID`'s changes; called after a commit that touched
    /// that user (from the store's change notifier, on the writer thread).
    public func wake(userID: String) {
        let woken = lock.withLock { waiters.removeValue(forKey: userID) }
        guard let woken else { return }
        for waiter in woken.values { waiter.wake() }
    }

    /// Wakes every waiting request (each re-reads its page and answers only if it finds
    /// changes, else parks again): for when commits may have gone unheard, e.g. after the
    /// PostgreSQL listener reconnected.
    public func wakeAll() {
        let woken = lock.withLock { () -> [String: [ObjectIdentifier: any LongPollParked]] in
            defer { waiters.removeAll() }
            return waiters
        }
        for forUser in woken.values {
            for waiter in forUser.values { waiter.wake() }
        }
    }

    /// Requests waiting now (metrics, tests).
    public var waitingCount: Int { lock.withLock { waiters.values.reduce(0) { $0 + $1.count } } }
}
