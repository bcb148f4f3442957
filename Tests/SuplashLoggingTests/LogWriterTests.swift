import Foundation
import SuplashLogging
import XCTest

/// The logging thread (docs/operations.md, "The log thread"): callers never wait for the
/// sink, full buffers drop info lines only and count them, everything is flushed.
final class LogWriterTests: XCTestCase {
    /// Blocks the sink with one line, then returns the writer and the logger using it.
    private func blockedWriter(capacity: Int) -> (LogWriter, BlockingSink, Logger) {
        let sink = BlockingSink()
        let writer = LogWriter(sink: sink, bufferCapacity: capacity, dropWarningInterval: 3600)
        let logger = Logger(minimumLevel: .debug, writer: writer)
        sink.holdNextWrite()
        logger.info("first", .number("n", 0))
        sink.waitUntilBlocked()
        return (writer, sink, logger)
    }

    /// Standard error may be a pipe another process made non-blocking: a full pipe (`EAGAIN`)
    /// is waited for, not taken as the end of the batch.
    func testANonBlockingPipeThatFillsUpGetsEveryByte() throws {
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]) }
        XCTAssertEqual(fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK), 0)
        var lines: [UInt8] = []
        for n in 0..<10_000 { lines += Array(#"{"level":"warning","event":"line","n":\#(n)}"#.utf8) + [0x0A] }
        let batch = lines
        let writerEnd = ends[1]
        let written = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            batch.withUnsafeBytes { FileDescriptorLogSink(descriptor: writerEnd).write($0) }
            close(writerEnd)
            written.signal()
        }
        // The writer fills the pipe (64 KiB; the batch is about 450 KB) before anything is read.
        usleep(100_000)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if n <= 0 { break }
            received += chunk[0..<n]
        }
        written.wait()
        XCTAssertEqual(received.count, batch.count)
        XCTAssertTrue(received == batch)
    }

    func testCallersReturnWhileTheSinkIsBlockedAndLinesBeyondCapacityAreCounted() {
        let line = Array(#"{"ts":"2026-11-29T08:15:00.000Z","level":"info","event":"request","status":200}"#.utf8) + [0x0A]
        let (writer, sink, _) = blockedWriter(capacity: line.count * 10)
        // The logging thread is inside the sink's write: nothing drains the buffer now.
        for _ in 0..<25 { writer.append(line, level: .info) }
        // Reaching this line at all is the point: 25 appends returned with the sink still blocked.
        XCTAssertTrue(sink.isBlocked)
        XCTAssertEqual(writer.droppedLineCount, 15, "ten lines fit in the buffer, the other fifteen are dropped")
        XCTAssertEqual(sink.writeCount, 1)
        sink.release()
        writer.shutdown()
        let requests = sink.lines.filter { $0.contains(#""event":"request""#) }
        XCTAssertEqual(requests.count, 10)
    }

    func testWarningsAndErrorsAreNeverDroppedWhenTheBufferIsFull() {
        let (writer, sink, logger) = blockedWriter(capacity: 200)
        for i in 0..<20 { logger.info("filler", .number("i", i)) }
        let droppedInfo = writer.droppedLineCount
        XCTAssertGreaterThan(droppedInfo, 0, "the buffer is full")
        for i in 0..<50 {
            logger.warning("kept_warning", .number("i", i))
            logger.error("kept_error", .number("i", i))
            logger.debug("dropped_debug", .number("i", i))
        }
        XCTAssertTrue(sink.isBlocked)
        XCTAssertEqual(writer.droppedLineCount, droppedInfo + 50, "only the debug lines were dropped")
        sink.release()
        writer.shutdown()
        let lines = sink.lines
        XCTAssertEqual(lines.filter { $0.contains(#""event":"kept_warning""#) }.count, 50)
        XCTAssertEqual(lines.filter { $0.contains(#""event":"kept_error""#) }.count, 50)
        XCTAssertEqual(lines.filter { $0.contains(#""event":"dropped_debug""#) }.count, 0)
        // Warnings keep their order among themselves.
        let warnings = lines.filter { $0.contains(#""event":"kept_warning""#) }
        XCTAssertEqual(warnings.map { $0.components(separatedBy: #""i":"#).last ?? "" }, (0..<50).map { "\($0)}" })
    }

    /// Holds the sink's next write (one line goes in and stays stuck), fills the buffer past
    /// its capacity with `count` info lines and lets the write go; returns the lines dropped.
    private func overflow(_ writer: LogWriter, _ sink: BlockingSink, _ logger: Logger, count: Int) -> Int {
        let before = writer.droppedLineCount
        sink.holdNextWrite()
        logger.info("stuck")
        sink.waitUntilBlocked()
        for i in 0..<count { logger.info("filler", .number("i", i)) }
        sink.release()
        writer.flush()
        return writer.droppedLineCount - before
    }

    func testDroppedLinesAreReportedInAWarningAtMostOncePerInterval() {
        let sink = BlockingSink()
        let writer = LogWriter(sink: sink, bufferCapacity: 200, dropWarningInterval: 3600)
        let logger = Logger(minimumLevel: .info, writer: writer)
        let first = overflow(writer, sink, logger, count: 10)
        XCTAssertGreaterThan(first, 0)
        var reports = sink.lines(event: "log_lines_dropped")
        XCTAssertEqual(reports.count, 1, "the first drops are reported with the next batch")
        XCTAssertTrue(reports[0].contains(#""level":"warning""#), reports[0])
        XCTAssertTrue(reports[0].hasSuffix(#""count":\#(first),"total":\#(first)}"#), reports[0])
        // More drops within the interval (an hour here): no second warning yet.
        let second = overflow(writer, sink, logger, count: 10)
        XCTAssertGreaterThan(second, 0)
        XCTAssertEqual(sink.lines(event: "log_lines_dropped").count, 1, "at most one warning per interval")
        // Shutdown reports what was not reported yet.
        writer.shutdown()
        reports = sink.lines(event: "log_lines_dropped")
        XCTAssertEqual(reports.count, 2)
        XCTAssertTrue(reports[1].hasSuffix(#""count":\#(second),"total":\#(first + second)}"#), reports[1])
        XCTAssertEqual(writer.droppedLineCount, first + second)
    }

    func testShutdownWritesEverythingQueuedFromEveryThreadInOrder() {
        let sink = BlockingSink()
        // Room for every line even if all iterations run on one thread before a batch is taken.
        let writer = LogWriter(sink: sink, bufferCapacity: 1 << 20)
        let logger = Logger(minimumLevel: .info, writer: writer)
        let threads = 4
        let perThread = 300
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread { logger.info("line", .number("thread", t), .number("i", i)) }
        }
        writer.shutdown()
        XCTAssertEqual(writer.droppedLineCount, 0)
        let lines = sink.lines
        XCTAssertEqual(lines.count, threads * perThread)
        for t in 0..<threads {
            let mine = lines.filter { $0.contains(#""thread":\#(t),"#) }
            XCTAssertEqual(mine.count, perThread)
            XCTAssertEqual(mine.map { $0.components(separatedBy: #""i":"#).last ?? "" }, (0..<perThread).map { "\($0)}" })
        }
    }

    func testFlushWritesEverythingAppendedBeforeIt() {
        let sink = BlockingSink()
        let writer = LogWriter(sink: sink)
        defer { writer.shutdown() }
        let logger = Logger(minimumLevel: .info, writer: writer)
        for i in 0..<100 { logger.info("line", .number("i", i)) }
        writer.flush()
        XCTAssertEqual(sink.lines.count, 100)
    }

    func testLinesAfterShutdownAreWrittenAtOnce() {
        let sink = BlockingSink()
        let writer = LogWriter(sink: sink)
        let logger = Logger(minimumLevel: .info, writer: writer)
        logger.info("before")
        writer.shutdown()
        logger.warning("after")
        XCTAssertEqual(sink.lines.count, 2)
        XCTAssertTrue(sink.lines.last?.contains(#""event":"after""#) ?? false)
    }

    func testManyLinesShareOneWrite() {
        let (writer, sink, logger) = blockedWriter(capacity: LogWriter.defaultBufferCapacity)
        for i in 0..<100 { logger.info("line", .number("i", i)) }
        sink.release()
        writer.shutdown()
        XCTAssertEqual(sink.lines.count, 101)
        XCTAssertLessThanOrEqual(sink.writeCount, 3, "the hundred lines queued behind the blocked write go out in one batch")
    }
}
