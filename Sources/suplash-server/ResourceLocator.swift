import Foundation

/// Finds the files the executable ships beside itself (`Migrations/sqlite`,
/// `config/tariffs`, `docs/openapi.json`) when their configuration key is empty.
enum ResourceLocator {
    /// `configured` when it is not empty; else `relativePath` under the working directory or
    /// under a parent of the executable (a build tree such as `.build/release`, or `/app`),
    /// the first that exists as a folder (`directory`) or a regular file.
    /// - Throws: a `Settings.LoadError` naming `relativePath` and `configKey`.
    static func locate(_ relativePath: String, configured: String, directory: Bool, configKey: String) throws -> String {
        if !configured.isEmpty { return configured }
        var candidates = [FileManager.default.currentDirectoryPath + "/" + relativePath]
        var dir = URL(
            fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
        ).deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(dir.path + "/" + relativePath)
            dir = dir.deletingLastPathComponent()
        }
        for c in candidates {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: c, isDirectory: &isDir) && isDir.boolValue == directory {
                return c
            }
        }
        throw Settings.LoadError(description: "cannot find \(relativePath); set \(configKey)")
    }
}
