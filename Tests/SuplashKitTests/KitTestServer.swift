import Foundation
import XCTest

@testable import SuplashKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Starts the real `suplash-server` binary (built next to the test bundle), as
/// Tests/SuplashAPITests/TestServer.swift does, with rate limits off. `restart()` brings it
/// back on the same port and data dir (clients keep their URL across an "outage").
final class KitTestServer: @unchecked Sendable {
    private(set) var process: Process
    let dataDir: String
    private(set) var port: Int
    let environment: [String: String]

    static var executable: String {
        var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? "")
        for _ in 0..<4 {
            dir = dir.deletingLastPathComponent()
            let candidate = dir.appendingPathComponent("suplash-server").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug/suplash-server"
    }

    static var packageRoot: String {
        var dir = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { dir = dir.deletingLastPathComponent() }
        return dir.path
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    init(environment: [String: String] = [:]) throws {
        dataDir = NSTemporaryDirectory() + "suplash-kit-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        self.environment = environment
        (process, port) = try KitTestServer.launch(dataDir: dataDir, port: 0, environment: environment)
    }

    private static func launch(dataDir: String, port: Int, environment: [String: String]) throws -> (Process, Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", String(port), "--data-dir", dataDir]
        process.currentDirectoryURL = URL(fileURLWithPath: packageRoot)
        var env = ProcessInfo.processInfo.environment
        env["SUPLASH_AUTH_ARGON2_MEMORY_KIB"] = "8192"
        env["SUPLASH_AUTH_ARGON2_ITERATIONS"] = "1"
        env["SUPLASH_RATELIMIT_ENABLED"] = "false"
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: "listening on http://127.0.0.1:"),
            let port = Int(text[range.upperBound...].prefix(while: { $0.isNumber }))
        else {
            process.terminate()
            throw SuplashError.invalidResponse("server did not start: \(text)")
        }
        return (process, port)
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }

    func restart() throws {
        stop()
        var lastError: (any Error)?
        for _ in 0..<20 {
            do {
                (process, port) = try KitTestServer.launch(dataDir: dataDir, port: port, environment: environment)
                return
            } catch {
                lastError = error
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
        throw lastError ?? SuplashError.offline("restart")
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: dataDir)
    }

    /// A client with its own SQLite file and in-memory credentials.
    func client(
        _ name: String, credentials: MemoryCredentialStore = MemoryCredentialStore(),
        retry: RetryPolicy = RetryPolicy(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.2),
        databasePath: String? = nil
    ) throws -> SuplashClient {
        try SuplashClient(
            SuplashConfiguration(
                serverURL: url, databasePath: databasePath ?? (dataDir + "/\(name).sqlite"),
                credentials: credentials, retry: retry, requestTimeout: 10))
    }

    /// A raw request (for what SuplashKit does not wrap: PATCH, REST deletes, raw refresh).
    func request(
        _ method: String, _ path: String, body: String? = nil, token: String? = nil,
        headers: [String: String] = [:]
    ) async throws -> (Int, [String: Any]?, [AnyHashable: Any]) {
        var request = URLRequest(url: URL(string: url.absoluteString + path)!)
        request.httpMethod = method
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token { request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        let (data, response) = try await URLSession(configuration: .ephemeral).data(for: request)
        let http = response as? HTTPURLResponse
        return (http?.statusCode ?? 0, JSONRead.object(data), http?.allHeaderFields ?? [:])
    }
}

/// A unique test email.
func testEmail() -> String { "kit\(UUID().uuidString.prefix(8).lowercased())@example.test" }
let testPassword = "correct horse battery"
