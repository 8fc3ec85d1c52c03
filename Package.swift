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
        .library(name: "PaperboyConfig", targets: ["PaperboyConfig"]),
        .library(name: "PaperboyTesting", targets: ["PaperboyTesting"]),
        .executable(name: "paperboy", targets: ["paperboy"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
    ],
    targets: [
        // syncfs(2), which Glibc's Swift overlay does not show.
        .target(name: "CPaperboySystem", path: "Sources/CPaperboySystem"),
        // The core: library, store, transport contract, scheduler, delivery.
        .target(
            name: "Paperboy",
            dependencies: [
                "CPaperboySystem",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/Paperboy",
            swiftSettings: swiftSettings
        ),
        // TOML configuration → typed values, with file:line errors.
        .target(
            name: "PaperboyConfig",
            dependencies: [
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
        // Transports.
        .target(
            name: "PaperboyFile",
            dependencies: ["Paperboy"],
            path: "Plugins/File/PaperboyFile",
            swiftSettings: swiftSettings
        ),
        // The command-line tool.
        .executableTarget(
            name: "paperboy",
            dependencies: [
                "Paperboy", "PaperboyConfig", "PaperboyFile",
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
        .testTarget(
            name: "PaperboyTests",
            dependencies: ["Paperboy", "PaperboyTesting"],
            path: "Tests/PaperboyTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyFileTests",
            dependencies: ["Paperboy", "PaperboyFile", "PaperboyTesting"],
            path: "Tests/PaperboyFileTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyConfigTests",
            dependencies: ["PaperboyConfig"],
            path: "Tests/PaperboyConfigTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyCLITests",
            dependencies: ["paperboy", "PaperboyTesting"],
            path: "Tests/PaperboyCLITests",
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
