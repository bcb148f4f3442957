/// Parsed command line: `suplash-server <command> [args] [--flag value]…`.
struct ParsedCommandLine {
    var command: String
    var positional: [String] = []
    var options: [String: String] = [:]
    /// Flags without a value that were given (`--force`).
    var switches: Set<String> = []

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    /// Flags that take a value; every other `--x` is an error.
    /// (`--host`, `--port`, `--data-dir` set configuration keys: `Settings.flagNames`.)
    static let valueFlags: Set<String> = Settings.flagNames.union(["config", "name", "to", "from"])
    /// Flags without a value.
    static let switchFlags: Set<String> = ["force", "markdown", "init-empty", "new-jwt-secret"]

    init(_ arguments: [String]) throws {
        var args = arguments[...]
        command = args.popFirst() ?? "help"
        while let arg = args.popFirst() {
            if arg.hasPrefix("--") {
                var name = String(arg.dropFirst(2))
                var value: String?
                if let eq = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if Self.switchFlags.contains(name) && value == nil {
                    switches.insert(name)
                    continue
                }
                guard Self.valueFlags.contains(name) else { throw UsageError(description: "unknown option --\(name)") }
                if value == nil { value = args.popFirst() }
                guard let value else { throw UsageError(description: "--\(name) needs a value") }
                options[name] = value
            } else {
                positional.append(arg)
            }
        }
    }

    static let usage = """
        usage: suplash-server <command> [options]

        commands:
          serve [--host H] [--port P] [--data-dir DIR] [--config FILE] [--init-empty] [--new-jwt-secret]
                                    check the data dir and the database, apply pending migrations,
                                    then serve HTTP; prints "listening on http://H:P" when ready
                                    (port 0 = any free port). Refuses damaged or missing data:
                                    --init-empty starts over with an empty database on purpose,
                                    --new-jwt-secret replaces a lost token secret (signs everyone out)
          migrate [--data-dir DIR] [--config FILE] [--init-empty]
                                    the same checks, apply pending migrations and exit
          admin-key create --name NAME [--data-dir DIR]
                                    create an admin API key; prints only the key
          admin-key list [--data-dir DIR]
          admin-key revoke NAME [--data-dir DIR]
          routes [--data-dir DIR]   print the route table (method, template) as JSON: what
                                    docs/openapi.json must describe
          backup --to FILE [--data-dir DIR]
                                    write a consistent online snapshot of the database to FILE
                                    (which must not exist), also while a server runs
          migrate-data --from sqlite:PATH --to postgres:URL [--force]
                                    copy a (live) SQLite deployment (PATH: the .sqlite file or the
                                    data dir) into PostgreSQL, then verify row counts per table;
                                    safe to re-run (copies what changed). See docs/postgresql.md
          reseal [--data-dir DIR]   seal every sealed value (Apple refresh tokens, push tokens and
                                    their blind indexes) again with security.sealingKeyFile;
                                    older keys from security.olderSealingKeyFiles (docs/apple.md)
          problem-codes [--markdown]
                                    print every problem code the server can emit as JSON
                                    (code, status, title, type, scope), or docs/errors.md
          config [defaults]         print the effective configuration (or the built-in defaults) as JSON
          config --markdown         print the key table of docs/configuration.md
          help                      this text

        Configuration: config/suplash.json, overridden by SUPLASH_<SECTION>_<KEY> variables,
        overridden by the flags above. See docs/configuration.md.

        Exit codes: 0 ok, 1 configuration or other failure, 64 usage, 65 damaged or missing
        data (refused), 66 no database to read, 73 output file exists or its directory is
        missing, 74 I/O error or disk full, 75 temporarily unavailable (busy, PostgreSQL down),
        77 not writable. See docs/operations.md.
        """
}
