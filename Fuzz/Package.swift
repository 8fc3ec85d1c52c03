// swift-tools-version: 6.0
// The fuzz targets (libFuzzer), one executable per parser of outside input. A package of its own,
// so the root package's build, flags and dependencies stay as they are: `scripts/fuzz` builds it
// with `-sanitize=fuzzer`, which instruments every Swift module, Paperboy's included.
import Foundation
import PackageDescription

// The targets call the entry points their doors call. Some have `package` or internal access, and
// `package` does not reach another package (SwiftPM's own `-package-name` wins over a target's), so
// those targets use `@testable import`: a debug build compiles every module with `-enable-testing`.
let rootFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

let settings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

/// One fuzz target: `Sources/<name>/<name>.swift`, with the root package's products it calls.
func fuzzTarget(_ name: String, _ products: [String]) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + products.map { .product(name: $0, package: rootFolder.lastPathComponent.lowercased()) },
        path: "Sources/\(name)",
        swiftSettings: settings
    )
}

let package = Package(
    name: "PaperboyFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(path: "..")],
    targets: [
        // libFuzzer's driver, declared for Swift.
        .target(name: "CFuzzDriver", path: "Sources/CFuzzDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzDriver"], path: "Sources/FuzzSupport", swiftSettings: settings),
        fuzzTarget("FuzzFrame", ["PaperboyDaemon", "PaperboyWire"]),
        fuzzTarget("FuzzCatalog", ["PaperboyConfig", "Paperboy"]),
        fuzzTarget("FuzzConfig", ["PaperboyConfig"]),
        fuzzTarget("FuzzURLScope", ["Paperboy"]),
        fuzzTarget("FuzzPush", ["Paperboy"]),
        fuzzTarget("FuzzDaemon", ["PaperboyDaemon", "PaperboyWire"]),
        fuzzTarget("FuzzReply", ["PaperboyClient", "PaperboyWire"]),
        fuzzTarget("FuzzHeaders", ["PaperboyHTTP"]),
        fuzzTarget("FuzzArchive", ["Paperboy"]),
        fuzzTarget("FuzzJSON", ["Paperboy"]),
        fuzzTarget("FuzzChunkIndex", ["Paperboy"]),
        fuzzTarget("FuzzZsync", ["Paperboy"]),
    ],
    swiftLanguageModes: [.v6]
)
