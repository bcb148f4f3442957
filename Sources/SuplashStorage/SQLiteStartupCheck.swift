import CSQLite
import Foundation

/// Start-up checks of a SQLite database file (spec §7: refuse to start on damaged data):
/// a header check before the file is opened, and an integrity check bounded for start-up
/// once it is.
///
/// - Header (`checkHeader`, O(1)): the file starts with `SQLite format 3\0`, has a valid page
///   size, and is not shorter than the page count its header records
///   (https://sqlite.org/fileformat2.html §1.3). A main file cut short after `kill -9` is found
///   here when no WAL is beside it; with a WAL the missing pages may legitimately still live
///   in the WAL (a checkpoint interrupted after it wrote page 1), so `integrity` then runs
///   the full `quick_check` whatever the size.
/// - Integrity (`checkIntegrity`): `PRAGMA quick_check` (every b-tree page, every cell, no
///   index-content cross-check) on files up to `quickCheckMaxBytes`; on larger ones a walk
///   from the root to the first and the last leaf of every table and index, which reads the
///   schema, every root page and both edges of every tree — a torn or truncated file shows
///   there — in milliseconds. `quick_check` of a 229 MiB database of 1,000,000 water entries
///   took 0.7–0.9 s with the file in the page cache (about 3.5 ms per MiB) but 18 s (and once
///   265 s) after the cache was dropped on the shared CI disk: it reads every page. The 64 MiB
///   bound keeps a cold start-up check to a few seconds on such a disk and well under a
///   second warm; run `sqlite3 FILE 'PRAGMA quick_check'` offline for a full check of a larger
///   file (docs/operations.md "Start-up checks").
public enum SQLiteStartupCheck {
    /// Files up to this size get a full `PRAGMA quick_check` at start-up (64 MiB).
    public static let quickCheckMaxBytes: Int64 = 64 << 20

    /// What is wrong with a database file.
    public enum Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// The first 16 bytes are not SQLite's header string.
        case notADatabase
        /// The header records `pageCount` pages of `pageSize` bytes but the file holds fewer bytes.
        case truncated(expectedBytes: Int64, actualBytes: Int64)
        /// An integrity check failed: the check's name and its first message (SQLite's text
        /// names pages and b-trees, never row content).
        case corrupt(check: String, finding: String)
        /// The file is in rollback-journal mode (as a `backup` copy is) but a non-empty WAL
        /// lies beside it: that WAL belongs to another database (the one the copy replaced),
        /// and opening would replay it onto this file.
        case foreignWAL
        /// The file could not be read (`errno`).
        case unreadable(errno: Int32)

        public var description: String {
            switch self {
            case .notADatabase: "is not a SQLite database (its header is wrong)"
            case .truncated(let expected, let actual):
                "is truncated: its header records \(expected) bytes but the file holds \(actual)"
            case .corrupt(let check, let finding): "is damaged: \(check) reports \"\(finding)\""
            case .foreignWAL:
                "is not in WAL mode (a backup copy?) but a WAL file lies beside it, which belongs to the database "
                    + "it replaced: opening would replay that WAL onto it"
            case .unreadable(let code): "cannot be read (\(String(cString: strerror(code))))"
            }
        }
    }

    /// How a file was checked.
    public struct Report: Sendable, Equatable {
        /// `quick_check` or `edge walk`.
        public var method: String
        /// The file size in bytes.
        public var bytes: Int64
        /// How long the check took, in milliseconds.
        public var milliseconds: Int
    }

    /// Reads the header of the database file at `path` (which must exist and be non-empty).
    /// - Returns: true when the file is shorter than its header records (only acceptable
    ///   when a WAL may hold the missing pages; the caller then forces a full `quick_check`).
    /// - Throws: `Problem` (`.notADatabase`, `.unreadable`, `.truncated` when `walPresent`
    ///   is false, `.foreignWAL` when `walPresent` beside a file in rollback-journal mode:
    ///   header bytes 18 and 19 are 1; the server's database is in WAL mode, 2, from its first
    ///   open, before it has a WAL).
    @discardableResult
    public static func checkHeader(path: String, walPresent: Bool) throws -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Problem.unreadable(errno: errno) }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 100)
        let got = header.withUnsafeMutableBytes { read(fd, $0.baseAddress, 100) }
        guard got >= 0 else { throw Problem.unreadable(errno: errno) }
        guard got == 100, Array(header[0..<16]) == Array("SQLite format 3\0".utf8) else { throw Problem.notADatabase }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Problem.unreadable(errno: errno) }
        let raw = Int64(header[16]) << 8 | Int64(header[17])
        let pageSize = raw == 1 ? 65_536 : raw
        guard pageSize >= 512, pageSize & (pageSize - 1) == 0 else { throw Problem.notADatabase }
        if walPresent, header[18] == 1, header[19] == 1 { throw Problem.foreignWAL }
        func be32(_ at: Int) -> Int64 { header[at..<(at + 4)].reduce(0) { $0 << 8 | Int64($1) } }
        // The in-header page count is valid only when the change counter matches "version-valid-for".
        let pageCount = be32(24) == be32(92) ? be32(28) : 0
        let expected = pageCount * pageSize
        let actual = Int64(info.st_size)
        guard actual < expected else { return false }
        if walPresent { return true }
        throw Problem.truncated(expectedBytes: expected, actualBytes: actual)
    }

    /// Checks the open database: `quick_check` when the file is at most `maxQuickCheckBytes`
    /// (default `quickCheckMaxBytes`) or `forceQuickCheck`, else the edge walk (see the
    /// type's documentation).
    /// - Throws: `Problem.corrupt` with the first finding; `StorageError` when the check
    ///   itself cannot run (for example `.corrupt` raised while reading the schema, mapped
    ///   to `Problem.corrupt` too).
    public static func checkIntegrity(
        _ database: SQLiteDatabase, forceQuickCheck: Bool = false,
        maxQuickCheckBytes: Int64 = quickCheckMaxBytes
    ) throws -> Report {
        let started = DispatchTime.now().uptimeNanoseconds
        let bytes = fileSize(database.path) ?? 0
        let full = forceQuickCheck || bytes <= maxQuickCheckBytes
        do {
            try database.read { c in
                if full {
                    let rows = try c.query("PRAGMA quick_check(1)")
                    let first = (rows.first.flatMap { try? $0.optionalString(0) } ?? "")
                        .split(whereSeparator: \.isNewline).joined(separator: "; ")
                    guard first == "ok" else { throw Problem.corrupt(check: "quick_check", finding: first) }
                } else {
                    try walkEdges(c)
                }
            }
        } catch let error as StorageError where error.kind == .corrupt || error.kind == .ioError {
            throw Problem.corrupt(check: full ? "quick_check" : "edge walk", finding: error.description)
        }
        let elapsed = Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        return Report(method: full ? "quick_check" : "edge walk", bytes: bytes, milliseconds: elapsed)
    }

    /// Reads the first and the last entry of every table and index (a root-to-leaf path
    /// along both edges of each b-tree).
    static func walkEdges(_ c: SQLiteConnection) throws {
        let objects = try c.query("SELECT type, name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index') AND rootpage > 0")
        for object in objects {
            guard let type = try object.optionalString(0), let name = try object.optionalString(1),
                let table = try object.optionalString(2)
            else { continue }
            let quotedTable = quote(table)
            if type == "table" {
                _ = try c.query("SELECT * FROM \(quotedTable) LIMIT 1")
                let sql = try c.query("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", [.text(name)])
                if (try sql.first?.optionalString(0))?.uppercased().contains("WITHOUT ROWID") == true {
                    let primaryKey = try c.query("SELECT name FROM pragma_table_info(?) WHERE pk = 1", [.text(table)])
                    if let column = try primaryKey.first?.optionalString(0) {
                        _ = try c.query("SELECT * FROM \(quotedTable) ORDER BY \(quote(column)) DESC LIMIT 1")
                    }
                } else {
                    _ = try c.query("SELECT * FROM \(quotedTable) ORDER BY rowid DESC LIMIT 1")
                }
            } else {
                let columns = try c.query("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(name)])
                guard let first = try columns.first?.optionalString(0) else { continue }
                let partial = try c.query("SELECT partial FROM pragma_index_list(?) WHERE name = ?", [.text(table), .text(name)])
                guard (try partial.first?.optionalInt64(0)) != 1, !name.hasPrefix("sqlite_") else { continue }
                _ = try c.query("SELECT \(quote(first)) FROM \(quotedTable) INDEXED BY \(quote(name)) ORDER BY \(quote(first)) LIMIT 1")
                _ = try c.query("SELECT \(quote(first)) FROM \(quotedTable) INDEXED BY \(quote(name)) ORDER BY \(quote(first)) DESC LIMIT 1")
            }
        }
    }

    private static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Writes, fsyncs and removes a small probe file in `directory`.
    /// - Returns: nil when the directory is writable, else the failing call's `errno`
    ///   (`EROFS` read-only file system, `EACCES` permissions, `ENOSPC` full, …).
    public static func probeWritable(directory: String) -> Int32? {
        let path = directory + "/.suplash-write-probe"
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return errno }
        defer {
            close(fd)
            unlink(path)
        }
        let block = [UInt8](repeating: 0, count: 4096)
        let written = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written != block.count { return written < 0 ? errno : ENOSPC }
        if fsync(fd) != 0 { return errno }
        return nil
    }
}
