import Foundation
import SuplashHealthImport
import SuplashKit

/// `suplash`: the command-line client of a Suplash Sync server (see docs/client.md, "CLI reference").
@main
struct SuplashCLI {
    static func main() async {
        var arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
        let json = arguments.flag("--json")
        let output = Output(json: json)
        do {
            try await run(&arguments, output)
            exit(0)
        } catch let error as UsageError {
            output.error("usage: \(error.message)\n\n\(usage)")
            exit(2)
        } catch let error as SuplashError {
            output.error(error.description)
            switch error {
            case .notSignedIn, .sessionEnded: exit(3)
            case .offline: exit(4)
            default: exit(1)
            }
        } catch {
            output.error(String(describing: error))
            exit(1)
        }
    }

    static let usage = """
        suplash [--json] [--server URL] COMMAND
          signup --email EMAIL [--name NAME]     create an account (password: $SUPLASH_PASSWORD or prompt)
          login --email EMAIL                    sign in (password: $SUPLASH_PASSWORD or prompt)
          logout                                 revoke and forget the session
          log ML [--at TIME] [--source SOURCE] [--note TEXT]
                                                 log water (TIME: RFC 3339 or HH:MM today); works offline
          today                                  today's total, goal and last entries
          history [--days N]                     daily totals of the last N days (default 7)
          sync                                   push unsent writes, pull changes
          bills                                  water bills
          export [--output FILE]                 all your data as JSON
          import-health FILE [--include-suplash] [--dry-run]
                                                 import water from Apple Health export.xml / export.zip
                                                 (--dry-run: read and count only, upload nothing)
        """

    static func run(_ arguments: inout Arguments, _ output: Output) async throws {
        let server = arguments.option("--server")
        guard let command = arguments.next() else { throw UsageError("no command") }
        if command == "help" || command == "--help" || command == "-h" {
            output.line(usage)
            return
        }
        let context = try Context(server: server)
        switch command {
        case "signup", "login":
            guard let email = arguments.option("--email") else { throw UsageError("\(command) needs --email") }
            let name = arguments.option("--name")
            try arguments.finish()
            let password = try readPassword()
            let client = try context.client(requireSession: false)
            if command == "signup" {
                try await client.signUp(email: email, password: password, displayName: name)
            } else {
                try await client.signIn(email: email, password: password)
            }
            let uid = await client.userID ?? ""
            _ = try? await client.sync()
            output.result(
                ["userId": uid, "server": context.serverURL.absoluteString],
                human: "Signed in as \(email) on \(context.serverURL.absoluteString).")
        case "logout":
            try arguments.finish()
            try await context.client(requireSession: false).signOut()
            output.result(["signedOut": true], human: "Signed out.")
        case "log":
            try await Commands.log(&arguments, context, output)
        case "today":
            try arguments.finish()
            try await Commands.today(context, output)
        case "history":
            let days = try arguments.intOption("--days", in: 1...366) ?? 7
            try arguments.finish()
            try await Commands.history(days: days, context, output)
        case "sync":
            try arguments.finish()
            let client = try context.client()
            let report = try await client.sync()
            let pending = try await client.pendingCount()
            output.result(
                [
                    "applied": report.applied, "superseded": report.superseded, "rejected": report.rejected,
                    "pulled": report.pulled, "pending": pending, "snapshot": report.restartedFromSnapshot,
                    "healedServer": report.healedServer, "pushedBack": report.pushedBack,
                ],
                human: "Pushed \(report.applied) (\(report.superseded) superseded, \(report.rejected) rejected), "
                    + "pulled \(report.pulled) changes\(report.restartedFromSnapshot ? " (full snapshot)" : "")"
                    + (report.healedServer
                        ? "; the server's history had changed: gave back \(report.pushedBack) "
                            + "local changes it lacked" : "") + ".")
        case "bills":
            try arguments.finish()
            try await Commands.bills(context, output)
        case "export":
            let file = arguments.option("--output")
            try arguments.finish()
            let data = try await context.client().get("/v1/users/me/export")
            if let file {
                try data.write(to: URL(fileURLWithPath: file), options: .atomic)
                output.result(["path": file, "bytes": data.count], human: "Wrote \(data.count) bytes to \(file).")
            } else {
                FileHandle.standardOutput.write(data)
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        case "import-health":
            let includeOwn = arguments.flag("--include-suplash")
            let dryRun = arguments.flag("--dry-run")
            guard let file = arguments.next() else { throw UsageError("import-health needs FILE") }
            try arguments.finish()
            if dryRun {
                try await Commands.readHealth(file: file, includeOwn: includeOwn, output)
            } else {
                try await Commands.importHealth(file: file, includeOwn: includeOwn, context, output)
            }
        default:
            throw UsageError("unknown command \(command)")
        }
    }

    /// `$SUPLASH_PASSWORD`, else a prompt without echo on a terminal, else one line of stdin.
    static func readPassword() throws -> String {
        if let p = ProcessInfo.processInfo.environment["SUPLASH_PASSWORD"], !p.isEmpty { return p }
        if isatty(0) == 1 {
            FileHandle.standardError.write(Data("Password: ".utf8))
            var old = termios()
            tcgetattr(0, &old)
            var silent = old
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSANOW, &silent)
            defer {
                tcsetattr(0, TCSANOW, &old)
                FileHandle.standardError.write(Data("\n".utf8))
            }
            return readLine(strippingNewline: true) ?? ""
        }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw UsageError("no password (set SUPLASH_PASSWORD or pipe it on stdin)")
        }
        return line
    }
}

/// Paths and the client.
struct Context {
    let serverURL: URL
    let credentials: FileCredentialStore
    let databasePath: String

    init(server: String?) throws {
        let environment = ProcessInfo.processInfo.environment
        credentials = FileCredentialStore.default()
        let stored = try? credentials.load()
        let text = server ?? environment["SUPLASH_SERVER"] ?? stored?.serverURL.absoluteString ?? "http://127.0.0.1:8080"
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw UsageError("bad server URL \(text)")
        }
        serverURL = url
        let dataHome =
            environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.local/share")
        databasePath = dataHome + "/suplash/store.sqlite"
    }

    func client(requireSession: Bool = true) throws -> SuplashClient {
        // A CLI answers promptly: three attempts, then it reports (writes stay in the outbox).
        let client = try SuplashClient(
            SuplashConfiguration(
                serverURL: serverURL, databasePath: databasePath, credentials: credentials,
                retry: RetryPolicy(maxAttempts: 3, baseDelay: 0.3, maxDelay: 10)))
        if requireSession, (try? credentials.load()) == nil { throw SuplashError.notSignedIn }
        return client
    }
}

struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Command-line arguments, consumed as they are recognised.
struct Arguments {
    private var items: [String]
    init(_ items: [String]) { self.items = items }

    mutating func flag(_ name: String) -> Bool {
        guard let i = items.firstIndex(of: name) else { return false }
        items.remove(at: i)
        return true
    }

    mutating func option(_ name: String) -> String? {
        guard let i = items.firstIndex(of: name), i + 1 < items.count else { return nil }
        let value = items[i + 1]
        items.removeSubrange(i...(i + 1))
        return value
    }

    mutating func intOption(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = option(name) else { return nil }
        guard let n = Int(text), range.contains(n) else {
            throw UsageError("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }

    mutating func next() -> String? {
        guard let i = items.firstIndex(where: { !$0.hasPrefix("--") }) else { return nil }
        return items.remove(at: i)
    }

    func finish() throws {
        if let extra = items.first { throw UsageError("unexpected argument \(extra)") }
    }
}

/// Human text on stdout, or one JSON document with `--json`; errors on stderr.
struct Output: Sendable {
    let json: Bool

    func line(_ text: String) { print(text) }

    func result(_ object: [String: Any], human: @autoclosure () -> String) {
        if json {
            if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
                print(String(decoding: data, as: UTF8.self))
            }
        } else {
            print(human())
        }
    }

    func raw(_ data: Data, human: @autoclosure () -> String) {
        if json { print(String(decoding: data, as: UTF8.self)) } else { print(human()) }
    }

    func error(_ text: String) {
        if json {
            let object = ["error": text]
            if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
                FileHandle.standardError.write(data + Data("\n".utf8))
            }
        } else {
            FileHandle.standardError.write(Data("suplash: \(text)\n".utf8))
        }
    }
}
