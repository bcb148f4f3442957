import Foundation
import SuplashDataMigration
import SuplashLogging
import SuplashPostgres
import SuplashPostgresStore
import SuplashStorage

/// `migrate-data --from sqlite:PATH --to postgres:URL [--force]`: copies a (live) SQLite
/// deployment into PostgreSQL and verifies it (see `SQLiteToPostgresCopy`).
///
/// `PATH` is the SQLite file or the data dir holding `suplash.sqlite`. `URL` is a libpq URL
/// or connection string; `--to` may be left out when `storage.postgresUrl` is configured,
/// `--from` when the data dir (`--data-dir`, `server.dataDir`) is the source. Prints a table of
/// table names and row counts — never row contents, never the URL. Exit 0 when verified,
/// 1 on a refusal, an error or a count mismatch.
enum MigrateDataCommand {
    static func run(_ parsed: ParsedCommandLine, settings: Settings, logger: Logger) throws -> Int32 {
        let sqlitePath = try sourcePath(parsed.options["from"], settings: settings)
        let url = try targetURL(parsed.options["to"], settings: settings)
        let force = parsed.switches.contains("force")

        let migrations = try Migrator.load(
            directory: try ResourceLocator.locate(
                "Migrations/postgres", configured: settings.storage.postgresMigrationsDir, directory: true,
                configKey: "storage.postgresMigrationsDir"))
        let target: PostgresDatabase
        do {
            target = try PostgresDatabase(url: url, poolSize: 2)
        } catch let error as PostgresError {
            // The server's text may echo the URL (with a password): report the kind only.
            throw ParsedCommandLine.UsageError(description: "cannot connect to PostgreSQL (--to): \(error.kind.rawValue)")
        }
        defer { target.close() }

        let report: SQLiteToPostgresCopy.Report
        do {
            let applied = try PostgresMigrator.migrate(target, migrations)
            if applied > 0 { print("PostgreSQL: applied \(applied) migration(s)") }
            report = try SQLiteToPostgresCopy.run(sqlitePath: sqlitePath, target: target, force: force)
        } catch let failure as SQLiteToPostgresCopy.Failure {
            StandardStreams.error("suplash-server: migrate-data refused: \(failure.description)\n")
            return 1
        } catch let error as PostgresError {
            StandardStreams.error("suplash-server: migrate-data failed on PostgreSQL: \(error.description)\n")
            return 1
        } catch let error as StorageError {
            StandardStreams.error("suplash-server: migrate-data failed reading SQLite: \(error.kind)\n")
            return 1
        }
        print(render(report))
        print(seedJWTSecret(sqlitePath: sqlitePath, target: target))
        if report.verified {
            print("verified: every table's row count and highest change position match")
            return 0
        }
        StandardStreams.error("suplash-server: migrate-data: verification FAILED (see the table)\n")
        return 1
    }

    /// Seeds the database's shared JWT secret (`server_secrets`, read by every instance on
    /// PostgreSQL) with the SQLite deployment's `jwt-secret` file, beside the database file,
    /// so access, refresh, page and sync tokens issued by the SQLite server stay valid. An
    /// already stored secret is kept (`INSERT … ON CONFLICT DO NOTHING`). Returns one line
    /// for the report, which names the outcome, never the secret.
    static func seedJWTSecret(sqlitePath: String, target: PostgresDatabase) -> String {
        let directory = (sqlitePath as NSString).deletingLastPathComponent
        guard let file = Environment.readSecretFile((directory.isEmpty ? "." : directory) + "/jwt-secret") else {
            return "jwt secret: no jwt-secret file beside the SQLite database; instances use auth.jwtSecret or the one stored in PostgreSQL"
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        guard let stored = try? PostgresStore(database: target).sharedSecret(name: "jwt", candidate: file, now: now) else {
            return "jwt secret: could not be stored in PostgreSQL (re-run migrate-data)"
        }
        return stored == file
            ? "jwt secret: the data dir's jwt-secret is the shared secret in PostgreSQL (issued tokens stay valid)"
            : "jwt secret: PostgreSQL already holds a different secret; tokens issued by the SQLite server will be refused unless auth.jwtSecret is set to the old one"
    }

    /// `sqlite:PATH` (or a bare path): the file itself, or `PATH/suplash.sqlite` for a data dir.
    static func sourcePath(_ option: String?, settings: Settings) throws -> String {
        var path: String
        if let option {
            path = option.hasPrefix("sqlite:") ? String(option.dropFirst("sqlite:".count)) : option
        } else {
            path = settings.storage.sqlitePath
            if path.isEmpty { path = settings.server.dataDir }
        }
        guard !path.isEmpty else { throw ParsedCommandLine.UsageError(description: "migrate-data needs --from sqlite:PATH") }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            path += "/suplash.sqlite"
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw ParsedCommandLine.UsageError(description: "migrate-data: no SQLite database at \(path)")
        }
        return path
    }

    /// `postgres:URL`, a `postgres://`/`postgresql://` URL, or `storage.postgresUrl`.
    static func targetURL(_ option: String?, settings: Settings) throws -> String {
        var url = option ?? settings.storage.postgresUrl
        if url.hasPrefix("postgres:") && !url.hasPrefix("postgres://") {
            url = String(url.dropFirst("postgres:".count))
        }
        guard !url.isEmpty else {
            throw ParsedCommandLine.UsageError(description: "migrate-data needs --to postgres:URL (or storage.postgresUrl)")
        }
        return url
    }

    /// The per-table table: names and counts only.
    static func render(_ report: SQLiteToPostgresCopy.Report) -> String {
        func position(_ value: Int64?) -> String { value.map(String.init) ?? "-" }
        var rows: [[String]] = [["table", "source rows", "target rows", "written", "deleted", "source max pos", "target max pos", ""]]
        for t in report.tables {
            rows.append([
                t.table, String(t.sourceRows), String(t.targetRows), String(t.written), String(t.deleted),
                position(t.sourceMaxPosition), position(t.targetMaxPosition), t.matches ? "ok" : "MISMATCH",
            ])
        }
        rows.append([
            "change_sequence", String(report.sourceSequence), String(report.targetSequence), "", "", "", "",
            report.targetSequence >= report.sourceSequence ? "ok" : "MISMATCH",
        ])
        rows.append([
            "sync_state.purge_horizon", String(report.sourceHorizon), String(report.targetHorizon), "", "", "", "",
            report.sourceHorizon == report.targetHorizon ? "ok" : "MISMATCH",
        ])
        rows.append([
            "database_identity", "1", "1", "", "", "", "",
            report.databaseID == report.targetDatabaseID ? "ok (same database_id)" : "MISMATCH",
        ])
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines = [
            "schema version \(report.schemaVersion)"
                + (report.replacedAll ? "; a secondary unique key changed hands, so the target was replaced in full" : "")
        ]
        for row in rows {
            lines.append(
                row.indices.map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                    .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        if !report.skippedTables.isEmpty {
            lines.append("not copied: \(report.skippedTables.joined(separator: ", "))")
        }
        return lines.joined(separator: "\n")
    }
}
