import Foundation
import XCTest

@testable import SuplashStorage

/// A fresh temporary directory, removed at tear-down.
final class TemporaryDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "suplash-storage-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: file(name)))
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Asserts that `body` throws a `StorageError` of `kind`.
func assertStorageError<T>(
    _ kind: StorageError.Kind, file: StaticString = #filePath, line: UInt = #line,
    _ body: () throws -> T
) {
    do {
        _ = try body()
        XCTFail("expected StorageError.\(kind), nothing thrown", file: file, line: line)
    } catch let error as StorageError {
        XCTAssertEqual(error.kind, kind, "code \(error.code): \(error.message)", file: file, line: line)
    } catch {
        XCTFail("expected StorageError.\(kind), got \(type(of: error))", file: file, line: line)
    }
}

/// Runs `count` closures on `count` separate threads at once and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            body(i)
            group.leave()
        }
        thread.stackSize = 512 * 1024
        thread.start()
    }
    group.wait()
}

/// A thread-safe collector for test results. `@unchecked Sendable`: `items` guarded by `lock`.
final class Collector<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ item: T) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }
    var all: [T] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

/// A fresh database in a temporary directory with one table, `t (n INTEGER PRIMARY KEY)`,
/// per test; closed and removed after it.
class SingleTableDatabaseTestCase: XCTestCase {
    var directory: TemporaryDirectory!
    var db: SQLiteDatabase!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        db = try SQLiteDatabase(path: directory.file("app.sqlite"))
        try db.write { try $0.connection.execute("CREATE TABLE t (n INTEGER PRIMARY KEY)") }
    }

    override func tearDown() {
        db?.close()
        db = nil
        directory = nil
    }
}
