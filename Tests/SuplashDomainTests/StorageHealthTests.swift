import Foundation
import SuplashDomain
import XCTest

/// A settable clock. `@unchecked Sendable`: `now` guarded by `lock`.
private final class FakeClock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Double = 1000
    var now: Double { lock.withLock { value } }
    func advance(_ seconds: Double) { lock.withLock { value += seconds } }
}

/// Collected log lines. `@unchecked Sendable`: `items` guarded by `lock`.
private final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ s: String) { lock.withLock { items.append(s) } }
    var all: [String] { lock.withLock { items } }
}

final class StorageHealthTests: XCTestCase {
    private func make() -> (StorageHealth, FakeClock, Lines) {
        let clock = FakeClock()
        let health = StorageHealth(logInterval: 60, clock: { clock.now })
        let lines = Lines()
        health.setLogSink { failure, count in lines.append("\(failure.rawValue) \(count)") }
        return (health, clock, lines)
    }

    func testEachKindLogsAtMostOncePerIntervalWithTheCountSinceTheLastLine() {
        let (health, clock, lines) = make()
        health.record(.full)  // first occurrence: a line at once
        for _ in 0..<16 { health.record(.full) }  // within the minute: counted, not logged
        health.record(.busy)  // another kind has its own interval
        XCTAssertEqual(lines.all, ["full 1", "busy 1"])
        clock.advance(30)
        health.flush()
        XCTAssertEqual(lines.all.count, 2, "no line before the interval has passed")
        clock.advance(30)
        health.flush()  // the probe loop's flush reports the rest
        XCTAssertEqual(lines.all, ["full 1", "busy 1", "full 16"])
        clock.advance(120)
        health.flush()
        XCTAssertEqual(lines.all.count, 3, "nothing new to report")
        health.record(.full)
        XCTAssertEqual(lines.all.last, "full 1")
        XCTAssertEqual(health.totalsByKind.first { $0.0 == .full }?.1, 18)
        XCTAssertEqual(health.totalsByKind.count, StorageFailure.allCases.count)
    }

    func testReadinessFollowsTheProbeAndQueryReports() {
        let (health, _, _) = make()
        XCTAssertNil(health.problem)
        health.record(.full)  // a query's transient failure: still ready
        health.record(.busy)
        XCTAssertNil(health.problem)
        health.probeFailed(.full)
        XCTAssertEqual(health.problem, StorageHealth.Problem(failure: .full, fromWriteProbe: true))
        health.probeSucceeded()
        XCTAssertNil(health.problem)
        health.record(.readOnly)  // a query hit a read-only database
        XCTAssertEqual(health.problem, StorageHealth.Problem(failure: .readOnly, fromWriteProbe: false))
        health.probeSucceeded()  // writable again
        XCTAssertNil(health.problem)
        health.record(.corrupt)  // damage does not heal: until restart
        health.probeSucceeded()
        XCTAssertEqual(health.problem, StorageHealth.Problem(failure: .corrupt, fromWriteProbe: false))
        XCTAssertEqual(health.writeProbes, 4)
    }

    /// A write probe that never returns (an fsync hung on a dying disk or a lost network
    /// mount, every write stuck behind it) must not leave `/readyz` at its last success.
    func testAProbeThatDoesNotFinishMakesStorageNotReady() {
        let (health, clock, _) = make()
        health.probeSucceeded()
        health.probeStarted()
        clock.advance(StorageHealth.probeStallSeconds - 1)
        XCTAssertNil(health.problem, "a probe still within its time")
        clock.advance(2)
        XCTAssertEqual(health.problem, StorageHealth.Problem(failure: .io, fromWriteProbe: true, stalled: true))
        health.probeSucceeded()
        XCTAssertNil(health.problem)
        health.probeStarted()
        health.probeFailed(.full)
        clock.advance(StorageHealth.probeStallSeconds + 1)
        XCTAssertEqual(
            health.problem, StorageHealth.Problem(failure: .full, fromWriteProbe: true),
            "a finished probe is not stalled")
    }

    func testPermanentKindsAreCorruptAndReadOnly() {
        XCTAssertEqual(StorageFailure.allCases.filter(\.isPermanent), [.corrupt, .readOnly])
    }
}
