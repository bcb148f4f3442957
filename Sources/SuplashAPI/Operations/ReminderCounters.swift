import Foundation

/// Smart reminders' counters for `/metrics` (`suplash_reminders_total{event=…}`, this
/// instance's since start): the action rate (`acted` / `sent`) is the product's headline number.
public final class ReminderCounters: @unchecked Sendable {
    /// What is counted.
    public enum Event: String, CaseIterable, Sendable {
        /// A reminder planned by the scheduler after it sent one (writes replan in their own transactions, uncounted).
        case scheduled
        /// A reminder handed to the push outbox.
        case sent
        /// `:drink` logged a glass (a repeat is not counted again).
        case acted
        /// `:snooze`.
        case snoozed
        /// `:dismiss`.
        case dismissed
        /// `:open`.
        case opened
        /// A sent reminder found ignored when the next one was sent.
        case ignored
        /// A reminder the scheduler gave up on unsent: a hydration one over 30 minutes late (an
        /// alert's lifetime), a bill's with no waking, non-quiet hour left on its day, a
        /// campaign's with no instant outside quiet hours left in its segment (docs/reminders.md,
        /// "Late alerts").
        case expired
    }

    private var counts: [Event: Int] = [:]
    private let lock = NSLock()

    public init() {}

    /// Adds `n` to `event`.
    public func add(_ event: Event, _ n: Int = 1) {
        guard n > 0 else { return }
        lock.withLock { counts[event, default: 0] += n }
    }

    /// Every event with its count (0 included), in declaration order.
    public var snapshot: [(Event, Int)] {
        let c = lock.withLock { counts }
        return Event.allCases.map { ($0, c[$0] ?? 0) }
    }

    /// Registers the family with `metrics`.
    public func register(with metrics: Metrics) {
        metrics.counters("suplash_reminders_total", help: "Reminder events on this instance since start.", label: "event") {
            [weak self] in self?.snapshot.map { ($0.0.rawValue, Double($0.1)) } ?? []
        }
    }
}
