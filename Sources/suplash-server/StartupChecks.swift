import Foundation
import SuplashLogging
import SuplashPostgres
import SuplashStorage

/// Flags that allow a start the checks would otherwise refuse (docs/operations.md).
struct StartupOptions: Sendable {
    /// `--init-empty`: start with a new, empty database on purpose although the data dir
    /// holds state (the leftovers are moved aside, and a new token secret is made).
    var initEmpty = false
    /// `--new-jwt-secret`: make a new token secret although the database holds accounts
    /// (every session and token issued before stops working).
    var newJWTSecret = false

    init(initEmpty: Bool = false, newJWTSecret: Bool = false) {
        self.initEmpty = initEmpty
        self.newJWTSecret = newJWTSecret
    }

    init(_ parsed: ParsedCommandLine) {
        initEmpty = parsed.switches.contains("init-empty")
        newJWTSecret = parsed.switches.contains("new-jwt-secret")
    }
}

/// A refusal to start (or to run a CLI command): what is wrong, with which file, and what
/// to do — printed as is, never with data from the files.
struct StartupRefusal: Error, CustomStringConvertible {
    /// The message: names the file, says what is wrong and what to do.
    var description: String
    /// The process exit code (`ExitCode`).
    var exitCode: Int32
}

/// The exit codes of `suplash-server` (docs/operations.md "CLI exit codes"; sysexits(3) values).
enum ExitCode {
    /// Success.
    static let ok: Int32 = 0
    /// A configuration error or another failure.
    static let failure: Int32 = 1
    /// Bad command line (EX_USAGE).
    static let usage: Int32 = 64
    /// Damaged, missing or inconsistent data: refused (EX_DATAERR).
    static let dataError: Int32 = 65
    /// An input file is missing (EX_NOINPUT).
    static let noInput: Int32 = 66
    /// An output file cannot be created: exists, or its directory is missing (EX_CANTCREAT).
    static let cannotCreate: Int32 = 73
    /// An I/O error or a full disk (EX_IOERR).
    static let ioError: Int32 = 74
    /// Temporarily unavailable: database busy, PostgreSQL unreachable (EX_TEMPFAIL).
    static let temporary: Int32 = 75
    /// Not writable: read-only file system, permissions, read-only database (EX_NOPERM).
    static let notWritable: Int32 = 77
}

/// Start-up checks (spec §7): the server refuses to start on a data dir that holds state but
/// no usable database, on a damaged database, on data whose token secret is gone, and on
/// storage it cannot write — before it opens (and so creates) anything and before it prints
/// `listening on`.
enum StartupChecks {
    static let restoreHint = "restore the latest backup (docs/operations.md, \"Restore from backup\")"

    /// What in `dataDir` shows that a server has run there: the token secret, the database's
    /// journal files and WAL position file, backups and the mail outbox (and, on PostgreSQL,
    /// a SQLite database).
    static func stateFiles(dataDir: String, databasePath: String?) -> [String] {
        var found: [String] = []
        let fm = FileManager.default
        var candidates = [dataDir + "/jwt-secret"]
        if let databasePath { candidates += ["-wal", "-shm", "-journal", "-position"].map { databasePath + $0 } }
        for path in candidates where fm.fileExists(atPath: path) { found.append(path) }
        for directory in ["backups", "mail"] {
            let path = dataDir + "/" + directory
            if let items = try? fm.contentsOfDirectory(atPath: path), !items.isEmpty { found.append(path + "/") }
        }
        return found
    }

    static func names(_ paths: [String]) -> String {
        paths.map { ($0 as NSString).lastPathComponent + ($0.hasSuffix("/") ? "/" : "") }.joined(separator: ", ")
    }

    /// The data dir exists (created 0700 when missing) and takes a write and an fsync.
    /// - Throws: `StartupRefusal` (77 not writable, 74 full or I/O).
    static func checkWritable(_ directory: String, role: String) throws {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw StartupRefusal(
                description: "cannot create the \(role) \(directory): make its parent writable for the "
                    + "server's user, or point server.dataDir (--data-dir) elsewhere", exitCode: ExitCode.notWritable)
        }
        guard let code = SQLiteStartupCheck.probeWritable(directory: directory) else { return }
        let reason = String(cString: strerror(code))
        switch code {
        case ENOSPC, EDQUOT:
            throw StartupRefusal(
                description: "the \(role) \(directory) is on a full file system (\(reason)): free space "
                    + "there, then start again", exitCode: ExitCode.ioError)
        case EROFS, EACCES, EPERM:
            throw StartupRefusal(
                description: "the \(role) \(directory) is not writable (\(reason)): the server writes its "
                    + "database, journal files and token secret there. Make it writable for the server's user "
                    + "(chown/chmod) or mount it read-write", exitCode: ExitCode.notWritable)
        default:
            throw StartupRefusal(
                description: "cannot write to the \(role) \(directory) (\(reason)): check the disk and "
                    + "the file system, then start again", exitCode: ExitCode.ioError)
        }
    }

    /// Before a SQLite database is opened: the directories are writable; a database file is a
    /// SQLite file of the length its header records; a missing or empty database beside
    /// state is refused unless `--init-empty` (which moves the leftovers aside).
    /// What the checks after opening must do.
    struct SQLitePlan {
        /// Run the full `quick_check` whatever the size (the file is shorter than its header
        /// records, or empty with a WAL: the WAL may hold the rest).
        var forceQuickCheck = false
        /// The data dir holds state: the opened database must hold the Suplash schema
        /// (else it is an empty stand-in for a lost one). Lists the state for the message.
        var stateSeen: [String] = []
        /// The state is only the database's own `-wal`, `-shm` and `-journal` files, which
        /// opening the database creates: a database that (with its WAL applied) holds no
        /// table but an empty `schema_migrations` is then a first start killed before its
        /// first migration committed, not a lost one.
        var journalFilesOnly = false
    }

    /// - Returns: what the checks after opening must do.
    /// - Throws: `StartupRefusal`.
    static func preflightSQLite(
        dataDir: String, databasePath path: String, options: StartupOptions,
        secretConfigured: Bool, logger: Logger
    ) throws -> SQLitePlan {
        try checkWritable(dataDir, role: "data dir")
        let databaseDir = (path as NSString).deletingLastPathComponent
        if !databaseDir.isEmpty, databaseDir != dataDir { try checkWritable(databaseDir, role: "database directory") }
        var info = stat()
        let exists = stat(path, &info) == 0
        var state = stateFiles(dataDir: dataDir, databasePath: path)
        if secretConfigured { state.removeAll { $0 == dataDir + "/jwt-secret" } }
        let journalFiles = ["-wal", "-shm", "-journal"].map { path + $0 }
        let journalFilesOnly = !state.isEmpty && state.allSatisfy(journalFiles.contains)
        let walPresent = (fileSize(path + "-wal") ?? 0) > 0
        // A database that was never checkpointed is an empty main file and a WAL holding
        // everything (kill -9 soon after the first start): open it and let the checks decide.
        if exists, info.st_size > 0 || walPresent {
            if options.initEmpty {
                throw StartupRefusal(
                    description: "--init-empty starts a data dir whose database is missing or empty, but "
                        + "\(path) holds a database: start without --init-empty (to start over, move the "
                        + "data dir aside first)", exitCode: ExitCode.usage)
            }
            if access(path, R_OK | W_OK) != 0 {
                throw StartupRefusal(
                    description: "\(path) is not readable and writable by the server's user "
                        + "(\(String(cString: strerror(errno)))): fix its owner or mode (0600)",
                    exitCode: ExitCode.notWritable)
            }
            guard info.st_size > 0 else {
                return SQLitePlan(forceQuickCheck: true, stateSeen: state, journalFilesOnly: journalFilesOnly)
            }
            do {
                let short = try SQLiteStartupCheck.checkHeader(path: path, walPresent: walPresent)
                return SQLitePlan(forceQuickCheck: short, stateSeen: state, journalFilesOnly: journalFilesOnly)
            } catch let problem as SQLiteStartupCheck.Problem {
                throw damaged(path, problem)
            }
        }
        // A zero-length database beside nothing but its own journal files (kill -9 while the
        // first start switched it to WAL): open it and let the checks after opening decide.
        if exists, journalFilesOnly, !options.initEmpty {
            return SQLitePlan(forceQuickCheck: true, stateSeen: state, journalFilesOnly: true)
        }
        if exists { state.insert(path, at: 0) }
        guard !state.isEmpty else { return SQLitePlan() }  // a new data dir: the first start
        let what = exists ? "\(path) is empty (0 bytes)" : "\(path) is missing"
        guard options.initEmpty else {
            throw StartupRefusal(
                description: "\(what) but the data dir holds a server's state (\(names(state))): the "
                    + "database was lost, and starting would serve an empty database to existing accounts. "
                    + "To recover, \(restoreHint). To start over with an empty database on purpose, start "
                    + "once with --init-empty (the leftovers are moved aside and a new token secret is made: "
                    + "everyone signs up or in again)", exitCode: ExitCode.dataError)
        }
        // --init-empty: keep the leftovers for inspection, out of the way.
        let stamp = Int(Date().timeIntervalSince1970)
        var moved = 0
        for file in [path, path + "-wal", path + "-shm", path + "-journal", path + "-position", dataDir + "/jwt-secret"]
        where FileManager.default.fileExists(atPath: file) && !(secretConfigured && file.hasSuffix("/jwt-secret")) {
            guard rename(file, "\(file).orphaned-\(stamp)") == 0 else {
                throw StartupRefusal(
                    description: "--init-empty cannot move \(file) aside (\(String(cString: strerror(errno)))): "
                        + "move it yourself, then start again", exitCode: ExitCode.ioError)
            }
            moved += 1
        }
        logger.warning("init_empty", .count("movedAside", moved))
        return SQLitePlan()
    }

    /// After the integrity check: beside state, the database must hold the Suplash schema.
    /// - Throws: `StartupRefusal` (65).
    static func checkSQLiteHoldsData(_ database: SQLiteDatabase, plan: SQLitePlan) throws {
        guard !plan.stateSeen.isEmpty else { return }
        let migrated = try database.read { c in
            try c.scalarInt64("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'") == 1
                && (try c.scalarInt64("SELECT count(*) FROM schema_migrations") ?? 0) > 0
        }
        guard !migrated else { return }
        // Nothing but (an empty) `schema_migrations`, which the migrator creates before the
        // first migration: a first start killed before its first migration; nothing was lost.
        if plan.journalFilesOnly,
            try database.read({
                try $0.scalarInt64("SELECT count(*) FROM sqlite_schema WHERE name <> 'schema_migrations'") ?? 0
            }) == 0
        {
            return
        }
        throw StartupRefusal(
            description: "\(database.path) holds no Suplash data but the data dir holds a server's "
                + "state (\(names(plan.stateSeen))): the database was lost or replaced. To recover, "
                + "\(restoreHint). To start over with an empty database on purpose, move it aside and "
                + "start once with --init-empty", exitCode: ExitCode.dataError)
    }

    /// The refusal for a damaged database file.
    static func damaged(_ path: String, _ problem: SQLiteStartupCheck.Problem) -> StartupRefusal {
        if case .foreignWAL = problem {
            return StartupRefusal(
                description: "\(path) \(problem). When restoring a backup, move \(path)-wal and \(path)-shm "
                    + "aside (keep them until the restore is verified) and start again; otherwise \(restoreHint)",
                exitCode: ExitCode.dataError)
        }
        if case .unreadable = problem {
            return StartupRefusal(
                description: "\(path) \(problem): fix its owner or mode (0600), or \(restoreHint)",
                exitCode: ExitCode.notWritable)
        }
        return StartupRefusal(
            description: "\(path) \(problem). Stop, move \(path) and its -wal and -shm files aside "
                + "(keep them for inspection), then \(restoreHint). A newer backup loses less; devices "
                + "push back what they hold (docs/sync.md)", exitCode: ExitCode.dataError)
    }

    /// The refusal for a SQLite database that cannot be opened (`StorageError` kinds).
    static func openFailed(_ path: String, _ error: StorageError) -> StartupRefusal {
        switch error.kind {
        case .corrupt:
            return damaged(path, .corrupt(check: "open", finding: error.description))
        case .readOnly:
            return StartupRefusal(
                description: "\(path) can only be opened read-only (\(error)): make it and its "
                    + "directory writable for the server's user, or mount the file system read-write",
                exitCode: ExitCode.notWritable)
        case .busy:
            return StartupRefusal(
                description: "\(path) is locked by another process (\(error)): stop the other "
                    + "process, then start again", exitCode: ExitCode.temporary)
        case .full:
            return StartupRefusal(
                description: "\(path): the disk is full (\(error)): free space, then start again",
                exitCode: ExitCode.ioError)
        default:
            return StartupRefusal(
                description: "cannot open \(path) (\(error)): check the file, its directory and "
                    + "the disk; if it is damaged, \(restoreHint)", exitCode: ExitCode.ioError)
        }
    }

    /// After the SQLite database is opened, before migrations: the bounded integrity check.
    /// - Throws: `StartupRefusal` (65) with the first finding.
    static func checkSQLiteIntegrity(_ database: SQLiteDatabase, forceQuickCheck: Bool, logger: Logger) throws {
        do {
            let report = try SQLiteStartupCheck.checkIntegrity(database, forceQuickCheck: forceQuickCheck)
            logger.info(
                "startup_integrity_check", .number("quickCheck", report.method == "quick_check" ? 1 : 0),
                .number("bytes", Int(report.bytes)), .number("ms", report.milliseconds))
        } catch let problem as SQLiteStartupCheck.Problem {
            throw damaged(database.path, problem)
        }
    }

    /// On PostgreSQL, before migrations: the database takes writes (not a standby, not
    /// read-only by default), and a database without the Suplash schema beside a data dir
    /// that holds state is refused unless `--init-empty`.
    /// - Throws: `StartupRefusal`.
    static func preflightPostgres(_ database: PostgresDatabase, dataDir: String, options: StartupOptions) throws {
        try checkWritable(dataDir, role: "data dir")
        let readOnly: Bool
        do {
            readOnly = try database.read { c in
                let recovery = try c.query("SELECT pg_is_in_recovery()").first?[0] == .integer(1)
                let flag = try c.query("SELECT current_setting('transaction_read_only')").first?[0] == .text("on")
                return recovery || flag
            }
        } catch {
            throw StartupRefusal(
                description: "cannot query PostgreSQL (storage.postgresUrl): check that the database "
                    + "is up and reachable, then start again", exitCode: ExitCode.temporary)
        }
        if readOnly {
            throw StartupRefusal(
                description: "the PostgreSQL database (storage.postgresUrl) is read-only (a standby, or "
                    + "default_transaction_read_only is on): point storage.postgresUrl at the primary",
                exitCode: ExitCode.notWritable)
        }
        let applied = (try? PostgresMigrator.applied(database)) ?? []
        var state = stateFiles(dataDir: dataDir, databasePath: nil)
        let sqliteFile = dataDir + "/suplash.sqlite"
        if (fileSize(sqliteFile) ?? 0) > 0 { state.append(sqliteFile) }
        guard applied.isEmpty, !state.isEmpty, !options.initEmpty else { return }
        throw StartupRefusal(
            description: "the PostgreSQL database (storage.postgresUrl) has no Suplash schema but the "
                + "data dir \(dataDir) holds a server's state (\(names(state))): the database may have been "
                + "dropped or replaced. To recover, \(restoreHint); when moving from SQLite, run "
                + "`suplash-server migrate-data` first. To start over with an empty database on purpose, "
                + "start once with --init-empty", exitCode: ExitCode.dataError)
    }

    /// The refusal for a token secret that is gone while the database holds accounts.
    static func secretMissing(_ where: String, accounts: String) -> StartupRefusal {
        StartupRefusal(
            description: "\(`where`) is missing but \(accounts) holds accounts: every access, refresh, page "
                + "and sync token was signed with it, and a new secret would sign everyone out. Restore it "
                + "from the backup of this data dir (or set auth.jwtSecret to the old secret). To continue "
                + "with a new secret on purpose, start once with --new-jwt-secret", exitCode: ExitCode.dataError)
    }
}

/// Size of the file at `path` in bytes, or nil when it does not exist.
func fileSize(_ path: String) -> Int64? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return Int64(info.st_size)
}
