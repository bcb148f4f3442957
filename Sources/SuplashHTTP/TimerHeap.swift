/// Identifies a timer scheduled with `EventLoop.schedule(after:_:)`; pass it to `cancel(_:)`.
public struct TimerID: Hashable, Sendable {
    let raw: UInt64
}

/// A binary min-heap of deadlines (monotonic ns), FIFO among equal deadlines.
/// Cancellation is lazy: owners check on pop whether an entry is still current.
struct TimerHeap {
    enum Kind {
        /// A user timer, looked up in the loop's table (absent = cancelled).
        case user(UInt64)
        /// A connection's deadline; stale unless the connection still expects it.
        case connection(fd: Int32, serial: UInt64)
    }

    struct Entry {
        var deadline: UInt64
        var sequence: UInt64
        var kind: Kind

        @inline(__always)
        func precedes(_ other: Entry) -> Bool {
            deadline < other.deadline || (deadline == other.deadline && sequence < other.sequence)
        }
    }

    private var entries: [Entry] = []
    private var nextSequence: UInt64 = 0

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// The earliest deadline, if any.
    var nextDeadline: UInt64? { entries.first?.deadline }

    mutating func push(deadline: UInt64, kind: Kind) {
        nextSequence &+= 1
        entries.append(Entry(deadline: deadline, sequence: nextSequence, kind: kind))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry if its deadline is at or before `now`.
    mutating func popExpired(now: UInt64) -> Entry? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if entries.isEmpty { return first }
        entries[0] = last
        var parent = 0
        let n = entries.count
        while true {
            let left = 2 * parent + 1
            if left >= n { break }
            var smallest = left
            let right = left + 1
            if right < n && entries[right].precedes(entries[left]) { smallest = right }
            guard entries[smallest].precedes(entries[parent]) else { break }
            entries.swapAt(smallest, parent)
            parent = smallest
        }
        return first
    }

    mutating func removeAll() { entries.removeAll() }
}
