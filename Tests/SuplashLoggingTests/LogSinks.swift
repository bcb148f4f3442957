import Foundation
import SuplashLogging
import Synchronization

/// A sink that keeps what it is given; a `write` can be held inside the sink until
/// `release()` (a log file descriptor that stopped draining).
final class BlockingSink: LogSink {
    private struct State {
        var written: [UInt8] = []
        var writes = 0
        var holdNext = false
        var blocked = false
    }

    private let state = Mutex(State())
    private let entered = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)

    func write(_ bytes: UnsafeRawBufferPointer) {
        let hold = state.withLock { state -> Bool in
            state.writes += 1
            guard state.holdNext else { return false }
            state.holdNext = false
            state.blocked = true
            return true
        }
        if hold {
            entered.signal()
            gate.wait()
        }
        state.withLock { $0.written.append(contentsOf: bytes) }
    }

    /// The next `write` blocks inside the sink until `release()`.
    func holdNextWrite() { state.withLock { $0.holdNext = true } }

    /// Waits until a held `write` is blocked inside the sink.
    func waitUntilBlocked() { entered.wait() }

    /// Lets the held `write` finish.
    func release() {
        state.withLock { $0.blocked = false }
        gate.signal()
    }

    /// True while a held write has not been released.
    var isBlocked: Bool { state.withLock { $0.blocked } }

    /// Number of `write` calls so far.
    var writeCount: Int { state.withLock { $0.writes } }

    var text: String { String(decoding: state.withLock { $0.written }, as: UTF8.self) }
    var lines: [String] { text.split(separator: "\n").map(String.init) }
    func lines(event: String) -> [String] { lines.filter { $0.contains("\"event\":\"\(event)\"") } }
}
