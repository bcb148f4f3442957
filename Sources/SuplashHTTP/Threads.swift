#if canImport(Glibc)
    import Glibc
#endif

/// Carries a thread's body across `pthread_create`.
private final class ThreadBody {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Starts a joinable OS thread running `body`.
/// - Throws: `SyscallError` (`pthread_create`) when the thread cannot be created.
func startThread(_ body: @escaping @Sendable () -> Void) throws(SyscallError) -> pthread_t {
    let box = Unmanaged.passRetained(ThreadBody(body))
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { argument in
            guard let argument else { return nil }
            let body = Unmanaged<ThreadBody>.fromOpaque(argument).takeRetainedValue()
            body.run()
            return nil
        }, box.toOpaque())
    if rc != 0 {
        box.release()
        throw SyscallError(call: "pthread_create", errno: rc)
    }
    return thread
}

/// Waits for `thread` to finish.
func joinThread(_ thread: pthread_t) {
    _ = pthread_join(thread, nil)
}

/// A mutex plus condition variable (pthread), for the few blocking waits the engine has
/// (worker pool queue, shutdown). Heap-allocated so the addresses never move.
final class ConditionLock: @unchecked Sendable {
    // Sendable because every access to the pthread objects goes through pthread calls,
    // which are themselves thread-safe; callers guard their own state with `lock()`.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for a signal; the lock must be held.
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a signal until `deadline` (monotonic ns); the lock must be held.
    /// - Returns: false when the deadline passed.
    func wait(untilMonotonic deadline: UInt64) -> Bool {
        var ts = timespec()
        ts.tv_sec = Int(deadline / 1_000_000_000)
        ts.tv_nsec = Int(deadline % 1_000_000_000)
        return pthread_cond_timedwait(condition, mutex, &ts) == 0
    }

    func signal() { pthread_cond_signal(condition) }
    func broadcast() { pthread_cond_broadcast(condition) }

    /// Runs `body` with the lock held.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A value guarded by a pthread mutex.
///
/// Used instead of `Synchronization.Mutex`, whose Linux implementation (raw futex) is
/// invisible to ThreadSanitizer; pthread mutexes keep TSan runs of the project clean.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // Sendable: `value` is only read or written with `mutex` held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
