// swift-tools-version: 6.0
// The floor of 1,000 small files through Paperboy's own HTTP transport, without the library
// (docs/Benchmarks.md, "HTTP"). A package of its own, so the root package's build stays as it is:
//   swift build -c release --package-path Benchmarks/http/floor
//   Benchmarks/http/floor/.build/release/floor URLS_FILE OUTPUT_FOLDER
import Foundation
import PackageDescription

let rootFolder = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

let package = Package(
    name: "PaperboyHTTPFloor",
    platforms: [.macOS(.v14)],
    dependencies: [.package(path: "../../..")],
    targets: [
        .executableTarget(
            name: "floor",
            dependencies: ["Paperboy", "PaperboyHTTP"].map { .product(name: $0, package: rootFolder.lastPathComponent.lowercased()) },
            path: "Sources/floor"
        ),
    ]
)
