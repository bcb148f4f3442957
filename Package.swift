// swift-tools-version:6.0
// Suplash Sync — a self-hosted backend for the Suplash hydration app.
// Targets have one job each; see docs/ARCHITECTURE.md for the map.
import PackageDescription

let package = Package(
    name: "suplash-sync",
    products: [
        .executable(name: "suplash-server", targets: ["suplash-server"]),
        .library(name: "SuplashKit", targets: ["SuplashKit"]),
        .executable(name: "suplash", targets: ["suplash"]),
    ],
    targets: [
        // MARK: C libraries (system-library targets and one tiny shim)
        .target(name: "CEpoll", path: "Sources/CEpoll"),
        .target(name: "CMalloc", path: "Sources/CMalloc"),
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CArgon2", path: "Sources/CArgon2", providers: [.apt(["libargon2-dev"])]),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(
            name: "CLibXML2", path: "Sources/CLibXML2", pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(
            name: "CPostgreSQL", path: "Sources/CPostgreSQL", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(
            name: "CArchive", path: "Sources/CArchive", pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]),
        // libcurl built with nghttp2 (Debian's OpenSSL flavour) for outbound HTTP/2.
        .systemLibrary(
            name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),

        // MARK: Leaf libraries
        .target(name: "SuplashLogging"),
        .target(name: "SuplashJSON"),
        .target(name: "SuplashCrypto", dependencies: ["COpenSSL", "CArgon2", "SuplashJSON"]),

        // MARK: HTTP engine (knows nothing of water)
        .target(name: "SuplashHTTP", dependencies: ["CEpoll", "SuplashLogging"]),

        // MARK: Outbound HTTP/2 client (libcurl multi on its own thread; knows nothing of water)
        .target(name: "SuplashHTTPClient", dependencies: ["CCurl"]),

        // MARK: Apple Push Notification service: provider tokens, requests, outcomes, sender
        .target(name: "SuplashAPNs", dependencies: ["SuplashHTTPClient", "SuplashCrypto", "SuplashJSON", "SuplashLogging"]),

        // MARK: Sign in with Apple's REST API: client secret, token and revoke requests, outcomes (knows Apple, not water)
        .target(name: "SuplashAppleID", dependencies: ["SuplashHTTPClient", "SuplashCrypto", "SuplashJSON"]),

        // MARK: Dialect-neutral SQL layer (no C): values, row access, migration planning, dialects
        .target(name: "SuplashSQL"),

        // MARK: Storage engine (SQLite connection, writer + reader pool, migrations)
        .target(name: "SuplashStorage", dependencies: ["CSQLite", "SuplashCrypto", "SuplashLogging", "SuplashSQL"]),

        // MARK: Domain: models, validation, rules, repository protocols (pure, no I/O)
        .target(name: "SuplashDomain", dependencies: ["SuplashJSON"]),

        // MARK: Row mappings shared by both repository adapters (columns, row → model, model → values)
        .target(name: "SuplashStoreRows", dependencies: ["SuplashDomain", "SuplashSQL"]),

        // MARK: Use cases written once over a transaction protocol (no C engine); both adapters conform
        .target(name: "SuplashStoreCore", dependencies: ["SuplashDomain", "SuplashSQL", "SuplashStoreRows", "SuplashJSON"]),

        // MARK: Repository adapters for SQLite
        .target(
            name: "SuplashSQLiteStore",
            dependencies: [
                "SuplashDomain", "SuplashSQL", "SuplashStorage", "SuplashStoreCore", "SuplashStoreRows", "SuplashJSON",
            ]),

        // MARK: PostgreSQL: libpq connection + pool + migrator, and the repository adapters on it
        // (`storage.driver = postgres`, any number of instances on one database).
        .target(name: "SuplashPostgres", dependencies: ["CPostgreSQL", "SuplashSQL"]),
        .target(
            name: "SuplashPostgresStore",
            dependencies: [
                "SuplashDomain", "SuplashPostgres", "SuplashSQL", "SuplashStoreCore", "SuplashStoreRows", "SuplashJSON",
            ]),

        // MARK: `migrate-data`: copies a SQLite deployment into PostgreSQL — the one library
        // that sees both engines (used by the executable only).
        .target(name: "SuplashDataMigration", dependencies: ["SuplashPostgres", "SuplashSQL", "SuplashStorage"]),

        // MARK: The API: routes, auth, problems
        .target(
            name: "SuplashAPI",
            dependencies: [
                "SuplashHTTP", "SuplashDomain", "SuplashJSON", "SuplashCrypto", "SuplashLogging", "CZlib",
                // Outbound HTTP (mail provider, Apple's key set) on libcurl, not URLSession, so
                // FoundationNetworking is not linked into the server.
                "SuplashHTTPClient",
            ]),

        // MARK: The executable: CLI, config, wiring
        .executableTarget(
            name: "suplash-server",
            dependencies: [
                "CMalloc", "SuplashAPI", "SuplashHTTP", "SuplashSQLiteStore", "SuplashStorage", "SuplashDomain",
                "SuplashCrypto", "SuplashLogging", "SuplashJSON", "SuplashPostgres", "SuplashPostgresStore", "SuplashSQL",
                "SuplashDataMigration", "SuplashAppleID", "SuplashAPNs", "SuplashHTTPClient",
            ]),

        // MARK: The client side: SuplashKit serves the apps too, so it uses only
        // Foundation (URLSession), SQLite and zlib — SQLite3 on Apple platforms, CSQLite here.
        .target(
            name: "SuplashKit",
            dependencies: [
                .target(name: "CSQLite", condition: .when(platforms: [.linux])), "CZlib",
            ]),
        // Apple Health export reader (Linux CLI only): libxml2 SAX, libarchive for export.zip.
        .target(name: "SuplashHealthImport", dependencies: ["SuplashKit", "SuplashCrypto", "CLibXML2", "CArchive"]),
        .executableTarget(name: "suplash", dependencies: ["SuplashKit", "SuplashHealthImport"]),

        // MARK: Benchmarks run by hand (Benchmarks/apns/README.md), not in CI
        .executableTarget(
            name: "apns-bench", dependencies: ["SuplashAPNs", "SuplashHTTPClient", "SuplashCrypto", "SuplashJSON", "SuplashLogging"],
            path: "Benchmarks/apns", exclude: ["README.md"]),

        // MARK: Tests mirror the targets
        .testTarget(name: "SuplashLoggingTests", dependencies: ["SuplashLogging"]),
        .testTarget(name: "SuplashJSONTests", dependencies: ["SuplashJSON"]),
        .testTarget(name: "SuplashCryptoTests", dependencies: ["SuplashCrypto"]),
        .testTarget(name: "SuplashHTTPTests", dependencies: ["SuplashHTTP"]),
        // Outbound client and APNs: unit tests, plus integration tests against the mock APNs
        // server (Tests/Mocks/apns_mock.py), skipped unless SUPLASH_TEST_APNS_MOCK is set
        // (scripts/with-apns-mock).
        .testTarget(
            name: "SuplashAPNsTests",
            dependencies: [
                "SuplashAPNs", "SuplashHTTPClient", "SuplashCrypto", "SuplashJSON",
            ]),
        .testTarget(name: "SuplashAppleIDTests", dependencies: ["SuplashAppleID", "SuplashHTTPClient", "SuplashCrypto", "SuplashJSON"]),
        .testTarget(name: "SuplashSQLTests", dependencies: ["SuplashSQL"]),
        .testTarget(name: "SuplashStorageTests", dependencies: ["SuplashStorage", "SuplashSQL", "CSQLite"]),
        .testTarget(name: "SuplashStoreCoreTests", dependencies: ["SuplashStoreCore", "SuplashSQL"]),
        .testTarget(name: "SuplashDomainTests", dependencies: ["SuplashDomain", "SuplashJSON"]),
        .testTarget(
            name: "SuplashAPITests",
            dependencies: [
                "SuplashAPI", "SuplashHTTP", "SuplashSQLiteStore", "SuplashStorage", "SuplashSQL", "SuplashDomain",
                "SuplashCrypto", "SuplashJSON", "SuplashStoreCore",
                // Test-only RSA key generation and RS256 signing for Sign in with Apple tokens.
                "COpenSSL",
            ]),
        // PostgreSQL store tests: skipped unless SUPLASH_TEST_POSTGRES_URL is set
        // (scripts/with-postgres). The behavioural checks also run against SQLite.
        .testTarget(
            name: "SuplashPostgresTests",
            dependencies: [
                "SuplashPostgres", "SuplashPostgresStore", "SuplashSQLiteStore", "SuplashStorage", "SuplashDomain", "SuplashAPI",
                "SuplashHTTP", "SuplashSQL", "SuplashDataMigration", "SuplashCrypto", "SuplashStoreCore",
            ]),
        .testTarget(
            name: "SuplashKitTests", dependencies: ["SuplashKit", "SuplashHealthImport"],
            exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)
