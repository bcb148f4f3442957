import Foundation
import SuplashDomain
import SuplashPostgres
import SuplashSQL
import SuplashSQLiteStore
import SuplashStorage

/// How a failed command is reported: one line naming the file, what is wrong and what to
/// do, and the exit code (`ExitCode`, docs/operations.md "CLI exit codes"). Messages carry
/// paths, configuration keys and error kinds only — never data from the files.
enum CLIError {
    static func describe(_ error: any Error, database: String?) -> (String, Int32) {
        let name = database ?? "the database"
        switch error {
        case let e as StartupRefusal: return (e.description, e.exitCode)
        case let e as Settings.LoadError: return (e.description, ExitCode.failure)
        case let e as MigrationError: return (e.description, ExitCode.dataError)
        case let e as ParsedCommandLine.UsageError: return (e.description, ExitCode.usage)
        case let e as StorageError:
            switch e.kind {
            case .corrupt:
                return (
                    "\(name) is damaged (\(e)): stop the server, move it and its -wal and -shm files aside, then "
                        + StartupChecks.restoreHint, ExitCode.dataError
                )
            case .full:
                return ("the disk holding \(name) is full (\(e)): free space, then run the command again", ExitCode.ioError)
            case .readOnly:
                return ("\(name) is read-only (\(e)): make it and its directory writable for this user", ExitCode.notWritable)
            case .busy:
                return (
                    "\(name) is locked by another process (\(e)): retry, or raise storage.busyTimeoutMs",
                    ExitCode.temporary
                )
            case .ioError:
                return ("I/O error on \(name) (\(e)): check the disk and the file system", ExitCode.ioError)
            default:
                return ("\(name): \(e)", ExitCode.failure)
            }
        case let e as PostgresError:
            return (
                "PostgreSQL (storage.postgresUrl) failed: \(e.kind.rawValue); check that it is up and reachable",
                ExitCode.temporary
            )
        case let e as RepositoryError:
            switch e {
            case .unavailable:
                return (
                    "\(name) could not be read or written: check the disk (space, permissions) and that the "
                        + "database is reachable, then run the command again", ExitCode.ioError
                )
            default:
                return ("\(name) refused the operation (\(e))", ExitCode.failure)
            }
        default:
            return ("failed: \(String(reflecting: type(of: error)))", ExitCode.failure)
        }
    }
}

/// `backup --to FILE`: a consistent online snapshot, also while a server runs.
enum BackupCommand {
    /// Refuses a destination that exists or whose directory is missing or not writable,
    /// before the database is opened.
    /// - Throws: `StartupRefusal` (73, 77).
    static func checkDestination(_ destination: String) throws {
        if FileManager.default.fileExists(atPath: destination) {
            throw StartupRefusal(
                description: "\(destination) exists: a backup never overwrites a file. Choose a new "
                    + "name (e.g. with the date), or move the old file away", exitCode: ExitCode.cannotCreate)
        }
        let directory = (destination as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw StartupRefusal(
                description: "the directory \(dir) of \(destination) does not exist: create it "
                    + "(mkdir -p \(dir)) or choose another path", exitCode: ExitCode.cannotCreate)
        }
        if access(dir, W_OK) != 0 {
            throw StartupRefusal(
                description: "the directory \(dir) of \(destination) is not writable "
                    + "(\(String(cString: strerror(errno)))): choose another path or fix its permissions",
                exitCode: ExitCode.notWritable)
        }
    }

    /// Writes the snapshot; on SQLite the copy gets a new database id (`SQLiteStore.backup`).
    /// - Returns: its size in bytes.
    /// - Throws: `StartupRefusal` naming the destination when the copy fails.
    static func run(_ backend: StorageBackend, to destination: String) throws -> Int64 {
        switch backend {
        case .sqlite(let database):
            do {
                return try database.backup(to: destination, prepareCopy: SQLiteStore.forkHistory)
            } catch let error as StorageError {
                switch error.kind {
                case .full:
                    throw StartupRefusal(
                        description: "the disk holding \(destination) is full (\(error)): free space or "
                            + "choose another disk; nothing was left behind", exitCode: ExitCode.ioError)
                case .corrupt:
                    throw StartupRefusal(
                        description: "\(database.path) is damaged (\(error)): the backup was not "
                            + "written; \(StartupChecks.restoreHint)", exitCode: ExitCode.dataError)
                default:
                    throw StartupRefusal(
                        description: "cannot write the backup \(destination) (\(error)): check the "
                            + "disk and permissions there; nothing was left behind", exitCode: ExitCode.ioError)
                }
            }
        case .postgres:
            do {
                return try backend.makeStore().store.backup(to: destination)
            } catch {
                throw StartupRefusal(
                    description: "pg_dump to \(destination) failed: check that pg_dump is on PATH, "
                        + "PostgreSQL is reachable and the directory has space", exitCode: ExitCode.ioError)
            }
        }
    }
}
