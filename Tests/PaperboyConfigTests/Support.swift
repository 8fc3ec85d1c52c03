import Foundation

/// A fresh, empty folder under the system's temporary directory.
func makeTemporaryFolder() throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("paperboy-config-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A configuration file location that need not exist.
let fixtureFile = URL(fileURLWithPath: "/srv/paperboy/paperboy.toml")

/// An environment with a home folder and nothing else.
let fixtureEnvironment = ["HOME": "/home/reader"]
