import CSQLite
import Foundation

/// The last acknowledged change position, kept outside the WAL in a small side file beside
/// the database (`<database>-position`, mode 0600), so that a lost WAL tail is detected at
/// the next start (docs/operations.md "The WAL position file").
///
/// SQLite stops reading the WAL at the first frame whose checksum fails and silently drops
/// every later frame — every commit after a damaged frame is gone, and the database looks
/// consistent. The side file remembers how far acknowledged commits had got.
///
/// Ordering (why the file never claims a position the database does not hold):
/// - The position is read inside the group transaction and written to the file only after
///   that transaction's `COMMIT` returned, i.e. after the WAL was fsync'd. A crash between
///   the two leaves the file behind the database, never ahead.
/// - The file is overwritten in place (`pwrite` of a fixed-width record at offset 0; no
///   rename, no fsync per commit). After a process crash the page cache still holds it;
///   after a power loss it may be older — still never ahead. It is fsync'd when the write
///   probe runs (every few seconds) and when the database closes, so a WAL damaged later
///   (a flipped bit, a bad sector) is compared with a position that reached the disk.
/// - The record holds the position twice; a torn or foreign file (the halves disagree) is
///   treated as absent and rewritten, never as a claim.
/// - The record names the database it belongs to (its `database_identity` id). A backup gets
///   a new id, so a restored backup — a deliberate step back in history, which devices heal
///   (`sync_history_changed`) — is not mistaken for a lost WAL tail; the file is rewritten.
///
/// Used on the writer thread only (the writer's commit path and exclusive jobs).
final class AcknowledgedPositionFile {
    /// The side file path.
    let path: String
    /// The query that returns the database's current change position (one `INTEGER`).
    let positionSQL: String
    /// The id of the database the recorded positions belong to ("" when it has none).
    let databaseID: String
    private let fd: Int32
    private var written: Int64
    private var dirty = false

    /// Opens (creating, mode 0600) the file and writes `position` into it.
    /// - Throws: `StorageError` (`.ioError`, `.readOnly`, `.full`) when it cannot be opened or written.
    init(path: String, positionSQL: String, databaseID: String, position: Int64) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SQLiteDatabase.errnoError(errno, "open the WAL position file") }
        _ = fchmod(fd, 0o600)
        self.fd = fd
        self.path = path
        self.positionSQL = positionSQL
        self.databaseID = databaseID
        self.written = position
        do {
            try write(position)
            try sync()
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    deinit {
        _ = try? sync()
        Glibc.close(fd)
    }

    /// Records `position` after a successful commit, when it moved forward.
    func acknowledge(_ position: Int64) {
        guard position > written else { return }
        do {
            try write(position)
            written = position
        } catch {
            // A failed side-file write only weakens detection (the file stays behind); the
            // commit itself is durable. The next commit tries again.
        }
    }

    /// fsyncs the file if it changed since the last sync.
    func sync() throws {
        guard dirty else { return }
        guard fsync(fd) == 0 else { throw SQLiteDatabase.errnoError(errno, "fsync the WAL position file") }
        dirty = false
    }

    private func write(_ position: Int64) throws {
        let record = Array(Self.record(position, databaseID: databaseID).utf8)
        let n = record.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        guard n == record.count else { throw SQLiteDatabase.errnoError(n < 0 ? errno : EIO, "write the WAL position file") }
        dirty = true
    }

    /// `"<20 digits> <20 digits> <database id>\n"`: the position twice, fixed width, then the
    /// id of the database it belongs to (fixed for a file's life, so every record has one length).
    static func record(_ position: Int64, databaseID: String) -> String {
        let digits = String(position)
        let padded = String(repeating: "0", count: max(0, 20 - digits.count)) + digits
        return padded + " " + padded + " " + databaseID + "\n"
    }

    /// The position recorded in the file at `path`: nil when there is no file; `.unreadable`
    /// when it exists but holds no valid record.
    static func read(_ path: String) -> Recorded {
        guard let data = FileManager.default.contents(atPath: path) else { return .absent }
        let text = String(decoding: data, as: UTF8.self)
        let parts =
            text.split(separator: "\n", omittingEmptySubsequences: false).first?
            .split(separator: " ", omittingEmptySubsequences: false) ?? []
        guard parts.count == 2 || parts.count == 3, parts[0] == parts[1], parts[0].count == 20,
            let value = Int64(parts[0])
        else {
            return .unreadable
        }
        // A record without an id (written before records named their database) belongs to any.
        return .position(value, databaseID: parts.count == 3 ? String(parts[2]) : nil)
    }

    /// What `read` found.
    enum Recorded: Equatable {
        case absent
        case unreadable
        /// A valid record: the position and the id of the database it belongs to (nil in a
        /// record from before ids were written).
        case position(Int64, databaseID: String?)
    }
}

/// The database is behind the last acknowledged change position: commits that clients were
/// told are durable are not in it (typically a damaged WAL frame: SQLite dropped it and
/// every frame after it). Start-up refuses; `description` says what to do.
public struct AcknowledgedPositionBehind: Error, CustomStringConvertible, Sendable {
    /// The database's change position.
    public let databasePosition: Int64
    /// The position recorded in the side file.
    public let acknowledgedPosition: Int64
    /// The side file.
    public let file: String

    public var description: String {
        """
        the database is behind the last acknowledged write: its change position is \(databasePosition), \
        but \(file) records that position \(acknowledgedPosition) was acknowledged to clients. \
        \(acknowledgedPosition - databasePosition) acknowledged change(s) are missing — most likely the WAL \
        (-wal file) was damaged and SQLite dropped every commit after the damaged frame, or the database file \
        was replaced by an older copy. Nothing was changed. To proceed: stop here and keep a copy of the whole \
        data dir; then either restore the newest backup, or accept this database as it is — in both cases \
        delete \(file) and start again (devices push back the documents they still hold). \
        See docs/operations.md "The WAL position file".
        """
    }
}

/// What `SQLiteDatabase.trackAcknowledgedPosition` found in the side file.
public enum AcknowledgedPositionCheck: Sendable, Equatable {
    /// No side file yet (a new data dir, or one from before the file existed): written now.
    case created
    /// The side file could not be read (torn or foreign): rewritten with the database's position.
    case rewrittenUnreadable
    /// The side file belongs to another database (a restored backup, whose id was forked, or a
    /// deliberately replaced database): rewritten with this database's position and id.
    case rewrittenOtherDatabase
    /// No readable side file for a database that already holds changes (the operator deleted
    /// it to accept a database behind it, or it was lost): nothing vouches that the database
    /// holds every position it handed out, so its id was forked (`forkIdentitySQL`) before
    /// the file was written — every earlier sync token is then `sync_history_changed`, and
    /// no token can resume past positions that new writes take again.
    case forked
    /// The database holds every acknowledged position.
    case consistent(database: Int64, acknowledged: Int64)
}

extension SQLiteDatabase {
    /// The side file of the last acknowledged change position: `<database>-position`.
    public var acknowledgedPositionPath: String { path + "-position" }

    /// Checks the database against the last acknowledged change position and, when it holds
    /// every acknowledged position, starts recording it: from now on each group commit that
    /// advances `positionSQL`'s value writes it to `acknowledgedPositionPath` after the commit.
    ///
    /// Call once at start-up, before serving writes.
    /// - Parameters:
    ///   - positionSQL: a query returning the database's current change position (one
    ///     `INTEGER`); a missing table or row counts as position 0.
    ///   - identitySQL: a query returning the database's id (one `TEXT`); a file recorded for
    ///     another id is not compared (see `AcknowledgedPositionCheck.rewrittenOtherDatabase`).
    ///   - forkIdentitySQL: a statement giving the database a new id; run (with `identitySQL`)
    ///     when the side file is absent or unreadable while the database's position is above 0
    ///     (see `AcknowledgedPositionCheck.forked`).
    /// - Returns: what the side file held.
    /// - Throws: `AcknowledgedPositionBehind` when the database's position is lower than the
    ///   file's (nothing is changed then); `StorageError` when the file cannot be written.
    @discardableResult
    public func trackAcknowledgedPosition(
        positionSQL: String, identitySQL: String? = nil,
        forkIdentitySQL: String? = nil
    ) throws -> AcknowledgedPositionCheck {
        let file = acknowledgedPositionPath
        let writer = self.writer
        return try writeExclusive { context in
            let database = Self.currentPosition(context.connection, positionSQL) ?? 0
            func readID() -> String {
                guard let identitySQL, case .text(let id)? = (try? context.connection.scalar(identitySQL)) ?? nil else {
                    return ""
                }
                return id
            }
            var databaseID = readID()
            var outcome: AcknowledgedPositionCheck
            switch AcknowledgedPositionFile.read(file) {
            case .absent:
                outcome = .created
            case .unreadable:
                outcome = .rewrittenUnreadable
            case .position(_, let recordedID?) where recordedID != databaseID:
                outcome = .rewrittenOtherDatabase
            case .position(let acknowledged, _):
                guard database >= acknowledged else {
                    throw AcknowledgedPositionBehind(
                        databasePosition: database, acknowledgedPosition: acknowledged,
                        file: file)
                }
                outcome = .consistent(database: database, acknowledged: acknowledged)
            }
            if outcome == .created || outcome == .rewrittenUnreadable, database > 0, let forkIdentitySQL {
                try context.connection.execute(forkIdentitySQL)
                databaseID = readID()
                outcome = .forked
            }
            writer.positionFile = try AcknowledgedPositionFile(
                path: file, positionSQL: positionSQL,
                databaseID: databaseID, position: database)
            return outcome
        }
    }

    /// The change position `sql` reads on `connection`, or nil when it cannot be read.
    static func currentPosition(_ connection: SQLiteConnection, _ sql: String) -> Int64? {
        (try? connection.scalarInt64(sql)) ?? nil
    }
}
