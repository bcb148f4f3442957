import CEpoll
import SuplashLogging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One event-loop thread: its own epoll set, its own `SO_REUSEPORT` listening socket, the
/// connections it accepted, a task queue with an `eventfd` wake-up, and a timer heap.
///
/// Loops never block. Everything a connection does happens on its loop's thread; other
/// threads reach a loop only through `execute(_:)`, `schedule(after:_:)` and `cancel(_:)`.
public final class EventLoop: @unchecked Sendable {
    // Thread-safety: `taskQueue` (pthread lock), `threadID`, `timerCounter`, `stopped` (Atomics) and
    // the immutable `let`s are safe from any thread. Every other stored property is confined
    // to this loop's own thread: it is touched only from `run()` and from the events, tasks
    // and timers `run()` dispatches.

    /// This loop's position in `HTTPServer.eventLoops` (0-based).
    public let index: Int

    let context: ServerContext
    private let epollFD: Int32
    private let wakeFD: Int32
    private let taskQueue = Locked<[QueuedTask]>([])
    private let threadID = Atomic<UInt>(0)
    private let timerCounter = Atomic<UInt64>(0)
    private let stopped = Atomic<Bool>(false)

    // MARK: Loop-confined state
    private var spareTasks: [QueuedTask] = []
    private var timers = TimerHeap()
    private var userTimers: [UInt64: @Sendable () -> Void] = [:]
    private var connections: [Connection?] = []
    private(set) var openConnections = 0
    /// Connections in lingering close: answered, only waiting for the peer's EOF.
    private var lingeringConnections = 0
    private var nextSerial: UInt64 = 0
    /// Connections closed at accept for the per-address limit (for the warning log).
    private var rejectedByAddressLimit = 0
    private var listener: SocketHandle
    private var listenerArmed = false
    private var listenerPaused = false
    private var stopRequested = false
    private(set) var isDraining = false
    private var reportedDrained = false
    private let events: UnsafeMutablePointer<cepoll_event>
    private let eventCapacity: Int32 = 256
    /// Scratch buffer every connection on this loop reads into.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Monotonic ns, refreshed after every `epoll_wait`.
    private(set) var now: UInt64 = 0
    private var dateSecond = -1
    private var dateLineBytes: [UInt8] = []
    private var randomState: UInt64

    private static let wakeToken = UInt64.max
    private static let listenerToken = UInt64.max - 1

    init(index: Int, context: ServerContext, listenerFD: Int32) throws(SyscallError) {
        self.index = index
        self.context = context
        self.listener = SocketHandle(listenerFD)
        let epfd = try Sys.epollCreate()
        let wake: Int32
        do {
            wake = try Sys.eventfd()
        } catch {
            Sys.close(epfd)
            throw error
        }
        do {
            try Sys.epollControl(epfd, CEPOLL_CTL_ADD, wake, CEPOLL_IN, EventLoop.wakeToken)
            try Sys.epollControl(epfd, CEPOLL_CTL_ADD, listenerFD, CEPOLL_IN, EventLoop.listenerToken)
        } catch {
            Sys.close(wake)
            Sys.close(epfd)
            throw error
        }
        epollFD = epfd
        wakeFD = wake
        listenerArmed = true
        events = .allocate(capacity: Int(eventCapacity))
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        var generator = SystemRandomNumberGenerator()
        randomState = generator.next()
    }

    deinit {
        // The wake-up eventfd lives as long as the loop object, so a late `execute` from a
        // worker never writes to a recycled descriptor.
        Sys.close(wakeFD)
        events.deallocate()
        readBuffer.deallocate()
    }

    // MARK: - Public API (any thread)

    /// True when called on this loop's thread.
    public var inEventLoop: Bool {
        threadID.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Runs `task` on this loop's thread, soon, in submission order. Wakes the loop through
    /// its eventfd. After the server has shut down, tasks are discarded.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        _ = submit(task)
    }

    /// `execute(_:)` that tells whether the task was queued (false once the loop has stopped).
    /// A queued task that the loop stops before running is not run: `ifDiscarded` runs instead,
    /// on the loop's thread as it tears down (a response's access line is emitted there, so a
    /// line is never lost with its response). The check and the queueing are one step under the
    /// queue's lock, so a task is either queued before the teardown takes the queue or refused.
    func submit(_ task: @escaping @Sendable () -> Void, ifDiscarded: (@Sendable () -> Void)? = nil) -> Bool {
        let wasEmpty = taskQueue.withLock { queue -> Bool? in
            if stopped.load(ordering: .acquiring) { return nil }
            queue.append(QueuedTask(run: task, discarded: ifDiscarded))
            return queue.count == 1
        }
        guard let wasEmpty else { return false }
        if wasEmpty { _ = cepoll_eventfd_signal(wakeFD) }
        return true
    }

    /// A task waiting in `taskQueue`, and what to do instead if the loop stops first.
    private struct QueuedTask {
        let run: @Sendable () -> Void
        let discarded: (@Sendable () -> Void)?
    }

    /// Runs `task` on this loop's thread once `seconds` have passed (monotonic clock,
    /// millisecond resolution). Callable from any thread.
    /// - Returns: an id for `cancel(_:)`.
    @discardableResult
    public func schedule(after seconds: Double, _ task: @escaping @Sendable () -> Void) -> TimerID {
        let id = timerCounter.wrappingAdd(1, ordering: .relaxed).newValue
        let deadline = monotonicNanoseconds() &+ nanoseconds(seconds)
        if inEventLoop {
            addUserTimer(id: id, deadline: deadline, task)
        } else {
            execute { self.addUserTimer(id: id, deadline: deadline, task) }
        }
        return TimerID(raw: id)
    }

    /// Cancels a timer that has not fired yet; does nothing otherwise. Callable from any
    /// thread (from another thread the cancellation takes effect on the loop, in order).
    public func cancel(_ timer: TimerID) {
        if inEventLoop {
            userTimers[timer.raw] = nil
        } else {
            execute { self.userTimers[timer.raw] = nil }
        }
    }

    private func addUserTimer(id: UInt64, deadline: UInt64, _ task: @escaping @Sendable () -> Void) {
        userTimers[id] = task
        timers.push(deadline: deadline, kind: .user(id))
    }

    // MARK: - Running

    /// The loop body; runs on the loop's own thread until `stop()`.
    func run() {
        threadID.store(UInt(pthread_self()), ordering: .releasing)
        while !stopRequested {
            now = monotonicNanoseconds()
            let count: Int
            do {
                count = try Sys.epollWait(epollFD, events, eventCapacity, timeoutMilliseconds())
            } catch {
                context.logger.error(
                    "http.loop.epoll_failed", .errorType(String(reflecting: type(of: error))),
                    .number("errno", Int(error.errno)))
                break
            }
            now = monotonicNanoseconds()
            for i in 0..<count {
                let event = events[i]
                switch event.data {
                case EventLoop.wakeToken:
                    _ = cepoll_eventfd_drain(wakeFD)
                case EventLoop.listenerToken:
                    acceptConnections()
                default:
                    let fd = Int(truncatingIfNeeded: event.data)
                    if fd >= 0 && fd < connections.count, let connection = connections[fd] {
                        connection.handleEvent(event.events)
                    }
                }
            }
            runTasks()
            runTimers()
        }
        teardown()
    }

    private func timeoutMilliseconds() -> Int32 {
        guard let next = timers.nextDeadline else { return -1 }
        if next <= now { return 0 }
        let ms = (next - now + 999_999) / 1_000_000
        return Int32(min(ms, 3_600_000))
    }

    private func runTasks() {
        var batch = spareTasks
        taskQueue.withLock { swap(&$0, &batch) }
        if batch.isEmpty {
            spareTasks = batch
            return
        }
        for task in batch { task.run() }
        batch.removeAll(keepingCapacity: batch.count <= 1024)
        spareTasks = batch
    }

    private func runTimers() {
        now = monotonicNanoseconds()
        while let entry = timers.popExpired(now: now) {
            switch entry.kind {
            case .user(let id):
                if let task = userTimers.removeValue(forKey: id) { task() }
            case .connection(let fd, let serial):
                let i = Int(fd)
                if i < connections.count, let connection = connections[i], connection.serial == serial {
                    connection.timerFired(deadline: entry.deadline)
                }
            }
        }
    }

    private func teardown() {
        for connection in connections.compactMap({ $0 }) {
            connection.close()
        }
        connections = []
        listener.close()
        listenerArmed = false
        timers.removeAll()
        userTimers = [:]
        let leftover = taskQueue.withLock { queue -> [QueuedTask] in
            stopped.store(true, ordering: .releasing)
            defer { queue = [] }
            return queue
        }
        for task in leftover { task.discarded?() }
        Sys.close(epollFD)
    }

    /// Releases the descriptors of a loop whose thread never started.
    func stopUnstarted() {
        teardown()
    }

    // MARK: - Accepting

    private func acceptConnections() {
        guard listener.isOpen else { return }
        for _ in 0..<64 {
            var reserved = context.reserveConnection()
            if !reserved && !hasIdleConnection {
                // At the cap with nothing idle here: the other loops close their oldest idle
                // keep-alive connection (releasing a slot resumes this listener).
                context.shedIdleConnections(except: self)
                pauseListener()
                return
            }
            let accepted: (fd: Int32, address: String)?
            do {
                accepted = try Sys.accept(listener.fd)
            } catch {
                if reserved { context.releaseConnection() }
                context.logger.warning(
                    "http.accept_failed", .errorType(String(reflecting: type(of: error))),
                    .number("errno", Int(error.errno)))
                if error.errno == EMFILE || error.errno == ENFILE || error.errno == ENOBUFS || error.errno == ENOMEM {
                    // Out of descriptors: stop the level-triggered listener from spinning, retry soon.
                    pauseListener()
                    schedule(after: 0.1) { self.resumeListener() }
                }
                return
            }
            guard let accepted else {
                if reserved { context.releaseConnection() }
                return
            }
            guard context.admit(address: accepted.address) else {
                // Past the per-address limit: closed at once, before any byte is read (and
                // before it could make an idle connection of another client close).
                Sys.close(accepted.fd)
                if reserved { context.releaseConnection() }
                rejectedByAddressLimit += 1
                if rejectedByAddressLimit == 1 || rejectedByAddressLimit % 1000 == 0 {
                    context.logger.warning("http.address_limit_reached", .count("rejected", rejectedByAddressLimit))
                }
                continue
            }
            if !reserved {
                // At the cap and a client is really waiting: the oldest idle keep-alive
                // connection makes room for it (RFC 9112 §9.6 lets a server close idle ones).
                _ = closeOldestIdleConnections(upTo: 1)
                reserved = context.reserveConnection()
                if !reserved {
                    // Another loop took the slot meanwhile.
                    Sys.close(accepted.fd)
                    context.release(address: accepted.address)
                    pauseListener()
                    return
                }
            }
            _ = cepoll_set_nodelay(accepted.fd)
            nextSerial &+= 1
            let connection = Connection(loop: self, fd: accepted.fd, serial: nextSerial, remoteAddress: accepted.address)
            do {
                try Sys.epollControl(epollFD, CEPOLL_CTL_ADD, accepted.fd, CEPOLL_IN, UInt64(accepted.fd))
            } catch {
                context.logger.warning(
                    "http.register_failed", .errorType(String(reflecting: type(of: error))),
                    .number("errno", Int(error.errno)))
                connection.abandonUnregistered()
                context.release(address: accepted.address)
                context.releaseConnection()
                continue
            }
            let fd = Int(accepted.fd)
            if fd >= connections.count {
                connections.append(contentsOf: repeatElement(nil, count: max(fd + 1 - connections.count, connections.count)))
            }
            connections[fd] = connection
            openConnections += 1
            connection.start()
        }
    }

    private func pauseListener() {
        listenerPaused = true
        guard listenerArmed, listener.isOpen else { return }
        do {
            try Sys.epollControl(epollFD, CEPOLL_CTL_DEL, listener.fd, 0, EventLoop.listenerToken)
            listenerArmed = false
        } catch {
            context.logger.warning("http.listener_pause_failed", .number("errno", Int(error.errno)))
        }
    }

    /// Re-arms the listener after a pause (connection cap or descriptor shortage).
    func resumeListener() {
        guard listenerPaused else { return }
        listenerPaused = false
        guard !listenerArmed, listener.isOpen, !isDraining else { return }
        do {
            try Sys.epollControl(epollFD, CEPOLL_CTL_ADD, listener.fd, CEPOLL_IN, EventLoop.listenerToken)
            listenerArmed = true
        } catch {
            context.logger.warning("http.listener_resume_failed", .number("errno", Int(error.errno)))
        }
    }

    // MARK: - Connection services (loop thread)

    /// Changes the epoll interest set of a registered connection.
    func setInterest(fd: Int32, events: UInt32) throws(SyscallError) {
        try Sys.epollControl(epollFD, CEPOLL_CTL_MOD, fd, events, UInt64(fd))
    }

    /// Arms a heap entry for a connection deadline.
    func scheduleConnectionTimer(fd: Int32, serial: UInt64, deadline: UInt64) {
        timers.push(deadline: deadline, kind: .connection(fd: fd, serial: serial))
    }

    /// Called by a connection right after it closed its descriptor.
    func connectionDidClose(_ connection: Connection, fd: Int32, wasLingering: Bool) {
        let i = Int(fd)
        if i < connections.count, connections[i] === connection {
            connections[i] = nil
        }
        openConnections -= 1
        if wasLingering { lingeringConnections -= 1 }
        context.release(address: connection.remoteAddress)
        context.releaseConnection()
        checkDrained()
    }

    /// Called by a connection that has sent its last answer and now lingers.
    func connectionStartedLingering() {
        lingeringConnections += 1
        checkDrained()
    }

    /// How many idle connections another loop closes when asked at the connection cap.
    static let shedBatch = 1

    /// True when one of this loop's connections is an idle keep-alive one.
    private var hasIdleConnection: Bool {
        connections.contains { $0?.isIdleKeepAlive == true }
    }

    /// Closes up to `limit` of this loop's idle keep-alive connections, oldest idle first.
    /// - Returns: how many were closed.
    func closeOldestIdleConnections(upTo limit: Int) -> Int {
        var idle: [(since: UInt64, connection: Connection)] = []
        for case let connection? in connections where connection.isIdleKeepAlive {
            idle.append((connection.idleSince, connection))
        }
        guard !idle.isEmpty else { return 0 }
        idle.sort { $0.since < $1.since }
        var closed = 0
        for entry in idle.prefix(limit) {
            entry.connection.evictIfIdle()
            if entry.connection.isClosed { closed += 1 }
        }
        return closed
    }

    // MARK: - Draining

    /// Stops accepting, closes idle connections; the rest close after their in-flight
    /// requests are answered.
    func beginDrain() {
        guard !isDraining else { return }
        isDraining = true
        if listener.isOpen {
            listener.close()
            listenerArmed = false
        }
        for connection in connections.compactMap({ $0 }) {
            connection.drain()
        }
        checkDrained()
    }

    private func checkDrained() {
        // Lingering connections are done (answered); `stop()` closes them.
        if isDraining && openConnections - lingeringConnections == 0 && !reportedDrained {
            reportedDrained = true
            context.loopDrained()
        }
    }

    /// Closes every connection and ends `run()` after the current iteration.
    func stop() {
        stopRequested = true
        for connection in connections.compactMap({ $0 }) {
            connection.close()
        }
    }

    // MARK: - Per-loop caches

    /// `Date: <IMF-fixdate>\r\n` (RFC 9110 §5.6.7), recomputed once per second.
    func dateLine() -> [UInt8] {
        let t = time(nil)
        if t != dateSecond {
            dateSecond = t
            dateLineBytes = Array("Date: \(imfFixdate(t))\r\n".utf8)
        }
        return dateLineBytes
    }

    /// A fresh random request id: 24 lowercase hex digits (96 bits).
    func makeRequestID() -> String {
        let a = nextRandom()
        let b = nextRandom()
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 24) { buffer in
            for i in 0..<16 { buffer[i] = hex[Int((a >> (UInt64(i) * 4)) & 0xF)] }
            for i in 0..<8 { buffer[16 + i] = hex[Int((b >> (UInt64(i) * 4)) & 0xF)] }
            return 24
        }
    }

    /// wyrand: fast, good enough for ids (not for secrets).
    private func nextRandom() -> UInt64 {
        randomState &+= 0xa076_1d64_78bd_642f
        let product = randomState.multipliedFullWidth(by: randomState ^ 0xe703_7ed1_a0b4_28db)
        return product.high ^ product.low
    }
}

/// Formats a Unix time as an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
func imfFixdate(_ seconds: Int) -> String {
    var t = time_t(seconds)
    var parts = tm()
    gmtime_r(&t, &parts)
    let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
    let day = days[Int(parts.tm_wday) % 7]
    let month = months[Int(parts.tm_mon) % 12]
    return "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
}
