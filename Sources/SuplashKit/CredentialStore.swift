import Foundation

/// Where the session lives between launches. Apps implement it on the Keychain; the CLI
/// uses ``FileCredentialStore``.
///
/// ```swift
/// struct KeychainStore: CredentialStore { … }
/// ```
public protocol CredentialStore: Sendable {
    func load() throws -> Session?
    /// Saves `session`, or removes the stored one when it is nil.
    func save(_ session: Session?) throws
}

/// A JSON file readable by its owner only (mode 0600), written atomically.
///
/// ```swift
/// let store = FileCredentialStore.default()   // $XDG_CONFIG_HOME/suplash/credentials.json
/// ```
public struct FileCredentialStore: CredentialStore {
    public let path: String

    public init(path: String) { self.path = path }

    /// `$XDG_CONFIG_HOME/suplash/credentials.json`, else `~/.config/suplash/credentials.json`.
    public static func `default`(environment: [String: String] = ProcessInfo.processInfo.environment) -> FileCredentialStore {
        FileCredentialStore(path: configDirectory(environment: environment) + "/credentials.json")
    }

    /// `$XDG_CONFIG_HOME/suplash` (absolute values only, as the XDG spec says), else `~/.config/suplash`.
    public static func configDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg + "/suplash" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.config/suplash"
    }

    public func load() throws -> Session? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            return try JSONDecoder().decode(Session.self, from: data)
        } catch {
            throw SuplashError.localStore("credentials file \(path) is damaged; sign in again")
        }
    }

    public func save(_ session: Session?) throws {
        guard let session else {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            return
        }
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = try encoder.encode(session)
        // Create the temporary file 0600 from the start (never briefly world-readable), then rename.
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw SuplashError.localStore("cannot write \(temporary)") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw SuplashError.localStore("cannot write \(path)")
        }
        chmod(path, 0o600)
    }
}

/// Keeps the session in memory only (tests, previews).
public final class MemoryCredentialStore: CredentialStore, @unchecked Sendable {
    private let lock = NSLock()
    private var session: Session?

    public init(_ session: Session? = nil) { self.session = session }

    public func load() throws -> Session? { lock.withLock { session } }
    public func save(_ session: Session?) throws { lock.withLock { self.session = session } }
}
