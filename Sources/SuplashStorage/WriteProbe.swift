import CSQLite
import Foundation

extension SQLiteDatabase {
    /// Bytes the write probe asks the file system to allocate: room for a large group commit
    /// (256 jobs of a few pages each). A database that cannot grow by this much is full for
    /// a server under load.
    public static let writeProbeBytes: Int64 = 1 << 20

    /// The probe file beside the database: `<database>-probe` (mode 0600, left empty).
    public var writeProbePath: String { path + "-probe" }

    /// A cheap check that the database can take writes now, without growing it and without
    /// committing anything (`/readyz`, docs/operations.md "Write probe"):
    ///
    /// 1. The file system: `<database>-probe` is opened for writing (created 0600 if missing),
    ///    `posix_fallocate` reserves `writeProbeBytes` of new blocks, then it is truncated
    ///    to zero again. This fails on a read-only file system or directory (`EROFS`,
    ///    `EACCES`, `EPERM` → `.readOnly`), a full disk or quota (`ENOSPC`, `EDQUOT` → `.full`)
    ///    and device errors (`EIO` → `.ioError`): what a commit appending to the WAL needs.
    ///    A write into already allocated WAL space would succeed on a full disk, so only a
    ///    fresh allocation proves room to grow.
    /// 2. SQLite: on the writer thread between batches, the WAL position file (if any) is
    ///    fsync'd when it changed, then `BEGIN IMMEDIATE` takes the write
    ///    lock (`.busy` if another process holds it past the busy timeout; `.readOnly` when
    ///    SQLite opened the file read-only), reads the header (`.corrupt` for a damaged one)
    ///    and rolls back: nothing is written to the WAL, no fsync.
    ///
    /// - Throws: `StorageError` of the first failing step (`.readOnly`, `.full`, `.ioError`,
    ///   `.busy`, `.corrupt`, `.closed`).
    public func probeWritability() throws {
        try Self.probeFileSystem(writeProbePath, bytes: Self.writeProbeBytes)
        let writer = self.writer
        try writeExclusive { context in
            // The WAL position file reaches the disk at this pace too (see `AcknowledgedPositionFile`).
            try writer.positionFile?.sync()
            let connection = context.connection
            try connection.runTransactionControl(.beginImmediate)
            defer { try? connection.runTransactionControl(.rollback) }
            _ = try connection.scalar("PRAGMA schema_version")
        }
    }

    /// Step 1 of `probeWritability`: allocate `bytes` in a fresh region of `path`, then free them.
    /// - Throws: `StorageError` classified from `errno`.
    static func probeFileSystem(_ path: String, bytes: Int64) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw errnoError(errno, "open the write probe file") }
        defer { Glibc.close(fd) }
        guard ftruncate(fd, 0) == 0 else { throw errnoError(errno, "truncate the write probe file") }
        let rc = posix_fallocate(fd, 0, off_t(bytes))  // returns the error number itself
        _ = ftruncate(fd, 0)
        // A file system that cannot allocate ahead (EOPNOTSUPP, EINVAL) leaves this step to SQLite.
        guard rc == 0 || rc == EOPNOTSUPP || rc == EINVAL else {
            throw errnoError(rc, "allocate space for the write probe")
        }
    }

    /// A `StorageError` for a failed system call, classified by its error number.
    static func errnoError(_ number: Int32, _ what: String) -> StorageError {
        let code: Int32 =
            switch number {
            case ENOSPC, EDQUOT: SQLITE_FULL
            case EROFS, EACCES, EPERM: SQLITE_READONLY
            default: SQLITE_IOERR
            }
        return StorageError(code: code, message: "\(what): errno \(number)")
    }
}
