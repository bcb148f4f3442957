import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where the logging thread writes: one call per batch of whole lines. A sink may block
/// (a slow disk, a pipe nobody reads); only the logging thread (or a `flush` caller) waits.
public protocol LogSink: Sendable {
    /// Writes every byte of `bytes` (whole lines), retrying partial writes; gives up quietly
    /// on an error it cannot wait out (there is nowhere left to report it).
    func write(_ bytes: UnsafeRawBufferPointer)
}

/// A sink writing to a file descriptor with `write(2)` (standard error by default).
public struct FileDescriptorLogSink: LogSink {
    /// The descriptor written to; never closed by the sink.
    public let descriptor: Int32

    /// Standard error (descriptor 2), where the server's log goes.
    public static let standardError = FileDescriptorLogSink(descriptor: 2)

    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Retries after `EINTR`, and after `EAGAIN` once `poll(2)` says the descriptor is writable
    /// (standard error may be a pipe another process made non-blocking: the flag is shared).
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(descriptor, base + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    if poll(&ready, 1, -1) >= 0 || errno == EINTR { continue }
                }
                return
            }
            offset += n
        }
    }
}

/// The logging thread: every log line of the process is written from here, many lines per
/// `write(2)`, so no event loop or worker ever waits for the log's file descriptor.
///
/// - Each thread that logs appends its formatted line to its **own buffer** (found through a
///   thread-local slot; a short, uncontended lock shared only with the logging thread's swap).
///   The HTTP engine emits access lines on the connection's event loop, so those buffers are
///   per event loop and one connection's lines keep their order.
/// - The logging thread wakes when a buffer goes from idle to pending (a semaphore signal,
///   one per batch rather than per line), takes every buffer's bytes and writes them with one
///   `write(2)` per batch.
/// - A buffer holds at most `bufferCapacity` bytes of **info and debug** lines: beyond that
///   (the sink is slower than the lines arrive) such a line is dropped, never waited for, and
///   counted (`droppedLineCount`, the metric `suplash_log_lines_dropped_total`); the logging
///   thread writes a `log_lines_dropped` warning naming the count at most once a minute.
/// - **Warning and error lines are never dropped**: they are appended past the capacity (the
///   buffer grows; such lines are rare, and a flood of them is itself the thing to read).
///   They still never block the caller.
/// - `flush()` writes everything appended before it (used at SIGTERM after the drain, and at
///   exit); `shutdown()` flushes, reports unreported drops and stops the thread. Lines
///   emitted after `shutdown()` are written at once on the caller's thread.
public final class LogWriter: Sendable {
    /// Bytes of info/debug lines one thread's buffer holds before such lines are dropped
    /// (64 KiB: about 300 access lines, far more than a loop produces while one batch is written).
    public static let defaultBufferCapacity = 64 * 1024

    /// See `defaultBufferCapacity`.
    public let bufferCapacity: Int
    /// Least time between two `log_lines_dropped` warnings, in seconds (60 in the server).
    public let dropWarningInterval: Double
    let sink: any LogSink
    let id: Int

    private let buffers = Mutex<[ThreadLogBuffer]>([])
    private let dropped = Atomic<Int>(0)
    private let pending = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    /// Held by whoever drains (the logging thread or a `flush` caller), including while the
    /// sink writes: batches reach the sink whole and in order.
    private let drainState = Mutex(DrainState())

    private struct DrainState {
        var output: [UInt8] = []
        var reportedDrops = 0
        /// Uptime (seconds) of the last `log_lines_dropped` warning; nil before the first.
        var lastWarning: Double?
    }

    private static let nextID = Atomic<Int>(1)

    /// Starts the logging thread.
    /// - Parameters:
    ///   - sink: where lines go (standard error for the server).
    ///   - bufferCapacity: bytes of info/debug lines per thread before they are dropped.
    ///   - dropWarningInterval: least seconds between two `log_lines_dropped` warnings.
    public init(
        sink: any LogSink = FileDescriptorLogSink.standardError, bufferCapacity: Int = LogWriter.defaultBufferCapacity,
        dropWarningInterval: Double = 60
    ) {
        self.sink = sink
        self.bufferCapacity = max(1, bufferCapacity)
        self.dropWarningInterval = dropWarningInterval
        self.id = LogWriter.nextID.add(1, ordering: .relaxed).oldValue
        let thread = Thread { [self] in run() }
        thread.name = "suplash-log"
        thread.stackSize = 256 * 1024
        // The logging thread takes no process signals: it starts with every signal blocked
        // (a thread inherits its creator's mask), so a SIGTERM meant for the server's
        // `sigwait` can never be delivered here and end the process by its default action.
        var all = sigset_t()
        var previous = sigset_t()
        sigfillset(&all)
        // Except the signals of a fault on this thread: blocked, the kernel would kill the
        // process without the runtime's crash report.
        for fault in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP] { sigdelset(&all, fault) }
        pthread_sigmask(SIG_BLOCK, &all, &previous)
        thread.start()
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// Info and debug lines dropped so far because a buffer was full (monotonic).
    public var droppedLineCount: Int { dropped.load(ordering: .relaxed) }

    /// Appends one whole line (ending in `\n`) to the calling thread's buffer. Never blocks
    /// on the sink: an info or debug line that does not fit is dropped and counted; a warning
    /// or error line is always kept.
    public func append(_ line: [UInt8], level: LogLevel) {
        if stopped.load(ordering: .acquiring) {
            // After shutdown there is no logging thread: write here (exit paths only).
            drainState.withLock { _ in line.withUnsafeBytes { sink.write($0) } }
            return
        }
        let buffer = currentBuffer()
        let keepAlways = level >= .warning
        let capacity = bufferCapacity
        let kept = buffer.state.withLock { state -> Bool in
            if !keepAlways && state.bytes.count + line.count > capacity { return false }
            state.bytes.append(contentsOf: line)
            return true
        }
        guard kept else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        if !pending.exchange(true, ordering: .sequentiallyConsistent) { wake.signal() }
        // `shutdown()` may have taken its last look at the buffers between the check above and
        // the append: then nobody else will write this line.
        if stopped.load(ordering: .sequentiallyConsistent) { drain(final: true) }
    }

    /// Blocks until every line appended before this call is written to the sink.
    public func flush() {
        drain(final: false)
    }

    /// Flushes, writes a last `log_lines_dropped` warning if drops went unreported, and stops
    /// the logging thread. Idempotent. Later lines are written on the caller's thread.
    public func shutdown() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        exited.wait()
        drain(final: true)
        stopped.store(true, ordering: .sequentiallyConsistent)
        // A line appended between the last drain and `stopped` is still in a buffer; one appended
        // after this drain looked is drained by its appender, which then sees `stopped`.
        drain(final: true)
    }

    private func run() {
        while !stopping.load(ordering: .acquiring) {
            _ = wake.wait(timeout: .now() + .seconds(1))
            pending.store(false, ordering: .sequentiallyConsistent)
            if drain(final: false) {
                // Under load, let lines gather for a moment: fewer wake-ups for the threads that
                // log and more lines per write (a buffer holds ~300 access lines, this is ~1 ms).
                usleep(LogWriter.batchPauseMicroseconds)
            }
        }
        exited.signal()
    }

    /// Pause after a batch was written, in microseconds.
    static let batchPauseMicroseconds: UInt32 = 1000

    /// Takes every buffer's bytes, adds a drop warning when one is due, and writes the batch.
    /// - Returns: true when something was written.
    @discardableResult
    private func drain(final: Bool) -> Bool {
        drainState.withLock { state -> Bool in
            let all = buffers.withLock { $0 }
            var retired: [ObjectIdentifier] = []
            for buffer in all {
                let gone = buffer.state.withLock { bufferState -> Bool in
                    state.output.append(contentsOf: bufferState.bytes)
                    bufferState.bytes.removeAll(keepingCapacity: bufferState.bytes.capacity <= bufferCapacity * 2)
                    return bufferState.retired
                }
                if gone { retired.append(ObjectIdentifier(buffer)) }
            }
            if !retired.isEmpty {
                buffers.withLock { list in list.removeAll { retired.contains(ObjectIdentifier($0)) } }
            }
            let total = dropped.load(ordering: .relaxed)
            if total > state.reportedDrops {
                let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
                if final || state.lastWarning.map({ now - $0 >= dropWarningInterval }) ?? true {
                    state.output.append(
                        contentsOf: LogLineFormat.line(
                            .warning, "log_lines_dropped", [.count("count", total - state.reportedDrops), .count("total", total)]))
                    state.reportedDrops = total
                    state.lastWarning = now
                }
            }
            guard !state.output.isEmpty else { return false }
            state.output.withUnsafeBytes { sink.write($0) }
            state.output.removeAll(keepingCapacity: state.output.capacity <= 1 << 20)
            return true
        }
    }

    /// The calling thread's buffer of this writer, created and registered on first use.
    private func currentBuffer() -> ThreadLogBuffer {
        let slot = ThreadLogSlot.current()
        for (writerID, buffer) in slot.buffers where writerID == id { return buffer }
        let buffer = ThreadLogBuffer()
        slot.buffers.append((id, buffer))
        buffers.withLock { $0.append(buffer) }
        return buffer
    }
}

/// One thread's pending lines for one writer.
final class ThreadLogBuffer: Sendable {
    struct State {
        var bytes: [UInt8] = []
        /// The thread exited: the logging thread drops the buffer once it is drained.
        var retired = false
    }

    let state = Mutex(State())
}

/// The per-thread list of buffers (one per writer the thread logged to), kept in a pthread
/// thread-specific slot; released (and its buffers marked retired) when the thread exits.
final class ThreadLogSlot {
    // Thread-confined: only the owning thread reads or changes `buffers`.
    var buffers: [(Int, ThreadLogBuffer)] = []

    static func current() -> ThreadLogSlot {
        if let raw = pthread_getspecific(threadLogSlotKey) {
            return Unmanaged<ThreadLogSlot>.fromOpaque(raw).takeUnretainedValue()
        }
        let slot = ThreadLogSlot()
        pthread_setspecific(threadLogSlotKey, Unmanaged.passRetained(slot).toOpaque())
        return slot
    }
}

/// The process's thread-specific key for `ThreadLogSlot` (created once).
private let threadLogSlotKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { raw in
        guard let raw else { return }
        let slot = Unmanaged<ThreadLogSlot>.fromOpaque(raw).takeRetainedValue()
        for (_, buffer) in slot.buffers { buffer.state.withLock { $0.retired = true } }
    }
    return key
}()
