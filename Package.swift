// swift-tools-version: 6.0
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "Paperboy",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Paperboy", targets: ["Paperboy"]),
        .library(name: "PaperboyFile", targets: ["PaperboyFile"]),
        .library(name: "PaperboyHTTP", targets: ["PaperboyHTTP"]),
        .library(name: "PaperboyConfig", targets: ["PaperboyConfig"]),
        .library(name: "PaperboyTesting", targets: ["PaperboyTesting"]),
        .library(name: "PaperboyConformance", targets: ["PaperboyConformance"]),
        .library(name: "PaperboyTransportTesting", targets: ["PaperboyTransportTesting"]),
        .library(name: "PaperboyExec", targets: ["PaperboyExec"]),
        .library(name: "PaperboySFTP", targets: ["PaperboySFTP"]),
        .library(name: "PaperboyDaemon", targets: ["PaperboyDaemon"]),
        .library(name: "PaperboyWire", targets: ["PaperboyWire"]),
        .library(name: "PaperboyClient", targets: ["PaperboyClient"]),
        .executable(name: "paperboy", targets: ["paperboy"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.19"),
        // `swift package generate-documentation` (scripts/docs, the Swift Package Index); a command
        // plugin only: nothing of it is built into the products.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Property-based tests of the asset lifecycle's invariants; a test dependency only.
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    ],
    targets: [
        // What Glibc's Swift overlay does not show: syncfs(2), getrandom(2), and fork/exec with
        // PR_SET_PDEATHSIG for child processes (which Foundation's Process cannot do).
        .target(name: "CPaperboySystem", path: "Sources/CPaperboySystem"),
        // The core: library, store, transport contract, scheduler, delivery.
        .target(
            name: "Paperboy",
            dependencies: [
                "CPaperboySystem",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            ],
            path: "Sources/Paperboy",
            swiftSettings: swiftSettings
        ),
        // The framing shared by the transport protocol (helpers) and the daemon's client protocol.
        .target(name: "PaperboyFraming", path: "Sources/PaperboyFraming", swiftSettings: swiftSettings),
        // TOML configuration → typed values, with file:line errors.
        .target(
            name: "PaperboyConfig",
            dependencies: [
                "Paperboy",
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            path: "Sources/PaperboyConfig",
            swiftSettings: swiftSettings
        ),
        // Test helpers shipped to transport authors and apps.
        .target(
            name: "PaperboyTesting",
            dependencies: ["Paperboy", .product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/PaperboyTesting",
            swiftSettings: swiftSettings
        ),
        // The conformance suite's checks, without Swift Testing: `paperboy conformance` runs them.
        .target(
            name: "PaperboyConformance",
            dependencies: ["Paperboy", "PaperboyTesting", .product(name: "Logging", package: "swift-log")],
            path: "Sources/PaperboyConformance",
            swiftSettings: swiftSettings
        ),
        // The conformance suite every transport runs from its own tests (Swift Testing issues).
        .target(
            name: "PaperboyTransportTesting",
            dependencies: ["PaperboyConformance"],
            path: "Sources/PaperboyTransportTesting",
            swiftSettings: swiftSettings
        ),
        // Transports.
        .target(
            name: "PaperboyFile",
            dependencies: ["Paperboy"],
            path: "Plugins/File/PaperboyFile",
            swiftSettings: swiftSettings
        ),
        // libcurl, with typed wrappers for its variadic calls.
        .systemLibrary(
            name: "CPaperboyCurl",
            path: "Plugins/HTTP/CPaperboyCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .target(
            name: "PaperboyHTTP",
            dependencies: ["Paperboy", "CPaperboyCurl", "CPaperboySystem", .product(name: "Logging", package: "swift-log")],
            path: "Plugins/HTTP/PaperboyHTTP",
            swiftSettings: swiftSettings
        ),
        // libssh2, with wrappers for its function-like macros.
        .systemLibrary(
            name: "CPaperboySSH2",
            path: "Plugins/SFTP/CPaperboySSH2",
            pkgConfig: "libssh2",
            providers: [.apt(["libssh2-1-dev"])]
        ),
        .target(
            name: "PaperboySFTP",
            dependencies: ["Paperboy", "CPaperboySSH2"],
            path: "Plugins/SFTP/PaperboySFTP",
            swiftSettings: swiftSettings
        ),
        // Out-of-process transports: helper executables speaking the transport protocol.
        .target(
            name: "PaperboyExec",
            dependencies: ["Paperboy", "PaperboyFraming", "CPaperboySystem", .product(name: "Logging", package: "swift-log")],
            path: "Plugins/Exec/PaperboyExec",
            swiftSettings: swiftSettings
        ),
        // The daemon's client protocol as typed values (requests, replies, events), its checks and
        // refusals, and the socket both ends trust: what the daemon and its clients share.
        .target(
            name: "PaperboyWire",
            dependencies: ["Paperboy", "PaperboyFraming"],
            path: "Sources/PaperboyWire",
            swiftSettings: swiftSettings
        ),
        // `paperboy daemon`'s server: serving the protocol, the socket, deliveries waiting for clients.
        .target(
            name: "PaperboyDaemon",
            dependencies: ["Paperboy", "PaperboyFraming", "PaperboyWire", .product(name: "Logging", package: "swift-log")],
            path: "Sources/PaperboyDaemon",
            swiftSettings: swiftSettings
        ),
        // Apps talking to `paperboy daemon`, with the shape of the in-process Library.
        .target(
            name: "PaperboyClient",
            dependencies: ["Paperboy", "PaperboyWire", "PaperboyFraming"],
            path: "Sources/PaperboyClient",
            swiftSettings: swiftSettings
        ),
        // The command-line tool.
        .executableTarget(
            name: "paperboy",
            dependencies: [
                "Paperboy", "PaperboyConfig", "PaperboyFile", "PaperboyHTTP", "PaperboyExec", "PaperboySFTP",
                "PaperboyConformance", "PaperboyDaemon", "PaperboyWire", "PaperboyClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/paperboy",
            swiftSettings: swiftSettings
        ),
        // Examples compile in CI.
        .executableTarget(
            name: "EmbeddingExample",
            dependencies: ["Paperboy", "PaperboyFile"],
            path: "Examples/Embedding",
            swiftSettings: swiftSettings
        ),
        // The same app on `paperboy daemon`, through PaperboyClient.
        .executableTarget(
            name: "DaemonEmbeddingExample",
            dependencies: ["Paperboy", "PaperboyClient"],
            path: "Examples/DaemonEmbedding",
            swiftSettings: swiftSettings
        ),
        // An in-process transport written as a third party would: entries of local tar archives.
        .target(
            name: "TarTransportExample",
            dependencies: ["Paperboy"],
            path: "Examples/TarTransport",
            swiftSettings: swiftSettings
        ),
        // An app killed inside its delegate's didFinish, for the at-least-once test.
        .executableTarget(
            name: "CallbackKillApp",
            dependencies: ["Paperboy", "PaperboyFile"],
            path: "Tests/CallbackKillApp",
            swiftSettings: swiftSettings
        ),
        // The library behaviour suite's first lives (what a library does before it is killed),
        // shared by the suite and the app it kills.
        .target(
            name: "BehaviourLives",
            dependencies: ["Paperboy"],
            path: "Tests/BehaviourLives",
            swiftSettings: swiftSettings
        ),
        // A library in a process of its own, killed with SIGKILL by the behaviour suite.
        .executableTarget(
            name: "BehaviourKillApp",
            dependencies: ["Paperboy", "PaperboyFile", "PaperboyHTTP", "BehaviourLives"],
            path: "Tests/BehaviourKillApp",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyTests",
            dependencies: [
                "Paperboy", "PaperboyTesting", "PaperboyTestServers", "CallbackKillApp",
                .product(name: "ZIPFoundation", package: "ZIPFoundation"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            path: "Tests/PaperboyTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyFileTests",
            dependencies: ["Paperboy", "PaperboyFile", "PaperboyTesting", "PaperboyTestServers"],
            path: "Tests/PaperboyFileTests",
            swiftSettings: swiftSettings
        ),
        // Loopback servers for tests: a scriptable fault-injecting HTTP server, an nginx launcher.
        .target(
            name: "PaperboyTestServers",
            dependencies: ["Paperboy", "PaperboyDaemon", "PaperboyWire", "PaperboyTesting", "CPaperboyTestSpawn", .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/PaperboyTestServers",
            swiftSettings: swiftSettings
        ),
        // posix_spawn's close-from and chdir actions, which Swift cannot see, for ChildProcess.
        .target(name: "CPaperboyTestSpawn", path: "Tests/CPaperboyTestSpawn"),
        .testTarget(
            name: "PaperboyHTTPTests",
            dependencies: ["Paperboy", "PaperboyHTTP", "PaperboyTesting", "PaperboyTestServers", "PaperboyTransportTesting"],
            path: "Tests/PaperboyHTTPTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboySFTPTests",
            dependencies: ["Paperboy", "PaperboySFTP", "PaperboyTesting", "PaperboyTransportTesting", "PaperboyTestServers"],
            path: "Tests/PaperboySFTPTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyConfigTests",
            dependencies: ["Paperboy", "PaperboyConfig", "PaperboyTesting"],
            path: "Tests/PaperboyConfigTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyCLITests",
            dependencies: ["paperboy", "PaperboyTesting", "PaperboyTestServers", "PaperboyClient", "PaperboyDaemon", "PaperboyWire", "PaperboyFraming"],
            path: "Tests/PaperboyCLITests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyTransportTestingTests",
            dependencies: ["Paperboy", "PaperboyFile", "PaperboyTransportTesting"],
            path: "Tests/PaperboyTransportTestingTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyExecTests",
            dependencies: ["Paperboy", "PaperboyExec", "PaperboyFraming", "PaperboyTesting"],
            path: "Tests/PaperboyExecTests",
            swiftSettings: swiftSettings
        ),
        // The framing, in process: round trips, reads cut anywhere, every malformed header, a seeded fuzz.
        .testTarget(
            name: "PaperboyFramingTests",
            dependencies: ["PaperboyFraming", "PaperboyTesting", "PaperboyTestServers"],
            path: "Tests/PaperboyFramingTests",
            swiftSettings: swiftSettings
        ),
        // The daemon's server in process, spoken to over a real Unix socket frame by frame.
        .testTarget(
            name: "PaperboyDaemonTests",
            dependencies: [
                "Paperboy", "PaperboyDaemon", "PaperboyWire", "PaperboyFraming", "PaperboyTesting", "PaperboyTestServers",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/PaperboyDaemonTests",
            swiftSettings: swiftSettings
        ),
        // PaperboyClient against the daemon's server in process.
        .testTarget(
            name: "PaperboyClientTests",
            dependencies: [
                "Paperboy", "PaperboyClient", "PaperboyDaemon", "PaperboyWire", "PaperboyFraming", "PaperboyTesting", "PaperboyTestServers",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/PaperboyClientTests",
            swiftSettings: swiftSettings
        ),
        // The library behaviour suite: the shared API of Library, Issue and AssetDownload,
        // every scenario run against each backend (in process; through a daemon).
        .testTarget(
            name: "LibraryBehaviourTests",
            dependencies: [
                "Paperboy", "PaperboyFile", "PaperboyHTTP", "PaperboyTesting", "PaperboyTestServers",
                "PaperboyClient", "PaperboyDaemon", "PaperboyWire", "BehaviourLives", "BehaviourKillApp", "paperboy",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/LibraryBehaviourTests",
            swiftSettings: swiftSettings
        ),
        // The examples, through the conformance suite (the Python helper via PaperboyExec); the
        // two embedding examples run (the daemon one against a daemon the test starts).
        .testTarget(
            name: "PaperboyExampleTests",
            dependencies: [
                "Paperboy", "PaperboyExec", "PaperboyTesting", "PaperboyTransportTesting", "TarTransportExample",
                "PaperboyTestServers", "EmbeddingExample", "DaemonEmbeddingExample", "paperboy", "PaperboyFile",
            ],
            path: "Tests/PaperboyExampleTests",
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
