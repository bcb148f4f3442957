#if canImport(Glibc)
    import Glibc
#endif

/// A fixed set of worker threads with a bounded job queue, for blocking work (SQLite,
/// Argon2id, JSON) that must stay off the event loops. Jobs run in submission order
/// (FIFO), each on some worker. Workers post results back with `HTTPResponseSink.send`.
public final class BlockingPool: @unchecked Sendable {
    // Thread-safety: `queue`, `head`, `count`, `stopping` and `threads` are guarded by `lock`.

    private let lock = ConditionLock()
    private var queue: [(@Sendable () -> Void)?]
    private var head = 0
    private var count = 0
    private var stopping = false
    private var threads: [pthread_t] = []

    /// Number of worker threads.
    public let threadCount: Int
    /// Most jobs waiting (not yet running) at once.
    public let queueCapacity: Int

    /// Starts `threads` workers (at least 1) with room for `queueCapacity` waiting jobs
    /// (at least 1). If the OS refuses to create a thread, the pool runs with the threads
    /// it got (at least one is required for jobs to run).
    public init(threads: Int, queueCapacity: Int) {
        threadCount = max(1, threads)
        self.queueCapacity = max(1, queueCapacity)
        queue = Array(repeating: nil, count: self.queueCapacity)
        var started: [pthread_t] = []
        for _ in 0..<threadCount {
            if let thread = try? startThread({ [self] in self.work() }) {
                started.append(thread)
            }
        }
        lock.withLock { self.threads = started }
    }

    /// Queues `job`. Returns false (and drops it) when the queue is full or the pool is
    /// shut down — answer 503 then.
    @discardableResult
    public func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        lock.lock()
        guard !stopping, count < queueCapacity else {
            lock.unlock()
            return false
        }
        queue[(head + count) % queueCapacity] = job
        count += 1
        lock.unlock()
        // Signalled after unlocking: a worker woken while the lock is still held would only
        // block again on the mutex (two more futex calls per request; workers re-check
        // `count` under the lock, so no wake-up is lost).
        lock.signal()
        return true
    }

    /// Jobs waiting to run (not counting running ones).
    public var waitingJobs: Int { lock.withLock { count } }

    /// Stops accepting jobs, lets the workers finish every queued job, and joins them.
    /// Must not be called from a worker. Later calls return at once.
    public func shutdown() {
        let toJoin: [pthread_t] = lock.withLock {
            stopping = true
            lock.broadcast()
            let t = threads
            threads = []
            return t
        }
        for thread in toJoin { joinThread(thread) }
    }

    private func work() {
        while true {
            lock.lock()
            while count == 0 && !stopping { lock.wait() }
            if count == 0 {
                lock.unlock()
                return
            }
            let job = queue[head]
            queue[head] = nil
            head = (head + 1) % queueCapacity
            count -= 1
            lock.unlock()
            job?()
        }
    }
}

/// Process resource limits.
public enum ResourceLimits {
    /// Raises the soft `RLIMIT_NOFILE` to the hard limit, so the connection cap can be
    /// reached. Returns the limits in force afterwards (`-1` for "unlimited"); on failure the
    /// limits are left as they were and returned unchanged.
    @discardableResult
    public static func raiseOpenFileLimit() -> (soft: Int, hard: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (-1, -1) }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 {
                limit = raised
            }
        }
        func value(_ v: rlim_t) -> Int { v == rlim_t.max ? -1 : Int(clamping: v) }
        return (value(limit.rlim_cur), value(limit.rlim_max))
    }
}
